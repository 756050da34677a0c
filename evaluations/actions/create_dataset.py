"""CreateDataset: an Editor starts a new, empty dataset that they own (admin and API).

The owner is the acting user, never a field of the request: the admin's form and the API's
serializer cannot put a dataset in someone else's name. A new dataset has no version; its first
draft is started with `CreateDraftDatasetVersion`. Every path that makes a dataset writes it
with `create_owned_dataset` (this action, the trial import's external dataset, the demo seed),
so each has an owner and an `evaluations.dataset.create` entry.
"""

from django.core.exceptions import ValidationError

from evaluations.models import Dataset
from sherlock.core.actions import Action
from sherlock.core.audit import audit
from sherlock.core.errors import ActionDenied, ActionInvalid, raise_invalid
from sherlock.core.limits import DESCRIPTION_MAX, NAME_MAX, SLUG_MAX, check_text

DATASET_FIELDS = ("slug", "name", "description")


def create_owned_dataset(owner, *, actor, slug, name, description=""):
    """Validate and write a dataset owned by `owner`, audited as `evaluations.dataset.create`
    with `actor` (None: the system). The caller has checked that its actor may."""
    fields = {"slug": slug, "name": name, "description": description or ""}
    dataset = Dataset(owner=owner, **fields)
    try:
        dataset.full_clean()
    except ValidationError as exc:  # every field's error at once
        raise_invalid(
            ActionInvalid(f"{field}: {messages[0]}", field=field)
            for field, messages in exc.message_dict.items()
        )
    dataset.save()
    audit(
        "evaluations.dataset.create",
        actor=actor,
        target=dataset,
        after={**fields, "owner": owner.get_username() if owner is not None else None},
    )
    return dataset


class CreateDataset(Action):
    """Create a dataset owned by the acting user, audited as `evaluations.dataset.create`.

    Creating needs the global `evaluations.add_dataset` permission (the Editor and Admin
    roles): an Editor of one dataset edits that dataset, and does not found new ones."""

    noun = "dataset"
    verb = "create"

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
        return create_owned_dataset(self.acting_user, actor=self.acting_user, **self.fields)
