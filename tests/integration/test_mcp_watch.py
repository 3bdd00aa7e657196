"""Watching through a real MCP client (issue 37): a server left running keeps the index of the
repositories it serves current, each burst of changes one incremental job. Deadlines are
generous and only for eventual outcomes (the latencies are measured in bench/)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings
from tests.integration.test_mcp_server import call

DEADLINE_S = 60.0


@pytest.fixture(autouse=True)
def _watching(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBASE_MCP_WATCH", "true")


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not await check():
        assert time.monotonic() < deadline, f"not within {DEADLINE_S} s: {what}"
        await asyncio.sleep(0.1)


async def files_with(c: Client[Any], word: str) -> set[str]:
    found = await call(c, "search_code", query=word, mode="lexical", limit=20)
    return {r["file_path"] for r in found["results"] if word in r["content"]}


def write_module(root: Path, rel: str, *functions: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"def {f}(x):\n    return x + 1\n\n\n" for f in functions))
    return path


async def watched(c: Client[Any]) -> list[str | None]:
    return [r.get("watching") for r in (await call(c, "list_repositories"))["repositories"]]


async def test_a_running_server_indexes_what_changes(tmp_path: Path, pg_env: str) -> None:
    root = tmp_path / "repo"
    write_module(root, "pkg/base.py", "steady_base_helper")
    write_module(root, "pkg/doomed.py", "doomed_walrus_parser")
    async with Client(build_server(Settings(embedder="hash"))) as c:
        await call(c, "index_repository", repo_path=str(root))

        async def watching_it() -> bool:
            return await watched(c) == ["native"]

        await eventually(watching_it, "the repository is watched")

        # A new file's function.
        write_module(root, "pkg/fresh.py", "fresh_otter_loader")

        async def new_found() -> bool:
            return await files_with(c, "fresh_otter_loader") == {"pkg/fresh.py"}

        await eventually(new_found, "a new file's function is found")

        # A function renamed: found under its new name, no longer under its old one.
        write_module(root, "pkg/fresh.py", "renamed_heron_loader")

        async def renamed() -> bool:
            new = await files_with(c, "renamed_heron_loader")
            return new == {"pkg/fresh.py"} and not await files_with(c, "fresh_otter_loader")

        await eventually(renamed, "a renamed function is found by its new name only")

        # A deleted file's content is gone.
        (root / "pkg" / "doomed.py").unlink()

        async def gone() -> bool:
            return not await files_with(c, "doomed_walrus_parser")

        await eventually(gone, "a deleted file's content is gone")

        # An editor's save: the new text written to a temporary file, renamed over the file.
        temp = root / "pkg" / ".base.py.swp"
        temp.write_text("def saved_lynx_helper(x):\n    return x * 2\n")
        os.replace(temp, root / "pkg" / "base.py")

        async def saved() -> bool:
            return await files_with(c, "saved_lynx_helper") == {"pkg/base.py"} and not (
                await files_with(c, "steady_base_helper")
            )

        await eventually(saved, "an editor's save ends with its final text indexed")

        # Two writes within the debounce window: the last one is what is indexed.
        write_module(root, "pkg/twice.py", "first_draft_mole")
        write_module(root, "pkg/twice.py", "final_draft_mole")

        async def last_write() -> bool:
            return await files_with(c, "final_draft_mole") == {"pkg/twice.py"} and not (
                await files_with(c, "first_draft_mole")
            )

        await eventually(last_write, "a file written twice ends with its final text indexed")

        # Every job of the watcher is a lexical job of the repository, each of its own burst.
        jobs = (await call(c, "list_background_jobs", limit=100))["jobs"]
        assert jobs and all(j["repo_path"] == str(root) for j in jobs)


async def test_watching_off_leaves_the_index_alone(tmp_path: Path, pg_env: str) -> None:
    root = tmp_path / "repo"
    write_module(root, "pkg/base.py", "steady_base_helper")
    async with Client(build_server(Settings(embedder="hash", watch=False))) as c:
        await call(c, "index_repository", repo_path=str(root))
        assert await watched(c) == [None]
        write_module(root, "pkg/fresh.py", "unwatched_vole_loader")
        # Nothing to wait for but time: a watcher would have queued a job by now.
        await asyncio.sleep(3)
        assert not await files_with(c, "unwatched_vole_loader")
        jobs = (await call(c, "list_background_jobs"))["jobs"]
        assert len(jobs) == 1  # the index_repository run alone


async def test_two_servers_on_one_store_watch_a_repository_once(
    tmp_path: Path, pg_env: str
) -> None:
    root = tmp_path / "repo"
    write_module(root, "pkg/base.py", "steady_base_helper")
    servers = [Client(build_server(Settings(embedder="hash"))) for _ in range(2)]
    open_ = list(servers)
    for server in servers:
        await server.__aenter__()
    try:
        a, b = servers
        await call(a, "index_repository", repo_path=str(root))

        async def one_watches() -> bool:
            return sorted(map(str, await watched(a) + await watched(b))) == ["None", "native"]

        await eventually(one_watches, "one of the two servers watches the repository")
        await asyncio.sleep(5)  # both look again every few seconds: still one
        assert await one_watches()

        async def quiet() -> bool:
            pending = await call(a, "list_background_jobs", status="pending")
            running = await call(a, "list_background_jobs", status="running")
            return not pending["jobs"] and not running["jobs"]

        await eventually(quiet, "no job is active")
        before = (await call(a, "list_background_jobs", limit=100))["total_count"]
        write_module(root, "pkg/fresh.py", "fresh_otter_loader")

        async def found_by_both() -> bool:
            return all([await files_with(c, "fresh_otter_loader") for c in (a, b)])

        await eventually(found_by_both, "the change is found through either server")
        await eventually(quiet, "no job is active")
        after = (await call(a, "list_background_jobs", limit=100))["total_count"]
        assert after - before == 1, "one write, one job: not one per server"

        # The watching server stops: the other takes the repository over.
        watcher, other = (a, b) if await watched(a) == ["native"] else (b, a)
        open_.remove(watcher)
        await watcher.__aexit__(None, None, None)

        async def taken_over() -> bool:
            return await watched(other) == ["native"]

        await eventually(taken_over, "the other server watches once the first stopped")
        write_module(root, "pkg/later.py", "later_ibis_loader")

        async def later_found() -> bool:
            return await files_with(other, "later_ibis_loader") == {"pkg/later.py"}

        await eventually(later_found, "a change after the takeover is indexed")
    finally:
        for server in open_:
            await server.__aexit__(None, None, None)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True, env=GIT_ENV
    )
    return done.stdout.strip()


GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


async def test_branch_switches_are_one_job_each_and_shown(tmp_path: Path, pg_env: str) -> None:
    root = tmp_path / "repo"
    write_module(root, "pkg/base.py", "steady_base_helper")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "feature")
    write_module(root, "pkg/feature.py", "feature_kestrel_loader")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "feature")
    feature_commit = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "main")
    main_commit = git(root, "rev-parse", "HEAD")
    # A worktree is a repository root of its own (its .git is a file naming its git dir).
    worktree = tmp_path / "wt"
    git(root, "worktree", "add", "-q", "-b", "side", str(worktree), "main")

    async with Client(build_server(Settings(embedder="hash"))) as c:
        await call(c, "index_repository", repo_path=str(root))
        await call(c, "index_repository", repo_path=str(worktree))
        repos = {r["path"]: r for r in (await call(c, "list_repositories"))["repositories"]}
        assert (repos[str(root)]["branch"], repos[str(root)]["commit"]) == ("main", main_commit)
        assert (repos[str(worktree)]["branch"], repos[str(worktree)]["commit"]) == (
            "side",
            main_commit,
        )

        async def both_watched() -> bool:
            return await watched(c) == ["native", "native"]

        async def quiet() -> bool:
            pending = await call(c, "list_background_jobs", status="pending")
            running = await call(c, "list_background_jobs", status="running")
            return not pending["jobs"] and not running["jobs"]

        async def jobs_of(path: Path) -> int:
            listed = (await call(c, "list_background_jobs", limit=100))["jobs"]
            return sum(j["repo_path"] == str(path) for j in listed)

        await eventually(both_watched, "both work trees are watched")
        await eventually(quiet, "no job is active")
        for branch, expected, commit in (
            ("feature", {"pkg/feature.py"}, feature_commit),
            ("main", set(), main_commit),
        ):
            before = await jobs_of(root)
            git(root, "checkout", "-q", branch)

            async def reflected(expected: set[str] = expected) -> bool:
                return await files_with(c, "feature_kestrel_loader") == expected

            await eventually(reflected, f"the checkout of {branch} is reflected")
            await eventually(quiet, "no job is active")
            assert await jobs_of(root) - before == 1, "a checkout is one job"
            repo = next(
                r
                for r in (await call(c, "list_repositories"))["repositories"]
                if r["path"] == str(root)
            )
            assert (repo["branch"], repo["commit"]) == (branch, commit)

        write_module(worktree, "pkg/side.py", "side_plover_loader")

        async def side_found() -> bool:
            return await files_with(c, "side_plover_loader") == {"pkg/side.py"}

        await eventually(side_found, "a change in the worktree is indexed")
