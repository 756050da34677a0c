"""What several governance resources answer when refused."""

from sherlock.core.api.errors import refusals

REFUSED = refusals(400, 403, 404, 409, s400="Invalid input (e.g. a thin reason).")
