"""The HTTP embedders against real servers on 127.0.0.1 (``tests.embedding_servers``): the
Ollama and OpenAI APIs, their fallbacks, retries, timeouts, batching, concurrency and
truncation, and that an API key never shows."""

from __future__ import annotations

import logging
import traceback
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.ollama import OllamaEmbedder
from codebase_mcp_search.adapters.openai import OpenAICompatibleEmbedder
from codebase_mcp_search.adapters.remote_embedding import HttpEmbeddingOptions
from codebase_mcp_search.core.errors import EmbedderUnavailable
from tests.embedding_servers import (
    OLLAMA_MODEL,
    OPENAI_MODEL,
    EmbeddingServer,
    embedding_server,
    unused_port,
)

DOC = "search_document: "
QUERY = "search_query: "
RETRIES = 3


@pytest.fixture(autouse=True)
def _postgres_defaults() -> None:
    """Overrides the integration suite's autouse Postgres project: nothing here stores data."""


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    """A server without faults; a test sets the knobs it needs on it."""
    with embedding_server() as s:
        yield s


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


def options(**changes: Any) -> HttpEmbeddingOptions:
    """Options for tests: short timeouts, near-zero backoff, the rest as given."""
    values: dict[str, Any] = {
        "timeout_s": 5.0,
        "retries": RETRIES,
        "backoff_s": 0.001,
        "backoff_max_s": 0.002,
    }
    return HttpEmbeddingOptions(**(values | changes))


def ollama(client: httpx.AsyncClient, url: str, **changes: Any) -> OllamaEmbedder:
    return OllamaEmbedder(client, url, "nomic-embed-text", options(**changes))


async def hashed(texts: list[str], dimension: int = 64) -> list[list[float]]:
    """The vectors the server computes for ``texts`` as it receives them."""
    vectors = (await HashingEmbedder(dimension).embed_documents(texts)).vectors
    return [[float(x) for x in v] for v in vectors]


# --- Ollama: the API, its prefixes and its older servers -------------------------------------


async def test_ollama_batches_with_prefixes_and_learns_the_dimension(
    client: httpx.AsyncClient,
) -> None:
    with embedding_server(dimension=48) as server:
        embedder = ollama(client, server.url)
        assert embedder.model == f"ollama/{OLLAMA_MODEL}"

        await embedder.open()
        assert embedder.dimension == 48

        docs = await embedder.embed_documents(["def load(path): ...", "class Parser: pass"])
        query = await embedder.embed_query("load a file")

    probe, batch, search = server.embedding_requests
    assert probe.path == batch.path == search.path == "/api/embed"
    assert batch.payload == {
        "model": OLLAMA_MODEL,
        "input": [DOC + "def load(path): ...", DOC + "class Parser: pass"],
        "truncate": True,
    }
    assert search.inputs == [QUERY + "load a file"]
    assert docs.vectors == await hashed(batch.inputs, 48)
    assert query == (await hashed(search.inputs, 48))[0]


