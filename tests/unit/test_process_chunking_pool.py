"""ProcessChunkingPool specifics: spawned workers skip the parent's main module, and a lost
worker's batch is chunked in this process (what every pool does: tests/contract)."""

from __future__ import annotations

import os
import signal
import sys

from codebase_mcp_search.adapters.workers import ProcessChunkingPool
from codebase_mcp_search.adapters.workers.pool import ProcessChunkingRun, _process_pool
from codebase_mcp_search.core.chunking import chunk_files
from codebase_mcp_search.core.models import ScanEntry, sha256_hex
from tests.unit.indexing_doubles import CHUNKER, FILES, TOKENS


def _imported_the_parents_main() -> bool:
    # spawn's prepare() runs the parent's main module (by path or by name) as __mp_main__; a
    # worker's own __main__ (python -c) has neither a file nor a spec.
    main = sys.modules["__mp_main__"]
    return getattr(main, "__file__", None) is not None or main.__spec__ is not None


def test_chunking_workers_do_not_import_the_parents_main_module() -> None:
    # Here __main__ is pytest's runner: a worker importing it pays for the whole application.
    pool = _process_pool(2, CHUNKER, TOKENS)
    try:
        assert [pool.submit(_imported_the_parents_main).result() for _ in range(4)] == [False] * 4
        assert sys.modules["__main__"].__dict__.get("__file__")  # given back to this process
    finally:
        pool.shutdown()


def _texts() -> list[tuple[ScanEntry, str]]:
    return [
        (
            ScanEntry(
                path=path,
                language="python" if path.endswith(".py") else None,
                content_hash=sha256_hex(text),
                size=len(text.encode()),
            ),
            text,
        )
        for path, text in FILES.items()
    ]


async def test_a_killed_worker_s_batch_is_chunked_in_this_process() -> None:
    run = ProcessChunkingPool().start(2, CHUNKER, TOKENS)
    assert isinstance(run, ProcessChunkingRun)
    try:
        expected = chunk_files(CHUNKER, TOKENS, "r1", _texts())
        assert await run.chunk("r1", _texts()) == expected
        for process in list(run._pool._processes.values()):
            assert process.pid is not None
            os.kill(process.pid, signal.SIGKILL)
            process.join()
        assert await run.chunk("r1", _texts()) == expected
    finally:
        await run.close()
