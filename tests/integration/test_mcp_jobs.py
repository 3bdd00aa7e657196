"""The background job tools through a real MCP client, over embedded Postgres, with a real
embedding server on 127.0.0.1 where a job must be slow or must fail."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from codebase_mcp_search.core.models import JobQuery, new_job_id
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings
from tests.embedding_servers import OLLAMA_MODEL, EmbeddingServer, embedding_server
from tests.factories import write_sample_repo
from tests.integration.test_mcp_server import call, error_of

STATUS_FIELDS = {
    "job_id",
    "status",
    "progress_percentage",
    "progress_message",
    "files_scanned",
    "files_indexed",
    "chunks_created",
    "created_at",
    "started_at",
    "completed_at",
    "cancelled_at",
    "error_message",
    "error_type",
    "estimated_time_remaining_seconds",
    "project_id",
    "database_name",
    "kind",
    "attempts",
}
LISTED_FIELDS = {
    "job_id",
    "kind",
    "repo_path",
    "repo_name",
    "status",
    "progress_percentage",
    "files_indexed",
    "chunks_created",
    "created_at",
    "started_at",
    "completed_at",
    "project_id",
}


def write_repo(root: Path, files: int) -> Path:
    """``files`` Python modules of two small functions each."""
    for i in range(files):
        path = root / "pkg" / f"mod_{i:03d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"def load_{i}(path):\n    return open(path).read() + '{i}'\n\n\n"
            f"def save_{i}(path, text):\n    with open(path, 'w') as f:\n"
            f"        f.write(text + '{i}')\n"
        )
    return root


@pytest.fixture
def slow_server() -> Iterator[EmbeddingServer]:
    """An Ollama server answering each batch of 2 texts after 0.1 s: jobs take seconds."""
    with embedding_server(delay_s=0.1) as server:
        yield server


def ollama_settings(server: EmbeddingServer, **changes: Any) -> Settings:
    return Settings(
        embedder="ollama",
        ollama_base_url=server.url,
        ollama_embedding_model=OLLAMA_MODEL,
        embedding_batch_size=2,
        embedding_concurrency=1,
        embedding_retries=0,
        index_batch_files=4,
        **changes,
    )


async def wait_status(
    c: Client[Any], job_id: str, wanted: set[str], within: float = 60.0
) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        status = await call(c, "get_job_status", job_id=job_id)
        if status["status"] in wanted:
            return status
        assert time.monotonic() < deadline, f"job still {status}"
        await asyncio.sleep(0.05)


async def test_a_background_job_runs_to_completion(
    tmp_path: Path, pg_env: str, slow_server: EmbeddingServer
) -> None:
    root = write_sample_repo(tmp_path / "repo")
    async with Client(build_server(ollama_settings(slow_server))) as c:
        started = await call(c, "start_indexing_background", repo_path=str(root))
        assert set(started) == {
            "job_id",
            "status",
            "message",
            "estimated_duration_seconds",
            "project_id",
            "database_name",
        }
        assert started["status"] in ("pending", "running")
        assert started["project_id"] == pg_env and started["estimated_duration_seconds"] is None
        done = await wait_status(c, started["job_id"], {"completed", "failed"})
        # The lexical job, then the semantic job it queued for the vectors.
        assert set(done) == STATUS_FIELDS | {"vectors_job_id", "semantic_coverage"}
        assert done["kind"] == "lexical" and done["semantic_coverage"]["chunks"] >= 2
        vectors = await wait_status(c, done["vectors_job_id"], {"completed", "failed"})
        assert (vectors["kind"], vectors["status"]) == ("semantic", "completed")
        assert vectors["semantic_coverage"]["percent"] == 100
        # A semantic job counts its vectors, as a lexical job its files.
        chunks = vectors["semantic_coverage"]["chunks"]
        assert (vectors["vectors_stored"], vectors["chunks_embedded"]) == (chunks, chunks)
        assert done["status"] == "completed" and done["progress_percentage"] == 100
        assert (done["files_scanned"], done["files_indexed"]) == (2, 2)
        assert done["chunks_created"] >= 2 and done["error_type"] is None
        assert done["started_at"] and done["completed_at"] and done["cancelled_at"] is None
        assert done["database_name"] == started["database_name"]

        found = await call(c, "search_code", query="retry with backoff", limit=3)
        assert found["results"][0]["file_path"] == "pkg/retry.py"

        listed = await call(c, "list_background_jobs")
        assert (listed["total_count"], listed["limit"], listed["offset"]) == (2, 20, 0)
        assert all(set(j) == LISTED_FIELDS for j in listed["jobs"])
        assert [j["kind"] for j in listed["jobs"]] == ["semantic", "lexical"]  # newest first
        assert {j["repo_name"] for j in listed["jobs"]} == {"repo"}
        assert (await call(c, "list_background_jobs", status="pending"))["total_count"] == 0

        # A second run of the same repository is estimated from the first.
        again = await call(c, "start_indexing_background", repo_path=str(root))
        assert again["estimated_duration_seconds"] is not None
        await wait_status(c, again["job_id"], {"completed"})

        text = await error_of(c, "cancel_job", job_id=again["job_id"])
        assert text.startswith("INVALID_STATUS") and "completed" in text and "pending" in text


async def test_job_tools_refuse_bad_input_with_codes(tmp_path: Path) -> None:
    async with Client(build_server(Settings(embedder="none", job_worker=False))) as c:
        for args, code in [
            ({"job_id": new_job_id()}, "JOB_NOT_FOUND"),
            ({"job_id": "not-a-uuid"}, "VALIDATION_ERROR"),
            ({"job_id": "0f0e0d0c\x00"}, "VALIDATION_ERROR"),
        ]:
            for tool in ("get_job_status", "cancel_job"):
                text = await error_of(c, tool, **args)
                assert text.startswith(code), (tool, args, text)
        for args, code in [
            ({"limit": 0}, "INVALID_LIMIT"),
            ({"limit": 101}, "INVALID_LIMIT"),
            ({"offset": -1}, "VALIDATION_ERROR"),
            ({"offset": 2**70}, "VALIDATION_ERROR"),
            ({"status": "done"}, "INVALID_STATUS"),
        ]:
            text = await error_of(c, "list_background_jobs", **args)
            assert text.startswith(code), (args, text)
        text = await error_of(c, "list_background_jobs", status="done")
        assert "blocked" in text  # names the job statuses, not the task ones
        text = await error_of(c, "start_indexing_background", repo_path="relative/dir")
        assert text.startswith("VALIDATION_ERROR") and "absolute" in text
        text = await error_of(c, "start_indexing_background", repo_path=str(tmp_path / "nope"))
        assert text.startswith("VALIDATION_ERROR") and "exist" in text


async def test_a_second_job_for_a_repository_is_refused(tmp_path: Path) -> None:
    root = write_sample_repo(tmp_path / "repo")
    # No worker here: the first job stays pending.
    async with Client(build_server(Settings(embedder="hash", job_worker=False))) as c:
        first = await call(c, "start_indexing_background", repo_path=str(root))
        assert first["status"] == "pending"
        text = await error_of(c, "start_indexing_background", repo_path=str(root))
        assert text.startswith("DUPLICATE_JOB") and first["job_id"] in text
        # Another project may index the same directory.
        other = await call(
            c, "start_indexing_background", repo_path=str(root), project_id="t-other-jobs"
        )
        assert other["project_id"] == "t-other-jobs"
        cancelled = await call(c, "cancel_job", job_id=first["job_id"])
        assert cancelled["status"] == "cancelled" and cancelled["cancelled_at"]
        assert set(cancelled) == {
            "job_id",
            "status",
            "message",
            "files_indexed",
            "chunks_created",
            "cancelled_at",
            "project_id",
        }
        # Once it ended, the repository takes a new job.
        await call(c, "start_indexing_background", repo_path=str(root))
        await call(c, "cancel_job", job_id=other["job_id"])


async def test_jobs_beyond_the_limit_wait_their_turn(
    tmp_path: Path, slow_server: EmbeddingServer
) -> None:
    roots = [write_repo(tmp_path / f"repo{i}", 6) for i in range(3)]
    settings = ollama_settings(slow_server, max_concurrent_jobs=2)
    async with Client(build_server(settings)) as c:
        ids = [
            (await call(c, "start_indexing_background", repo_path=str(r)))["job_id"] for r in roots
        ]
        await wait_status(c, ids[0], {"running"})
        await wait_status(c, ids[1], {"running"})
        most = 0
        while True:
            listed = await call(c, "list_background_jobs")
            statuses = [j["status"] for j in listed["jobs"]]
            most = max(most, statuses.count("running"))
            assert statuses.count("running") <= 2
            if statuses.count("completed") == 3:
                break
            assert "failed" not in statuses, listed
            await asyncio.sleep(0.05)
        assert most == 2
    assert slow_server.max_concurrency <= 2


async def test_cancel_stops_a_running_job_and_keeps_what_it_built(
    tmp_path: Path, slow_server: EmbeddingServer
) -> None:
    root = write_repo(tmp_path / "repo", 40)
    settings = ollama_settings(slow_server, vector_batch_chunks=4)
    async with Client(build_server(settings)) as c:
        job_id = (await call(c, "start_indexing_background", repo_path=str(root)))["job_id"]
        lexical = await wait_status(c, job_id, {"completed"})
        vectors_id = lexical["vectors_job_id"]
        running = await wait_status(c, vectors_id, {"running"})
        # Until some vectors are stored, and the job's heartbeat has reported its progress.
        while running["semantic_coverage"]["vectors"] == 0 or not running[
            "progress_message"
        ].startswith("Generating embeddings: "):
            await asyncio.sleep(0.1)
            running = await call(c, "get_job_status", job_id=vectors_id)
        asked = time.monotonic()
        cancelling = await call(c, "cancel_job", job_id=vectors_id)
        assert cancelling["status"] == "cancelling"
        ended = await wait_status(c, vectors_id, {"cancelled"}, within=10)
        assert time.monotonic() - asked < 5.0
        assert ended["cancelled_at"] and ended["completed_at"]
        # What was stored stays: every file is searchable, some chunks by meaning already.
        [repo] = (await call(c, "list_repositories"))["repositories"]
        assert repo["file_count"] == 40 and 0 < repo["vector_count"] < repo["chunk_count"]
        assert 0 < repo["semantic_percent"] < 100 and "semantic_job_id" not in repo
        found = await call(c, "search_code", query="load path", limit=5)
        assert found["mode"] == "hybrid" and found["results"]
        [layer] = found["semantic_coverage"]
        assert layer["vectors"] == repo["vector_count"] and "job_id" not in layer
        assert "index_repository resumes it" in found["message"]
        # A new run builds the rest, and only the rest.
        asked_before = sum(len(r.inputs) for r in slow_server.embedding_requests)
        again = await call(c, "index_repository", repo_path=str(root))
        assert again["files_indexed"] == 0 and again["vectors_missing"] > 0
        await wait_status(c, again["vectors_job_id"], {"completed"})
        [repo] = (await call(c, "list_repositories"))["repositories"]
        assert repo["vector_count"] == repo["chunk_count"] and repo["semantic_percent"] == 100
        embedded = sum(len(r.inputs) for r in slow_server.embedding_requests) - asked_before
        assert embedded == again["vectors_missing"]


async def test_a_blocked_job_resumes_when_the_embedding_server_is_back(
    tmp_path: Path, slow_server: EmbeddingServer
) -> None:
    root = write_repo(tmp_path / "repo", 4)
    slow_server.fail(100_000, status=503)
    async with Client(build_server(ollama_settings(slow_server))) as c:
        job_id = (await call(c, "start_indexing_background", repo_path=str(root)))["job_id"]
        blocked = await wait_status(c, job_id, {"blocked", "failed", "completed"})
        assert blocked["status"] == "blocked", blocked
        assert blocked["error_type"] == "EMBEDDER_UNAVAILABLE" and blocked["error_message"]
        slow_server.recover()
        done = await wait_status(c, job_id, {"completed", "failed"}, within=60)
        assert done["status"] == "completed", done
        assert done["error_type"] is None and done["files_indexed"] == 4
        found = await call(c, "search_code", query="load", mode="semantic", limit=3)
        assert found["results"]


async def test_index_repository_goes_through_the_queue(
    tmp_path: Path, pg_env: str, slow_server: EmbeddingServer
) -> None:
    root = write_sample_repo(tmp_path / "repo")
    async with Client(build_server(ollama_settings(slow_server))) as c:
        indexed = await call(c, "index_repository", repo_path=str(root))
        assert indexed["status"] == "success"
        await wait_status(c, indexed["vectors_job_id"], {"completed"})
        listed = await call(c, "list_background_jobs")
        assert [(j["kind"], j["status"]) for j in listed["jobs"]] == [
            ("semantic", "completed"),
            ("lexical", "completed"),
        ]
    # The same queue from the library: the jobs are there for every client to see.
    async with open_codebase(Settings(embedder="none")) as cb:
        page = await cb.jobs.list(JobQuery.build(project_id=cb.project_id))
        assert page.total_count == 2 and page.jobs[1].result is not None
        assert page.jobs[1].result.files_indexed == 2  # type: ignore[union-attr]


async def test_a_search_while_a_repository_is_first_indexed_says_so(
    tmp_path: Path, pg_env: str
) -> None:
    root = write_repo(tmp_path / "repo", 600)
    async with Client(build_server(Settings(embedder="hash", index_batch_files=2))) as c:
        job_id = (await call(c, "start_indexing_background", repo_path=str(root)))["job_id"]
        # A query nothing matches: an empty answer either way, which must not pass for "none".
        found = await call(c, "search_code", query="zebra quokka", mode="lexical")
        assert found["results"] == [] and found["indexing_repositories"] == ["repo"]
        assert found["message"].startswith("No results yet: repo is still being indexed")
        text = await call(c, "search_code", query="zebra quokka", response_format="markdown")
        assert "No results yet: repo is still being indexed" in text
        assert "\n\nNo results." not in text
        await wait_status(c, job_id, {"completed"})
        after = await call(c, "search_code", query="zebra quokka", mode="lexical")
        assert after["results"] == [] and "indexing_repositories" not in after
        assert "message" not in after
