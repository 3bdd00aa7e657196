"""The serving process's heap settling, run in a fresh interpreter (it changes the collector's
settings for the whole process)."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import gc, json, sys
gc.set_threshold(700, 10, 10)
before = gc.get_freeze_count()
from codebase_mcp_search.entrypoints.mcp.gc_settings import FIRST_CALL_IMPORTS, YOUNG_THRESHOLD, settle_heap
settle_heap()
first = gc.get_threshold()
gc.set_threshold(50_000, 10, 10)
settle_heap()
print(json.dumps({
    "before": before,
    "frozen": gc.get_freeze_count(),
    "first": first,
    "again": gc.get_threshold(),
    "young": YOUNG_THRESHOLD,
    "imported": all(name in sys.modules for name in FIRST_CALL_IMPORTS),
}))
"""


def test_settling_freezes_the_startup_heap_and_collects_young_objects_less_often() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True, timeout=120
    )
    seen = json.loads(out.stdout)
    assert seen["before"] == 0 and seen["frozen"] > 10_000
    assert seen["first"] == [seen["young"], 10, 10]
    assert seen["again"] == [50_000, 10, 10]  # a higher threshold is kept
    assert seen["imported"]
