"""Latencies that are no number JSON can carry: an adapter's answer `{"latency_ms": 1e400}`
parsed as infinity before latencies were bounded (docs/api.md, "Numbers"), and every read of
such a trial through the API answered 500. They become unknown (null), which is what they
were; a finite latency out of range is kept, and shown as it is."""

from django.db import migrations
from django.db.models import Q

# Past any finite double, so only infinities (and PostgreSQL's NaN, which sorts above them).
FINITE = 1.7976931348623157e308


def forget_infinities(apps, schema_editor):
    trial = apps.get_model("evaluations", "Trial")
    trial.objects.filter(Q(latency_ms__gt=FINITE) | Q(latency_ms__lt=-FINITE)).update(
        latency_ms=None
    )
    judge_call = apps.get_model("evaluations", "JudgeCall")
    judge_call.objects.filter(Q(latency_ms__gt=FINITE) | Q(latency_ms__lt=-FINITE)).update(
        latency_ms=0
    )


class Migration(migrations.Migration):
    dependencies = [("evaluations", "0014_number_bounds")]

    operations = [migrations.RunPython(forget_infinities, migrations.RunPython.noop)]
