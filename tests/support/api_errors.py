"""What the bad-input tests of every endpoint family share: the operations of the
served schema (so an endpoint added later is covered without a new test), their URLs filled
with seeded objects, the one error shape, and a count of every row so "nothing written" is a
comparison."""

import re

from django.apps import apps
from drf_spectacular.generators import SchemaGenerator

ERROR_KEYS = {"detail", "code", "field", "errors"}
FAMILIES = ("agents", "evaluations", "governance", "production")
LONG_ECHO = 2_000  # bytes: an answer longer than this echoes input


def schema():
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(with_body=None):
    """`(method, path)` of every operation of the schema; only those taking a JSON body when
    `with_body`, only those naming an object in their path when `with_body` is False."""
    document = schema()
    found = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            body = operation.get("requestBody", {}).get("content", {})
            if with_body and "application/json" not in body:
                continue
            if with_body is False and "{" not in path:
                continue
            found.append((method, path))
    return found


def request_properties(method, path):
    """The JSON body's properties of one operation, its components resolved."""
    document = schema()
    body = document["paths"][path][method]["requestBody"]["content"]["application/json"]
    shape = body["schema"]
    if "$ref" in shape:
        shape = document["components"]["schemas"][shape["$ref"].rsplit("/", 1)[1]]
    return shape.get("properties", {})


def url_of(path, seeded, value=None):
    """`path` with its parameters naming seeded objects, or all set to `value`."""
    segment = path.removeprefix("/api/v1/").split("/")[0]
    names = seeded.get(segment, {})
    return re.sub(
        r"\{(\w+)\}", lambda m: str(value if value is not None else names[m.group(1)]), path
    )


def rows():
    """How many rows every model of the apps holds: equal before and after = nothing written.
    Refusal entries of the audit log are left out: a refused attempt is recorded,
    which writes nothing of the caller's input."""
    counts = {
        model._meta.label: model.objects.count()
        for name in FAMILIES
        for model in apps.get_app_config(name).get_models()
    }
    entries = apps.get_model("governance", "AuditEntry").objects
    counts["governance.AuditEntry"] = entries.exclude(action__endswith=".refused").count()
    return counts


def assert_error_shape(response, status=None):
    """`response` answers in the one error shape, without echoing its input."""
    if status is not None:
        assert response.status_code == status, response.content[:500]
    assert 400 <= response.status_code < 500, response.content[:500]
    assert response["Content-Type"].startswith("application/json")
    assert len(response.content) < LONG_ECHO, response.content[:500]
    body = response.json()
    assert set(body) <= ERROR_KEYS and {"detail", "code"} <= set(body), body
    assert isinstance(body["detail"], str) and isinstance(body["code"], str)
    for item in body.get("errors", []):
        assert set(item) <= {"detail", "code", "field", "line"}, item
    return body
