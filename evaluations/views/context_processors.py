"""What every page's navigation needs to know of the evaluations app: which links to offer.

A link is offered to whoever could do something behind it: the nav never sends a role to a page
that only says "nothing you may do here" (the pages still answer such a visit, with that)."""

from django.utils.functional import SimpleLazyObject

from agents.models import Agent
from evaluations.actions.schedule_fields import may_schedule_any
from evaluations.judge.setup import judges_docs_url
from evaluations.views.labels import editable_datasets
from sherlock.core.permissions import is_global_admin


def _signed_in(request):
    user = getattr(request, "user", None)
    return user if user is not None and user.is_authenticated else None


def _holds(user, perms, scoped):
    """A global grant of one of `perms` (no query: the permission cache the nav already reads),
    else the first scoped grant `scoped()` finds (one query)."""
    return any(user.has_perm(perm) for perm in perms) or scoped()


def navigation(request):
    """Lazy flags, so a page that does not render the nav costs no query:

    - `may_label`: the Labels page (the Editor role, global or on one dataset);
    - `may_schedule`: the Schedules page (an Editor of a dataset or a Builder of an agent, as
      `may_schedule_any` says);
    - `may_manage_people`: the People link (a global Admin: the Admin group's user rights);
    - `may_govern`: the Publish link (agent versions, each with its publish page): a Builder
      (requests publication), a Publisher or an Admin, of some agent;
    - `judges_docs`: the served docs/judges.md, where the no-judge sentence links."""

    def may_label():
        user = _signed_in(request)
        if user is None:
            return False

        return _holds(user, ["evaluations.edit_dataset"], editable_datasets(user).exists)

    def may_schedule():
        user = _signed_in(request)
        if user is None:
            return False

        perms = ["agents.build_agent", "evaluations.edit_dataset"]
        return _holds(user, perms, lambda: may_schedule_any(user))

    def may_govern():
        user = _signed_in(request)
        if user is None:
            return False
        # Imported here: guardian's shortcuts import its models, which exist only once the registry
        # is ready.
        from guardian.shortcuts import get_objects_for_user

        perms = [f"agents.{verb}_agent" for verb in ("build", "publish", "bypass")]

        def scoped():  # one query for the three verbs
            return get_objects_for_user(user, perms, klass=Agent, any_perm=True).exists()

        return _holds(user, perms, scoped)

    def judges_docs():

        return judges_docs_url()

    def may_manage_people():
        user = _signed_in(request)
        if user is None:
            return False
        # The People page is governance's, for global Admins: the kernel's one rule.
        return is_global_admin(user)

    return {
        # Where every "no judge configured" sentence links (docs/judges.md, served).
        "judges_docs": SimpleLazyObject(judges_docs),
        "may_manage_people": SimpleLazyObject(may_manage_people),
        "may_label": SimpleLazyObject(may_label),
        "may_schedule": SimpleLazyObject(may_schedule),
        "may_govern": SimpleLazyObject(may_govern),
    }
