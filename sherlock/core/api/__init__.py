"""What every app's API shares (bad input never reaches a 500), one module per job:

- `errors`: the one error shape (`ErrorSerializer`), the exception handler that turns domain
  errors and Django's and DRF's exceptions into it, `refusals` for `extend_schema`, and the
  answers of unrouted `/api/` paths (`not_found`, `server_error`);
- `parsers`: the body bounded before it is parsed (size, nesting, NUL, duplicate members);
- `serializers`: `RefuseUnknownFields` and `LeanRepresentation`, mixed into the apps' own;
- `filters`: list filtering (`ListFilterBackend`, `IdFilter`);
- `schema`: the OpenAPI schema's hooks (`document_errors`, `document_integer_range`).
"""
