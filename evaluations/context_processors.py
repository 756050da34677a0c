"""What every page's navigation needs to know of the evaluations app."""

from django.utils.functional import SimpleLazyObject


def navigation(request):
    """`may_label`: whether the nav links the Labels page (the Editor role, global or on one
    dataset). Lazy, so a page that does not render the nav costs no query; a global Editor
    costs none either (the permission cache the nav already reads)."""

    def may_label():
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return False
        if user.has_perm("evaluations.edit_dataset"):
            return True
        from evaluations.views_labels import editable_datasets

        return editable_datasets(user).exists()

    return {"may_label": SimpleLazyObject(may_label)}
