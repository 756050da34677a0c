"""Reading groups from an OIDC sign-in's claims and matching them to the mapping's rules.

Pure functions over plain data (the tests call them directly): the claims are the ID token's
merged with the userinfo answer's (userinfo wins, as the fresher of the two), and a claim path
is dotted (`realm_access.roles`: Keycloak's realm roles). A group claim must be a list of
strings; a single string is no groups, unless `SHERLOCK_SSO_GROUP_STRING` says it counts as a
list of one (a provider that sends its one group as a string, Google's `hd`): a
misconfigured provider sending "admins" where a list belongs must not grant a mapped role.
"""

from django.conf import settings


def merged_claims(extra_data):
    """The claims of one sign-in from allauth's `extra_data` ({"id_token", "userinfo"})."""
    extra_data = extra_data or {}
    return {**(extra_data.get("id_token") or {}), **(extra_data.get("userinfo") or {})}


def groups_at(claims, path, *, string_is_a_group=None):
    """The groups at the dotted `path` of `claims`, as a sorted list of strings. A string there
    is one group only when `string_is_a_group` (default: `SHERLOCK_SSO_GROUP_STRING`)."""
    if string_is_a_group is None:
        string_is_a_group = settings.SHERLOCK_SSO_GROUP_STRING
    value = claims
    for part in (path or "").split("."):
        if not isinstance(value, dict) or part not in value:
            return []
        value = value[part]
    if isinstance(value, str) and string_is_a_group:
        value = [value]
    if not isinstance(value, list):
        return []
    return sorted({item for item in value if isinstance(item, str) and item})


def matching_rules(rules, groups):
    """The rules (anything with `.group`) whose group the user is in."""
    held = set(groups)
    return [rule for rule in rules if rule.group in held]


def evidence(claims, path, groups):
    """What an audit entry keeps of the claims that caused a role change: the issuer, the
    subject and the groups claim (never the whole token)."""
    return {
        "iss": claims.get("iss"),
        "sub": claims.get("sub"),
        "claim_path": path,
        "groups": groups,
    }
