"""The lean read path of the API answers what DRF's own does, byte for byte: the
serializers' `LeanRepresentation` (fields built once per class, attributes read by path, values
that represent as themselves not converted) against DRF's `to_representation` and `get_fields`,
on runs, trials and audit entries with nulls, decimals and date-times; and on a serializer made
to reach every fallback (a default, a null on the way, a skipped field, a method, a mapping).
The filter backend runs on lists only: a detail answers the object its URL names."""

from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer

from evaluations.models import Run, Trial
from governance.models import AuditEntry
from sherlock.core.api.serializers import LeanRepresentation
from tests.support import factories
from tests.support.governance import api_client
from tests.support.schedules import SHAPE


def drf_own(monkeypatch):
    """Make every lean serializer represent as plain DRF does (the next class in its MRO)."""
    monkeypatch.setattr(
        LeanRepresentation,
        "to_representation",
        lambda self, instance: super(LeanRepresentation, self).to_representation(instance),
    )
    monkeypatch.setattr(
        LeanRepresentation,
        "get_fields",
        lambda self: super(LeanRepresentation, self).get_fields(),
    )


@pytest.fixture
def varied(builder, django_capture_on_commit_callbacks):
    """Two runs (one with no requester, no start, unpriced calls), their trials (one with no cost
    and no finish), audit entries."""
    version = factories.agent_version()
    dataset_version = factories.dataset_version(
        cases=[("c1", "hi", {}), ("c2", "yo", {})], checks=[SHAPE]
    )
    runs = [
        factories.start_run(builder, version, dataset_version, django_capture_on_commit_callbacks)
        for _ in range(2)
    ]
    Run.objects.filter(pk=runs[0].pk).update(
        requested_by=None, started_at=None, unpriced_calls=3, spend_usd=Decimal("0.1234567")
    )
    trial = Trial.objects.filter(run=runs[1]).first()
    Trial.objects.filter(pk=trial.pk).update(cost_usd=None, finished_at=None, latency_ms=12.5)
    for number in range(3):
        AuditEntry.objects.append(
            "evaluations.case.update", target=("evaluations.case", number, "")
        )
    return runs, trial


def answers(client, runs, trial):
    entry = AuditEntry.objects.order_by("-sequence").first().sequence
    urls = [
        "/api/v1/runs/",
        *(f"/api/v1/runs/{run.pk}/" for run in runs),
        f"/api/v1/trials/?run={runs[1].pk}",
        "/api/v1/trials/",
        f"/api/v1/trials/{trial.pk}/",
        "/api/v1/audit/",
        f"/api/v1/audit/{entry}/",
    ]
    return {url: client.get(url).content for url in urls}


def test_runs_trials_and_the_audit_log_answer_drfs_own_bytes(
    admin_user, varied, monkeypatch, settings
):
    settings.SHERLOCK_API_AUTH_CACHE_SECONDS = 0
    client = api_client(admin_user)
    lean = answers(client, *varied)
    drf_own(monkeypatch)
    own = answers(client, *varied)
    assert lean == own
    assert b'"requested_by":null' in lean["/api/v1/runs/"]
    assert b'"cost_usd":null' in lean[f"/api/v1/trials/{varied[1].pk}/"]


class Owner:
    def __init__(self, name):
        self.name = name


class Thing:
    """Attributes of every kind a field may meet."""

    def __init__(self, owner):
        self.count = 3
        self.flag = True
        self.ratio = 0.5
        self.owner = owner
        self.when = timezone.now()
        self.data = {"a": [1, 2]}
        self.price = Decimal("1.5")
        self.count_as_bool = True  # a bool in an IntegerField: DRF says 1, not true

    def shout(self):
        return "HI"


class ThingSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    count_as_bool = serializers.IntegerField()
    flag = serializers.BooleanField()
    ratio = serializers.FloatField()
    owner_name = serializers.CharField(source="owner.name", allow_null=True)
    owner_default = serializers.CharField(source="owner.nickname", default="none")
    skipped = serializers.CharField(source="owner.missing", required=False)
    when = serializers.DateTimeField()
    data = serializers.JSONField()
    price = serializers.DecimalField(max_digits=5, decimal_places=2)
    shout = serializers.CharField()
    everything = serializers.SerializerMethodField()

    def get_everything(self, thing) -> int:
        return thing["count"] if isinstance(thing, dict) else thing.count


class LeanThingSerializer(LeanRepresentation, ThingSerializer):
    pass


def rendered(data):
    """As the API sends it: `True == 1` in Python, not in JSON."""
    return JSONRenderer().render(data)


@pytest.mark.parametrize("owner", [Owner("ann"), None], ids=["owner", "no owner"])
def test_every_fallback_answers_as_drf_does(owner):
    things = [Thing(owner), Thing(owner)]
    lean = LeanThingSerializer(things, many=True).data
    assert rendered(lean) == rendered(ThingSerializer(things, many=True).data)
    assert b'"count_as_bool":1' in rendered(lean) and lean[0]["shout"] == "HI"
    assert ("skipped" in lean[0]) is False
    as_mapping = {"count": 1, "count_as_bool": 0, "flag": False, "ratio": 1.0, "owner": None}
    as_mapping |= {"when": None, "data": None, "price": None, "shout": "x"}
    assert rendered(LeanThingSerializer(as_mapping).data) == rendered(
        ThingSerializer(as_mapping).data
    )


def test_a_detail_answers_the_object_its_url_names_whatever_the_query_string_says(builder, varied):
    runs, _ = varied
    client = api_client(builder)
    assert client.get(f"/api/v1/runs/{runs[0].pk}/?status=failed").status_code == 200
    # A list still filters.
    assert client.get("/api/v1/runs/?status=failed").json()["results"] == []
    assert client.get("/api/v1/runs/?status=nonsense").status_code == 400
    assert len(client.get("/api/v1/runs/?page=1").json()["results"]) == 2
