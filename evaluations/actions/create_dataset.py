"""CreateDataset: an Editor starts a new, empty dataset that they own (admin and API).

The owner is the acting user, never a field of the request: the admin's form and the API's
serializer cannot put a dataset in someone else's name. A new dataset has no version; its first
draft is started with `CreateDraftDatasetVersion`.
"""

from django.core.exceptions import ValidationError

from evaluations.models import Dataset
from sherlock.core.actions import Action
from sherlock.core.audit import audit
from sherlock.core.errors import ActionDenied, ActionInvalid
from sherlock.core.limits import DESCRIPTION_MAX, NAME_MAX, SLUG_MAX, check_text

DATASET_FIELDS = ("slug", "name", "description")


class CreateDataset(Action):
    """Create a dataset owned by the acting user, audited as `evaluations.dataset.create`.

    Creating needs the global `evaluations.add_dataset` permission (the Editor and Admin
    roles): an Editor of one dataset edits that dataset, and does not found new ones."""

    def __init__(self, *, acting_user, slug, name, description=""):
        super().__init__(acting_user=acting_user)
        self.fields = {"slug": slug, "name": name, "description": description or ""}

    def check_limits(self):
        for name, maximum in (
            ("slug", SLUG_MAX),
            ("name", NAME_MAX),
            ("description", DESCRIPTION_MAX),
        ):
            check_text(name, self.fields[name], maximum)

    def check(self):
        user = self.acting_user
        if user is None or not user.is_active or not user.has_perm("evaluations.add_dataset"):
            raise ActionDenied("You may not create datasets (Editor role needed).")

    def perform(self):
        dataset = Dataset(owner=self.acting_user, **self.fields)
        try:
            dataset.full_clean()
        except ValidationError as exc:
            field, messages = next(iter(exc.message_dict.items()))
            raise ActionInvalid(f"{field}: {messages[0]}", field=field) from None
        dataset.save()
        audit(
            "evaluations.dataset.create",
            actor=self.acting_user,
            target=dataset,
            after={**self.fields, "owner": self.acting_user.get_username()},
        )
        return dataset
