"""Import a dotted path only when the operator allows it.

Agent configs (Builders) and verifiers (Editors, Builders) name Python callables that run with
Sherlock's own rights in the workers, and importing a module already runs its code. So a path
is checked against an allowlist from the settings (`pkg.mod.fn` exactly, or `pkg.mod.` for all
under it) before anything is imported.
"""

from collections.abc import Callable, Iterable
from typing import Any, cast

from django.conf import settings
from django.utils.module_loading import import_string


def is_allowed(path: str, allowlist: Iterable[str]) -> bool:
    return any(
        path == entry or (entry.endswith(".") and path.startswith(entry)) for entry in allowlist
    )


def import_allowed(path: Any, setting: str) -> Callable[..., Any]:
    """The callable at `path`, if `settings.<setting>` allows it; ValueError says why not."""
    if not isinstance(path, str) or not path:
        raise ValueError("must be a dotted path, e.g. pkg.module.fn")
    if not is_allowed(path, getattr(settings, setting)):
        raise ValueError(f"{path!r} is not allowed ({setting} lists the ones that are)")
    try:
        fn = import_string(path)
    except ImportError as exc:
        raise ValueError(f"cannot import {path!r}: {exc}") from None
    if not callable(fn):
        raise ValueError(f"{path!r} is not callable")
    return cast(Callable[..., Any], fn)