async def test_ollama_without_api_embed_falls_back_to_the_legacy_endpoint_for_good(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    server.no_embed_endpoint = True
    embedder = ollama(client, server.url)

    await embedder.open()
    docs = await embedder.embed_documents(["alpha beta", "gamma delta", "epsilon"])

    assert server.paths() == ["/api/embed"] + ["/api/embeddings"] * 4
    legacy = server.embedding_requests[2:]
    assert [r.payload for r in legacy] == [
        {"model": OLLAMA_MODEL, "prompt": DOC + text}
        for text in ("alpha beta", "gamma delta", "epsilon")
    ]
    assert docs.vectors == await hashed([DOC + "alpha beta", DOC + "gamma delta", DOC + "epsilon"])
    assert embedder.dimension == server.dimension


async def test_ollama_missing_model_says_to_pull_it_without_retrying(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    server.models = set()
    embedder = ollama(client, server.url)

    with pytest.raises(EmbedderUnavailable) as failed:
        await embedder.open()

    message = str(failed.value)
    assert server.url in message
    assert "nomic-embed-text" in message
    assert "ollama pull nomic-embed-text" in message
    assert len(server.embedding_requests) == 1


async def test_ollama_has_model(server: EmbeddingServer, client: httpx.AsyncClient) -> None:
    assert await ollama(client, server.url).has_model() == (
        True,
        f"Ollama at {server.url} has {OLLAMA_MODEL}",
    )

    server.models = {"all-minilm:latest"}
    has, why = await ollama(client, server.url).has_model()
    assert not has
    assert OLLAMA_MODEL in why

    nowhere = f"http://127.0.0.1:{unused_port()}"
    has, why = await ollama(client, nowhere).has_model(timeout_s=1.0)
    assert not has
    assert "not reachable" in why
    assert nowhere in why
    assert server.paths() == ["/api/tags", "/api/tags"]


# --- retries: what is retried, how often, and what is not ------------------------------------


async def test_429_is_retried(server: EmbeddingServer, client: httpx.AsyncClient) -> None:
    server.fail(2, status=429)
    embedder = ollama(client, server.url)

    await embedder.open()

    assert len(server.embedding_requests) == 3
    assert embedder.dimension == server.dimension


async def test_retry_after_is_honoured(
    server: EmbeddingServer, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="codebase_mcp.embedder")
    server.fail(1, status=429, retry_after=0.05)
    embedder = ollama(client, server.url)

    await embedder.open()

    assert len(server.embedding_requests) == 2
    # Our own backoff would wait at most backoff_max_s (0.002 s): the server's 0.05 s it is.
    (retry,) = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert "HTTP 429" in retry
    assert f"retry 1/{RETRIES} in 0.05 s" in retry


async def test_a_retry_after_beyond_a_minute_fails_at_once(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    server.fail(RETRIES + 1, status=429, retry_after=3600)
    embedder = ollama(client, server.url)

    with pytest.raises(EmbedderUnavailable) as failed:
        await embedder.open()

    assert len(server.embedding_requests) == 1
    assert "HTTP 429" in str(failed.value)
    assert "3600 s" in str(failed.value)


async def test_500_twice_then_success_is_retried(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    server.fail(2, status=500)
    embedder = ollama(client, server.url)

    await embedder.open()
    docs = await embedder.embed_documents(["after the storm"])

    assert len(server.embedding_requests) == 4
    assert docs.vectors == await hashed([DOC + "after the storm"])


async def test_persistent_500_fails_after_every_retry(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    server.fail(100, status=500)
    embedder = ollama(client, server.url)

    with pytest.raises(EmbedderUnavailable) as failed:
        await embedder.open()

    assert len(server.embedding_requests) == RETRIES + 1
    assert "HTTP 500" in str(failed.value)
    assert f"after {RETRIES + 1} attempts" in str(failed.value)
    assert server.url in str(failed.value)


async def test_400_is_not_retried(server: EmbeddingServer, client: httpx.AsyncClient) -> None:
    server.fail(1, status=400)
    embedder = ollama(client, server.url)

    with pytest.raises(EmbedderUnavailable) as failed:
        await embedder.open()

    assert len(server.embedding_requests) == 1
    assert "HTTP 400" in str(failed.value)


async def test_a_server_slower_than_the_timeout_is_unavailable(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    server.delay_s = 5.0  # cut short when the server stops
    embedder = ollama(client, server.url, timeout_s=0.05, retries=1)

    with pytest.raises(EmbedderUnavailable) as failed:
        await embedder.open()

    assert "did not answer within 0.05 s" in str(failed.value)
    assert len(server.embedding_requests) == 2


async def test_nothing_listening_is_unavailable_and_named(client: httpx.AsyncClient) -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    embedder = ollama(client, url, retries=1)

    with pytest.raises(EmbedderUnavailable) as failed:
        await embedder.open()

    assert url in str(failed.value)
    assert "not reachable" in str(failed.value)


async def test_a_later_vector_of_another_dimension_is_refused(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    server.wrong_dimension_on = 2  # the probe is the first
    embedder = ollama(client, server.url)
    await embedder.open()

    with pytest.raises(EmbedderUnavailable) as failed:
        await embedder.embed_documents(["one more"])

    assert f"{server.dimension + 1}-dimensional" in str(failed.value)
    assert len(server.embedding_requests) == 2
    assert embedder.dimension == server.dimension


# --- batching, concurrency and truncation ----------------------------------------------------


async def test_texts_are_sent_in_batches_and_come_back_in_order(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    texts = [f"def handler_{i}(request): return {i}" for i in range(70)]
    embedder = ollama(client, server.url, batch_size=32)
    await embedder.open()

    together = await embedder.embed_documents(texts)

    batches = server.embedding_requests[1:]
    assert [len(r.inputs) for r in batches] == [32, 32, 6]
    assert sorted(t for r in batches for t in r.inputs) == sorted(DOC + t for t in texts)
    alone = [(await embedder.embed_documents([t])).vectors[0] for t in texts]
    assert together.vectors == alone


async def test_max_in_flight_bounds_simultaneous_requests(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    server.delay_s = 0.1
    texts = [f"text number {i}" for i in range(6)]

    unbounded = ollama(client, server.url, batch_size=1, max_in_flight=6)
    await unbounded.embed_documents(texts)
    assert server.max_concurrency > 2  # the server is slow enough for requests to overlap

    server.max_concurrency = 0
    bounded = ollama(client, server.url, batch_size=1, max_in_flight=2)
    result = await bounded.embed_documents(texts)

    assert server.max_concurrency == 2
    assert result.vectors == await hashed([DOC + t for t in texts])


async def test_a_text_longer_than_max_input_chars_is_cut_and_counted(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    embedder = ollama(client, server.url, max_input_chars=100)
    await embedder.open()

    result = await embedder.embed_documents(["short", "x" * 250, "y" * 100])
    await embedder.embed_query("q" * 300)

    assert result.truncated == 1
    documents, query = server.embedding_requests[1:]
    assert documents.inputs == [DOC + "short", DOC + "x" * 100, DOC + "y" * 100]
    assert query.inputs == [QUERY + "q" * 100]


# --- OpenAI-compatible servers ---------------------------------------------------------------


async def test_openai_vectors_follow_the_indexes_of_shuffled_data(
    server: EmbeddingServer, client: httpx.AsyncClient
) -> None:
    server.reverse_data = True
    server.api_key = "sk-test-ordered"
    embedder = OpenAICompatibleEmbedder(
        client, server.openai_url, OPENAI_MODEL, "sk-test-ordered", options()
    )
    texts = ["parse config", "open socket", "SELECT 1", "render page", "hash password"]

    await embedder.open()
    result = await embedder.embed_documents(texts)

    assert embedder.model == f"openai/{OPENAI_MODEL}"
    assert embedder.dimension == server.dimension
    assert result.vectors == await hashed(texts)
    request = server.embedding_requests[-1]
    assert request.path == "/v1/embeddings"
    assert request.payload == {"model": OPENAI_MODEL, "input": texts, "encoding_format": "float"}
    assert request.headers["authorization"] == "Bearer sk-test-ordered"


async def test_openai_refused_key_is_unavailable_and_the_key_never_shows(
    server: EmbeddingServer, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key = "sk-secret-0123456789abcdef"
    server.api_key = "sk-the-right-one"
    embedder = OpenAICompatibleEmbedder(client, server.openai_url, OPENAI_MODEL, key, options())

    with pytest.raises(EmbedderUnavailable) as failed:
        await embedder.open()

    # The key was sent, and the server echoed it in its error (as some servers do).
    (request,) = server.embedding_requests
    assert request.headers["authorization"] == f"Bearer {key}"
    error = failed.value
    assert "API key" in str(error)
    assert "401" in str(error)
    shown = [
        str(error),
        repr(error),
        repr(error.details),
        "".join(traceback.format_exception(error)),
        repr(embedder),
        caplog.text,
        *(r.getMessage() for r in caplog.records),
    ]
    assert caplog.records  # the client's requests were logged, at least by httpx
    assert not [text for text in shown if key in text]
