"""Concurrent clients of one task store, as users have them.

A client is its own ``TaskService`` applying a script of ``update`` calls in order. Over the
in-memory store the clients are asyncio tasks of one event loop sharing the store (the only way
that store is shared); over Postgres each client is an OS process with its own pool, as MCP
servers, CLI runs and library users are. Every client waits at a gate until all are ready, so
their updates overlap rather than run one client after another.

Run as a module, this is one Postgres client: ``python -m tests.contract.task_clients URL
PROJECT DATA_DIR TASK_ID SCRIPT_JSON``; it prints ``ready``, waits for a line on stdin, then
prints each task ``update`` returned as JSON, one a line.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, Protocol

from codebase_mcp_search.adapters.memory import InMemoryTaskRepo
from codebase_mcp_search.adapters.postgres import PgDatabase, PgTaskRepo
from codebase_mcp_search.core.models import Task
from codebase_mcp_search.core.ports import TaskRepo
from codebase_mcp_search.core.services import TaskService

Script = list[dict[str, Any]]
"""The keyword arguments of each ``TaskService.update`` call of one client, in order."""

ROOT = Path(__file__).resolve().parents[2]
# Generous: a deadline for an outcome, not a speed target (2 shared cores, cold imports).
DEADLINE = 300.0


class TaskClients(Protocol):
    """A task store (``repo``) and a way to run concurrent clients of it."""

    @property
    def repo(self) -> TaskRepo: ...

    async def run(self, task_id: str, scripts: list[Script]) -> list[list[Task]]:
        """Run one client per script at once; what each ``update`` call returned, by client."""
        ...


class AsyncioClients:
    """Clients as asyncio tasks over one in-memory store."""

    def __init__(self, repo: InMemoryTaskRepo) -> None:
        self.repo = repo

    async def run(self, task_id: str, scripts: list[Script]) -> list[list[Task]]:
        gate = asyncio.Event()

        async def client(script: Script) -> list[Task]:
            service = TaskService(self.repo)
            await gate.wait()
            done = []
            for fields in script:
                done.append(await service.update(task_id, **fields))
                await asyncio.sleep(0)  # the other clients' updates come in between
            return done

        clients = [asyncio.create_task(client(s)) for s in scripts]
        await asyncio.sleep(0)
        gate.set()
        return list(await asyncio.gather(*clients))


class ProcessClients:
    """Clients as OS processes, each with its own pool on one Postgres project."""

    def __init__(self, repo: PgTaskRepo, url: str, project: str, data_dir: Path) -> None:
        self.repo = repo
        self._args = [url, project, str(data_dir)]

    async def run(self, task_id: str, scripts: list[Script]) -> list[list[Task]]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
        procs = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.contract.task_clients",
                *self._args,
                task_id,
                json.dumps(script),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=ROOT,
                env=env,
            )
            for script in scripts
        ]
        try:
            async with asyncio.timeout(DEADLINE):
                for p in procs:
                    assert p.stdout is not None
                    ready = await p.stdout.readline()
                    if ready != b"ready\n":
                        _, err = await p.communicate()
                        raise AssertionError(f"a client did not start: {err.decode()}")
                outputs = await asyncio.gather(*(p.communicate(b"go\n") for p in procs))
        finally:
            for p in procs:
                if p.returncode is None:
                    p.kill()
                    await p.wait()
        for p, (_, err) in zip(procs, outputs, strict=True):
            assert p.returncode == 0, err.decode()
        return [
            [Task.model_validate_json(line) for line in out.decode().splitlines()]
            for out, _ in outputs
        ]


async def _client(url: str, project: str, data_dir: str, task_id: str, script: Script) -> None:
    db = PgDatabase(url, data_dir=Path(data_dir))
    try:
        repo = PgTaskRepo(db, project)
        await repo.get(task_id)  # the pool is open and the project's schema found
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        service = TaskService(repo)
        for fields in script:
            task = await service.update(task_id, **fields)
            print(task.model_dump_json(), flush=True)
    finally:
        await db.close()


if __name__ == "__main__":
    url, project, data_dir, task_id, script = sys.argv[1:6]
    asyncio.run(_client(url, project, data_dir, task_id, json.loads(script)))
