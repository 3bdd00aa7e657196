"""A long-running server process's heap, settled once before it serves.

A search allocates thousands of short-lived objects (candidate chunks, scores, JSON). With
CPython's default collector settings each search set off several young-generation
collections, and every older-generation one walked the whole heap the process built at
startup: modules, schemas, the container, the pools, none of which ever become garbage.
So the startup heap is collected once and frozen (``gc.freeze``: out of every later
collection's walk), and the young generation is collected every ``YOUNG_THRESHOLD``
allocations rather than 700. Only for a process that serves: the library and the CLI keep
the interpreter's defaults.
"""

from __future__ import annotations

import gc
import importlib
import logging

from codebase_mcp_search.entrypoints.container import preload

log = logging.getLogger("codebase_mcp")

YOUNG_THRESHOLD = 10_000
# What fastmcp imports on a process's first tool call (its session-state store): imported
# here, so the first call does not pay for it and the modules are frozen with the rest.
FIRST_CALL_IMPORTS = ("key_value.aio.adapters.pydantic", "key_value.aio.stores.memory")


def settle_heap() -> None:
    """Import what the first call would (fastmcp's, and the adapters: ``container.preload``),
    collect, freeze the heap, raise the young generation's threshold (never lowering a
    threshold set higher already)."""
    preload()
    for name in FIRST_CALL_IMPORTS:
        try:
            importlib.import_module(name)
        except ImportError:  # another fastmcp version: its first call pays, nothing else
            log.debug("no module %s to import ahead of the first call", name)
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)
