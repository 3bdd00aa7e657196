"""Adapter factories for the contract suites: each test gets a fresh adapter.

Later issues add Postgres factories here; every contract test then runs against them too.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from adapters.hashing import HashingEmbedder
from adapters.memory import InMemoryChunkStore, InMemoryTaskRepo
from codebase_core.ports import ChunkStore, Embedder, TaskRepo

CHUNK_STORES: dict[str, Callable[[], ChunkStore]] = {"memory": InMemoryChunkStore}
TASK_REPOS: dict[str, Callable[[], TaskRepo]] = {"memory": InMemoryTaskRepo}
EMBEDDERS: dict[str, Callable[[], Embedder]] = {
    "hash": HashingEmbedder,
    "hash-64": lambda: HashingEmbedder(dimension=64),
}


@pytest.fixture(params=sorted(CHUNK_STORES))
def chunk_store(request: pytest.FixtureRequest) -> ChunkStore:
    return CHUNK_STORES[request.param]()


@pytest.fixture(params=sorted(TASK_REPOS))
def task_repo(request: pytest.FixtureRequest) -> TaskRepo:
    return TASK_REPOS[request.param]()


@pytest.fixture(params=sorted(EMBEDDERS))
def embedder(request: pytest.FixtureRequest) -> Embedder:
    return EMBEDDERS[request.param]()
