"""Both ways a check is scored: `evaluate` (the judge's blocking `ask`) and `aevaluate` on an
event loop (the run engine's shards, the judge's `aask`).

A module that marks itself `pytestmark = pytest.mark.usefixtures("both_paths")` runs each of
its tests twice: once as written, and once with its module-level `evaluate` (the library's
entry point it imported) swapped for `aevaluate` awaited on a loop, so the model checks must
give the same verdicts, calls and reasons on both paths.
"""

import asyncio

import pytest

from evaluations.checks import aevaluate


def _on_a_loop(kind, params, case, transcript, judge=None):
    return asyncio.run(aevaluate(kind, params, case, transcript, judge))


@pytest.fixture(params=["evaluate", "aevaluate"])
def both_paths(request, monkeypatch):
    if request.param == "aevaluate":
        monkeypatch.setattr(request.module, "evaluate", _on_a_loop)
    return request.param
