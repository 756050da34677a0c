"""Reading groups from an OIDC sign-in's claims and matching them to the mapping's rules.

Pure functions over plain data (the tests call them directly): the claims are the ID token's
merged with the userinfo answer's (userinfo wins, as the fresher of the two), and a claim path
is dotted (`realm_access.roles`: Keycloak's realm roles). A group claim that is a string (one
group) counts as a list of one; anything else is no groups.
"""


def merged_claims(extra_data):
    """The claims of one sign-in from allauth's `extra_data` ({"id_token", "userinfo"})."""
    extra_data = extra_data or {}
    return {**(extra_data.get("id_token") or {}), **(extra_data.get("userinfo") or {})}


def groups_at(claims, path):
    """The groups at the dotted `path` of `claims`, as a sorted list of strings."""
    value = claims
    for part in (path or "").split("."):
        if not isinstance(value, dict) or part not in value:
            return []
        value = value[part]
    if isinstance(value, str):
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
