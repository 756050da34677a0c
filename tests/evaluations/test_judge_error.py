"""The judge corrected by a random sample of human labels: the labelling queue's "sample for
calibration" mode draws results at random (the ranked queue's labels are kept apart, by their
source), and the calibration page shows the judge's bias, what its errors go with and the pass
rate corrected with PPI++ beside the judge-only and the labels-only rates."""

import pytest
from django.test import Client

from evaluations.choices import LabelSource
from evaluations.models import HumanLabel
from evaluations.reads.judge_error import judge_error
from evaluations.reads.label_queue import first_in_sample
from evaluations.stats import ppi_rate
from tests.support.labels import run_to_label


def _client(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def results(db):
    # 40 results the judge passed; people pass the first 30 of them and fail the last 10 (the
    # judge is lenient), and 20 the judge failed, people too. Outputs grow with the key.
    rows = [(f"p{n:02d}", "passed", 0.9, "", False) for n in range(40)]
    rows += [(f"f{n:02d}", "failed", 0.1, "", False) for n in range(20)]
    return run_to_label(rows)


def label(check_result, passed, source=LabelSource.SAMPLE):
    return HumanLabel.objects.create(
        check_result=check_result,
        passed=passed,
        calibration_key=check_result.check_config.calibration_key,
        source=source,
    )


def test_the_sample_draws_at_random_and_the_label_records_it(results, editor):
    check, made = results
    drawn = []
    item = first_in_sample(editor, [check.dataset_version.dataset], draw=lambda pks: drawn.append(
        sorted(pks)) or pks[0])  # fmt: skip
    assert drawn == [sorted(r.pk for r in made.values())]  # every result with a verdict
    client = _client(editor)
    page = client.get("/labels/?mode=sample").content.decode()
    assert "drawn at random for a calibration sample" in page
    assert 'name="mode" value="sample"' in page
    client.post("/labels/", {"result": item.pk, "verdict": "pass", "mode": "sample"})
    assert HumanLabel.objects.get(check_result=item).source == LabelSource.SAMPLE
    other = made["f00"]
    client.post("/labels/", {"result": other.pk, "verdict": "fail"})
    assert HumanLabel.objects.get(check_result=other).source == LabelSource.QUEUE
    # A result labelled through the ranked queue stays in the sample's draw; a sampled one not.
    keys = []
    first_in_sample(editor, [check.dataset_version.dataset], draw=lambda pks: keys.extend(pks)
                    or pks[0])  # fmt: skip
    assert other.pk in keys and item.pk not in keys


def test_the_calibration_page_corrects_the_judges_rate_with_the_sample(results, editor):
    check, made = results
    sample = [f"p{n:02d}" for n in range(0, 40, 2)] + [f"f{n:02d}" for n in range(0, 20, 2)]
    for key, result in made.items():  # the judge's errors (p30 on) are on the long answers
        long = key.startswith("p") and int(key[1:]) >= 30
        result.trial.transcript = {"output": "word " * (200 if long else 20 + int(key[1:]))}
        result.trial.save(update_fields=["transcript"])
    for key in sample:
        label(made[key], passed=key.startswith("p") and int(key[1:]) < 30)
    label(made["p31"], passed=False, source=LabelSource.QUEUE)  # ranked: not in the sample
    found = judge_error(check, list(HumanLabel.objects.select_related("check_result")))
    assert found.sample == 30 and (found.lenient, found.strict) == (5, 0)
    assert found.bias == pytest.approx(5 / 30)
    people = [key.startswith("p") and int(key[1:]) < 30 for key in sample]
    judged = [key.startswith("p") for key in sample]
    rest = [key.startswith("p") for key in sorted(made) if key not in sample]
    expected = ppi_rate(people, judged, rest)
    for name in ("rate", "low", "high", "weight"):
        assert getattr(found.corrected, name) == pytest.approx(getattr(expected, name))
    assert found.corrected.judge_rate == pytest.approx(40 / 60)
    r, p = found.length  # 30 labels: what the errors go with is measured
    assert r > 0.9 and p < 0.001

    html = _client(editor).get(f"/checks/{check.pk}/calibration/").content.decode()
    assert 'id="corrected"' in html and "corrected (PPI++)" in html
    assert f"{found.corrected.rate:.3f}" in html
    assert "30 such labels" in html and "its errors go with longer outputs" in html


def test_fewer_than_ten_sample_labels_say_what_is_missing(results, editor):
    check, made = results
    for key in ("p00", "p01", "f00"):
        label(made[key], passed=key.startswith("p"))
    html = _client(editor).get(f"/checks/{check.pk}/calibration/").content.decode()
    assert 'id="no-correction"' in html and "3 label(s) of a random sample" in html


def test_the_api_records_a_sample_label_and_refuses_an_unknown_source(results, editor):
    from tests.support.governance import api_client

    _, made = results
    api = api_client(editor)
    url = f"/api/v1/check-results/{made['p00'].pk}/label/"
    answer = api.post(url, {"passed": True, "source": "sample"}, format="json")
    assert answer.status_code == 201, answer.content
    assert HumanLabel.objects.get().source == LabelSource.SAMPLE
    answer = api.post(url, {"passed": True, "source": "guess"}, format="json")
    assert answer.status_code == 400 and answer.json()["field"] == "source"
