"""The attestations' public side: the keys that verify them, at a well-known URL anyone may
read, and one attestation's envelope as a file (for who may see the version)."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from agents.models import AgentVersion
from governance.models import Attestation, AttestationKey
from sherlock.core.hidden import visible_or_404


@require_GET
def attestation_keys(request: HttpRequest) -> JsonResponse:
    """`/.well-known/sherlock/attestation-keys.json`: every public key attestations were
    signed with, newest first, each with its key id and the window it was in use; a rotated key
    stays listed, so what it signed still verifies. No sign-in: a public key is public."""
    keys = [
        {
            "keyid": key.keyid,
            "keytype": "ed25519",
            "public_key": key.public_key,
            "not_before": key.not_before.isoformat(),
            "not_after": key.not_after.isoformat() if key.not_after else None,
        }
        for key in AttestationKey.objects.all()
    ]
    return JsonResponse({"keys": keys})


@login_required
@require_GET
def attestation_file(request: HttpRequest, pk: int, attestation: int) -> JsonResponse:
    """One attestation's DSSE envelope, as a file a deploy step or an auditor keeps."""
    version = visible_or_404(request, AgentVersion.objects.for_user(request.user), pk=pk)
    found = visible_or_404(
        request, Attestation.objects.filter(agent_version=version), pk=attestation
    )
    response = JsonResponse(found.envelope, json_dumps_params={"indent": 2})
    name = f"{version.agent.slug}-v{version.number}-{found.event}-{found.pk}.intoto.json"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
