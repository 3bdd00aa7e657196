"""CODEBASE_MCP_EMBEDDER: what ``auto`` chooses, explicit choices failing loudly, and
``codebase-mcp doctor`` (real servers on 127.0.0.1, the real CLI entry point)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codebase_core.errors import EmbedderUnavailable
from entrypoints import container as container_module
from entrypoints.cli.main import main
from entrypoints.container import choose_embedder
from entrypoints.library import open_codebase
from entrypoints.settings import Settings
from tests.embedding_servers import embedding_server, unused_port


def config(**values: Any) -> dict[str, Any]:
    """The container's configuration (as ``Configuration.from_pydantic`` builds it)."""
    return Settings(**values).model_dump()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


async def test_auto_takes_ollama_when_it_answers_with_the_model(
    client: httpx.AsyncClient,
) -> None:
    with embedding_server(dimension=32) as server:
        choice = await choose_embedder(config(embedder="auto", ollama_base_url=server.url), client)
    assert choice.chosen == "ollama" and choice.embedder is not None
    assert choice.embedder.model == "ollama/nomic-embed-text:latest"
    assert choice.embedder.dimension == 32


async def test_auto_skips_an_ollama_without_the_model(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(container_module, "local_extra_installed", lambda: False)
    with embedding_server(models=set()) as server:
        choice = await choose_embedder(config(embedder="auto", ollama_base_url=server.url), client)
    assert (choice.chosen, choice.embedder) == ("none", None)
    assert "does not have nomic-embed-text:latest" in choice.reason
    assert "lexical search only" in choice.reason


async def test_auto_without_ollama_or_the_extra_is_lexical_only(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(container_module, "local_extra_installed", lambda: False)
    url = f"http://127.0.0.1:{unused_port()}"
    choice = await choose_embedder(config(embedder="auto", ollama_base_url=url), client)
    assert (choice.chosen, choice.embedder) == ("none", None)
    assert url in choice.reason and "not reachable" in choice.reason


async def test_an_explicit_choice_fails_loudly(client: httpx.AsyncClient) -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    with pytest.raises(EmbedderUnavailable, match="ollama pull nomic-embed-text"):
        await choose_embedder(
            config(embedder="ollama", ollama_base_url=url, embedding_retries=0), client
        )
    with pytest.raises(EmbedderUnavailable, match="CODEBASE_MCP_OPENAI_API_KEY"):
        await choose_embedder(
            config(embedder="openai", openai_base_url=f"{url}/v1", embedding_retries=0), client
        )


def test_doctor_reports_store_and_embedder(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with embedding_server(dimension=24) as server:
        monkeypatch.setenv("CODEBASE_MCP_EMBEDDER", "auto")
        monkeypatch.setenv("OLLAMA_BASE_URL", server.url)
        assert main(["doctor", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert report["store"]["kind"] == "postgres" and report["store"]["reachable"] is True
    assert report["store"]["pgvector"]
    emb = report["embedder"]
    assert (emb["requested"], emb["chosen"], emb["dimension"]) == ("auto", "ollama", 24)
    assert emb["model"] == "ollama/nomic-embed-text:latest"


def test_doctor_fails_when_the_chosen_embedder_is_down(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDER", "ollama")
    monkeypatch.setenv("OLLAMA_BASE_URL", url)
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDING_RETRIES", "0")
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "NOT REACHABLE" in out and url in out and "ollama pull nomic-embed-text" in out


async def test_an_unreachable_embedder_only_fails_what_needs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDER", "ollama")
    monkeypatch.setenv("OLLAMA_BASE_URL", f"http://127.0.0.1:{unused_port()}")
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDING_RETRIES", "0")
    async with open_codebase(Settings(store="memory")) as cb:
        assert await cb.repositories() == []
        task = await cb.tasks.create("Works without an embedder")
        assert task.title == "Works without an embedder"
        with pytest.raises(EmbedderUnavailable, match="ollama pull"):
            await cb.index(tmp_path)
