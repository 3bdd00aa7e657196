"""Shared parts of the indexing tests: a small repository, the real chunker and token counter,
and test doubles of the store, tree and embedder that count or hold what they are asked."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.memory import InMemoryChunkStore, InMemorySourceTree
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.core.models import Embeddings, IndexRequest, IndexResult, VectorResult
from codebase_mcp_search.core.services import IndexingService
from tests.factories import THREADS

ROOT = "/repo"
TOKENS = TiktokenCounter()
CHUNKER = TreeSitterChunker(TOKENS, min_tokens=0)

FILES = {
    "app/auth.py": "import hashlib\n\n\ndef hash_password(pw):\n    return hashlib.sha256(pw.encode()).hexdigest()\n\n\ndef check_password(pw, digest):\n    return hash_password(pw) == digest\n",
    "app/server.go": 'package main\n\nfunc main() {\n\tprintln("hi")\n}\n',
    "README.md": "# Demo\n\nA tiny repository.\n",
}


class CountingEmbedder(HashingEmbedder):
    """A hashing embedder that counts what it was asked to embed."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension, inline=False)  # stands for a model: two layers
        self.embedded: list[str] = []

    async def embed_documents(self, texts: Sequence[str]) -> Embeddings:
        self.embedded.extend(texts)
        return await super().embed_documents(texts)


class HeldStore(InMemoryChunkStore):
    """Each write waits until the test releases it."""

    def __init__(self) -> None:
        super().__init__()
        self.writing = asyncio.Event()
        self.release = asyncio.Event()

    async def replace_files(self, repository_id, files):  # type: ignore[no-untyped-def]
        self.writing.set()
        await self.release.wait()
        await super().replace_files(repository_id, files)


def new_service(
    tree: InMemorySourceTree, store: InMemoryChunkStore, embedder: HashingEmbedder | None
) -> IndexingService:
    """A service writing batches of two files."""
    return IndexingService(
        store, tree, CHUNKER, TOKENS, embedder, batch_files=2, chunking_pool=THREADS
    )


def numbered_files(n: int, edited: Sequence[int] = ()) -> dict[str, bytes]:
    """``n`` one-function files ``m<i>.py``; those in ``edited`` with a comment added."""
    return {
        f"m{i}.py": f"def f{i}():\n    return {i}{'  # edited' if i in edited else ''}\n".encode()
        for i in range(n)
    }


def dump(chunks: Sequence[object]) -> list[str]:
    """Chunks as sorted JSON, to compare two indexes field for field."""
    return sorted(c.model_dump_json() for c in chunks)  # type: ignore[attr-defined]


async def index_both(
    service: IndexingService, request: IndexRequest
) -> tuple[IndexResult, VectorResult]:
    """Both layers, in order: the lexical run, then the vectors it left missing."""
    lexical = await service.index(request)
    return lexical, await service.build_vectors(request)
