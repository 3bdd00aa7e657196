"""ProcessChunkingPool specifics: spawned workers skip the parent's main module, and a lost
worker's batch is chunked in this process (what every pool does: tests/contract)."""

from __future__ import annotations

import contextlib
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
            # Once one worker is killed, the executor may end the others before us.
            if process.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
            process.join()
        assert await run.chunk("r1", _texts()) == expected
    finally:
        await run.close()


def _pid() -> int:
    return os.getpid()


async def test_workers_started_ahead_are_the_next_run_s() -> None:
    """A first index starts its workers while the database opens: the run takes those
    processes (no second start-up), chunking as chunk_files does."""
    pool = ProcessChunkingPool()
    pool.prestart(2, CHUNKER, TOKENS)
    warm = pool._warm
    assert warm is not None
    early = {warm[3].submit(_pid).result() for _ in range(8)}
    assert pool.start(1, CHUNKER, TOKENS) is not None  # a thread for early batches: kept
    run = pool.start(2, CHUNKER, TOKENS)
    try:
        assert isinstance(run, ProcessChunkingRun)
        assert run._pool is warm[3] and pool._warm is None
        assert {run._pool.submit(_pid).result() for _ in range(8)} <= early
        assert await run.chunk("r1", _texts()) == chunk_files(CHUNKER, TOKENS, "r1", _texts())
    finally:
        await run.close()
        await pool.close()


async def test_workers_started_ahead_and_not_taken_end_with_the_pool() -> None:
    pool = ProcessChunkingPool()
    pool.prestart(2, CHUNKER, TOKENS)
    warm = pool._warm
    assert warm is not None
    processes = [warm[3].submit(_pid).result() for _ in range(2)]
    assert processes
    workers = list(warm[3]._processes.values())
    await pool.close()
    assert pool._warm is None
    for process in workers:
        process.join(10)
        assert not process.is_alive()
    # Another run's settings: not these processes.
    pool.prestart(2, CHUNKER, TOKENS)
    other = pool._warm
    assert other is not None
    run = pool.start(3, CHUNKER, TOKENS)
    try:
        assert isinstance(run, ProcessChunkingRun) and run._pool is not other[3]
    finally:
        await run.close()
        await pool.close()


def _sigint_blocked() -> bool:
    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def test_chunking_workers_leave_ctrl_c_to_their_parent() -> None:
    """Ctrl-C reaches a terminal's whole process group: a worker (still importing, or
    chunking) must not take it (a KeyboardInterrupt traceback); the parent ends them."""
    pool = _process_pool(2, CHUNKER, TOKENS)
    try:
        assert [pool.submit(_sigint_blocked).result() for _ in range(4)] == [True] * 4
        assert not _sigint_blocked()  # this process's mask is given back
    finally:
        pool.shutdown()
