"""What makes a bypass void: the rules shared by approving and using one (DESIGN 10.4)."""

from django.utils import timezone


def void_reason(bypass, publish_request, agent_version, *, now=None):
    """Why `bypass` cannot override `publish_request`'s decision for `agent_version`, or "".

    A bypass overrides one decision about one configuration: if the request was decided again
    or the version's config hash moved, it speaks about something else and is void. It also
    expires (policy `bypass_expiry_hours`).
    """
    now = now or timezone.now()
    if bypass.expires_at <= now:
        return f"The bypass expired at {bypass.expires_at:%Y-%m-%d %H:%M} UTC."
    if bypass.publish_request_id != publish_request.pk:
        return "The bypass belongs to another publish request."
    if bypass.decision != publish_request.decision:
        return "The decision changed since the bypass was given; the bypass is void."
    if bypass.config_hash != agent_version.config_hash:
        return "The version's configuration changed since the bypass was given; it is void."
    return ""
