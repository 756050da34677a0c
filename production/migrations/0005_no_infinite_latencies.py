"""A trace's latency that no JSON can carry (infinity) becomes unknown: see evaluations'
migration 0015."""

from django.db import migrations
from django.db.models import Q

FINITE = 1.7976931348623157e308


def forget_infinities(apps, schema_editor):
    trace = apps.get_model("production", "Trace")
    trace.objects.filter(Q(latency_ms__gt=FINITE) | Q(latency_ms__lt=-FINITE)).update(
        latency_ms=None
    )


class Migration(migrations.Migration):
    dependencies = [("production", "0004_money_bounds")]

    operations = [migrations.RunPython(forget_infinities, migrations.RunPython.noop)]
