"""The admin's login URL (`/admin/login/`), where the admin sends whoever it does not let in.

Someone signed out is sent on to Sherlock's sign-in page with the `next` they came with.
Someone signed in was sent here because no role grant of theirs uses the admin (`is_staff` is
derived from the grants, `governance.people.roles.derive_staff`): the sign-in page would send them
straight back to the admin, which sends them here again, a redirect loop the browser ends with
"too many redirects". They get the 403 page saying why, and who changes it.
"""

from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect

NO_ADMIN_ROLE = (
    "The admin is for people whose roles use it (Editor, Builder, Publisher or Admin), "
    "and you hold none: an Admin grants roles on the People page"
)


def admin_login(request):
    if request.user.is_authenticated and not request.user.is_staff:
        raise PermissionDenied(NO_ADMIN_ROLE)
    query = request.META.get("QUERY_STRING", "")
    return redirect("/accounts/login/" + (f"?{query}" if query else ""))
