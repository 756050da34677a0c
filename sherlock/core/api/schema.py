"""What the OpenAPI schema says of every operation (drf-spectacular postprocessing hooks): its
error answers in the one shape (`document_errors`) and the bounds of every integer parameter
(`document_integer_range`)."""

from typing import Any

from sherlock.core.api.errors import REFUSAL_TEXT
from sherlock.core.api.filters import INT64

ERROR_REF = {"$ref": "#/components/schemas/Error"}


def document_integer_range(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: an integer path or query parameter without bounds
    of its own is a 64-bit signed integer (`INT64`), the range of the database's columns; a
    value beyond it answers 400 (a filter, `IdFilter`) or 404 (an id in the path), so a client
    and a fuzzer know where the boundary lies."""
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                if parameter.get("in") in ("path", "query") and schema.get("type") == "integer":
                    for key, value in INT64.items():
                        schema.setdefault(key, value)
    return result


def document_errors(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: every operation documents the error answers it may
    give, in the `Error` shape: 401, 403 and 429 always, 404 when its path names an object
    or it has pages, 409 when it changes something, 400 when it takes a body or query
    parameters, 413 and 415 when it takes a body. An operation's own description is kept."""
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            parameters = operation.get("parameters", [])
            statuses = [401, 403, 429]
            # A page past the last, or a cursor that is not one, is a 404 too (DRF's pagination).
            if any(
                p.get("in") == "path" or p.get("name") in ("page", "cursor") for p in parameters
            ):
                statuses.append(404)
            if method != "get":
                statuses.append(409)
            if "requestBody" in operation or any(p.get("in") == "query" for p in parameters):
                statuses.append(400)
            if "requestBody" in operation:
                statuses += [413, 415]
            responses = operation.setdefault("responses", {})
            for code in statuses:
                answer = responses.setdefault(str(code), {"description": REFUSAL_TEXT[code]})
                answer.setdefault("content", {"application/json": {"schema": ERROR_REF}})
    return result
