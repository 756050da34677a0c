"""Management commands whose exit code is a verdict CI reads (`gate`, `evaluate`).

Exit 0 passed and 1 failed are verdicts and nothing else; so any failure that is not a
deliberate outcome (a database that is down, a bug) exits `ERROR` (2) with one line on stderr
instead of a traceback.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandError

ERROR = 2


class VerdictCommand(BaseCommand):
    def execute(self, *args: Any, **options: Any) -> str | None:
        try:
            return super().execute(*args, **options)
        except CommandError:
            raise
        except Exception as exc:
            message = " ".join(str(exc).split()) or "no message"
            raise CommandError(
                f"unexpected error, no verdict: {type(exc).__name__}: {message}"[:500],
                returncode=ERROR,
            ) from exc
