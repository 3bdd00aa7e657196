"""CODEBASE_MCP_EMBEDDER: what ``auto`` chooses, explicit choices failing loudly, and
``codebase-mcp doctor`` (real servers on 127.0.0.1, the real CLI entry point)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codebase_mcp_search.core.errors import EmbedderUnavailable
from codebase_mcp_search.entrypoints import embedders
from codebase_mcp_search.entrypoints.cli.main import main
from codebase_mcp_search.entrypoints.embedders import choose_embedder
from codebase_mcp_search.entrypoints.facade import open_codebase
from codebase_mcp_search.entrypoints.settings import Settings
from tests.embedding_servers import embedding_server, unused_port


def config(**values: Any) -> dict[str, Any]:
    """The container's configuration (as ``Configuration.from_pydantic`` builds it)."""
    return Settings(**values).model_dump()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data folder for the module: the ONNX model's int8 graph is derived into it once."""
    return tmp_path_factory.mktemp("selection-data")


async def test_auto_takes_ollama_when_it_answers_with_the_model(
    client: httpx.AsyncClient,
) -> None:
    with embedding_server(dimension=32) as server:
        choice = await choose_embedder(config(embedder="auto", ollama_base_url=server.url), client)
    assert choice.chosen == "ollama" and choice.embedder is not None and not choice.fallback
    assert choice.embedder.model == "ollama/nomic-embed-text:latest"
    assert choice.embedder.dimension == 32


async def test_auto_skips_an_ollama_without_the_model_for_the_onnx_model(
    client: httpx.AsyncClient, data_dir: Path
) -> None:
    with embedding_server(models=set()) as server:
        choice = await choose_embedder(
            config(embedder="auto", ollama_base_url=server.url, data_dir=data_dir), client
        )
    assert choice.chosen == "onnx" and choice.embedder is not None
    assert choice.embedder.model == "onnx/all-MiniLM-L6-v2-int8"
    assert choice.embedder.dimension == 384
    assert "does not have nomic-embed-text:latest" in choice.reason
    assert "the ONNX model loaded" in choice.reason
    assert choice.fallback  # an Ollama that answers was passed over: worth telling


async def test_auto_without_ollama_takes_the_onnx_model_even_with_the_extra(
    client: httpx.AsyncClient, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedders, "local_extra_installed", lambda: True)
    url = f"http://127.0.0.1:{unused_port()}"
    choice = await choose_embedder(
        config(embedder="auto", ollama_base_url=url, data_dir=data_dir), client
    )
    assert choice.chosen == "onnx" and choice.embedder is not None
    assert url in choice.reason and "not reachable" in choice.reason
    assert not choice.fallback  # no Ollama running: the ordinary case, nothing to tell
    result = await choice.embedder.embed_documents(["def f(): pass"])
    assert len(result.vectors[0]) == 384


async def test_auto_without_ollama_the_onnx_model_or_the_extra_is_lexical_only(
    client: httpx.AsyncClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedders, "local_extra_installed", lambda: False)
    url = f"http://127.0.0.1:{unused_port()}"
    missing = tmp_path / "no-model"
    choice = await choose_embedder(
        config(embedder="auto", ollama_base_url=url, onnx_model_dir=missing), client
    )
    assert (choice.chosen, choice.embedder) == ("none", None)
    assert url in choice.reason and "not reachable" in choice.reason
    assert f"CODEBASE_MCP_ONNX_MODEL_DIR={missing}: no such folder" in choice.reason
    assert "the local extra is not installed: lexical search only" in choice.reason
    assert choice.fallback


def test_commands_name_the_embedder_only_when_auto_fell_back(
    tmp_path: Path,
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "a.py").write_text("def f():\n    return 1\n")
    monkeypatch.setenv("CODEBASE_MCP_DATA_DIR", str(data_dir))
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDER", "auto")
    monkeypatch.setenv("CODEBASE_MCP_OLLAMA_BASE_URL", f"http://127.0.0.1:{unused_port()}")
    for quiet in ([], ["-q"]):  # no Ollama: the ONNX model, as expected, without a word
        assert main(["index", str(tmp_path / "repo"), *quiet]) == 0
        assert "embedder:" not in capsys.readouterr().err
    with embedding_server(models=set()) as server:  # an Ollama without the model: said
        monkeypatch.setenv("CODEBASE_MCP_OLLAMA_BASE_URL", server.url)
        assert main(["index", str(tmp_path / "repo"), "-q"]) == 0
    err = capsys.readouterr().err
    assert "embedder: onnx, " in err and "does not have nomic-embed-text:latest" in err


async def test_onnx_chosen_explicitly(
    client: httpx.AsyncClient, data_dir: Path, tmp_path: Path
) -> None:
    choice = await choose_embedder(config(embedder="onnx", data_dir=data_dir), client)
    assert choice.chosen == "onnx" and choice.reason == "CODEBASE_MCP_EMBEDDER=onnx"
    assert choice.embedder is not None and choice.embedder.model == "onnx/all-MiniLM-L6-v2-int8"
    packaged = await choose_embedder(
        config(embedder="onnx", data_dir=data_dir, onnx_quantize=False), client
    )
    assert packaged.embedder is not None and packaged.embedder.model == "onnx/all-MiniLM-L6-v2"
    with pytest.raises(EmbedderUnavailable, match="CODEBASE_MCP_ONNX_MODEL_DIR="):
        await choose_embedder(config(embedder="onnx", onnx_model_dir=tmp_path / "nowhere"), client)


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


@pytest.mark.parametrize(
    "given",
    [
        "openai_embedding_model=",
        "embedding_model=",
        "CODEBASE_MCP_OPENAI_EMBEDDING_MODEL",
        "CODEBASE_MCP_EMBEDDING_MODEL",
    ],
)
async def test_the_openai_model_by_its_name_or_its_old_name(
    given: str, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("CODEBASE_MCP_OPENAI_EMBEDDING_MODEL", "CODEBASE_MCP_EMBEDDING_MODEL"):
        monkeypatch.delenv(var, raising=False)
    values: dict[str, Any] = {"embedder": "openai"}
    if given.endswith("="):
        values[given.removesuffix("=")] = "code-embedder"
    else:
        monkeypatch.setenv(given, "code-embedder")
    with embedding_server(models={"code-embedder"}) as server:
        choice = await choose_embedder(config(openai_base_url=server.openai_url, **values), client)
    assert choice.embedder is not None and choice.embedder.model == "openai/code-embedder"


def test_the_old_model_name_gives_way_as_any_setting_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for var in ("CODEBASE_MCP_OPENAI_EMBEDDING_MODEL", "CODEBASE_MCP_EMBEDDING_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("EMBEDDING_MODEL", "stray")  # unprefixed: someone else's variable
    assert Settings().openai_embedding_model == "text-embedding-3-small"
    monkeypatch.setenv("CODEBASE_MCP_EMBEDDING_MODEL", "old-env")
    assert Settings().openai_embedding_model == "old-env"
    monkeypatch.setenv("CODEBASE_MCP_OPENAI_EMBEDDING_MODEL", "new-env")
    assert Settings().openai_embedding_model == "new-env"
    # A keyword beats the environment, whichever name it uses; the new name beats the old.
    assert Settings(embedding_model="kw").openai_embedding_model == "kw"
    both = Settings(embedding_model="old", openai_embedding_model="new")
    assert both.openai_embedding_model == "new"


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
