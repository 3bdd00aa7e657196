"""The recorded store of ``bench.replay``: a proxy that records the searches made through it,
and the store and embedder that answer from those recordings alone (no index, no model).

Apart from ``bench.replay`` because other benches replay recordings through their own
services (``bench.fusion_gap``, ``bench.ltr``, ``bench.tune_fusion``).
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codebase_mcp_search.adapters.memory import InMemoryChunkStore
from codebase_mcp_search.core import defaults
from codebase_mcp_search.core.models import (
    Chunk,
    Repository,
    ScoredChunk,
    SearchFilters,
    SourceFile,
    StemGroup,
)

DEPTH = 200


class RecordingStore:
    """A store proxy that records the searches made through it: each vector and lexical
    search is fetched once at ``depth`` (a top-k is the head of a longer ranked list) and
    answered from that list after."""

    def __init__(self, store: Any, depth: int = DEPTH) -> None:
        self._store = store
        self._depth = depth
        self.vector: dict[tuple[tuple[float, ...], SearchFilters], Any] = {}
        self.lexical: dict[tuple[tuple[str, ...], SearchFilters], Any] = {}
        self.stemmed: dict[tuple[Any, ...], Any] = {}
        self.defs: dict[tuple[tuple[str, ...], SearchFilters], list[Chunk]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def _head(
        self, lists: dict[Any, Any], key: Any, fetch: Any, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        if key not in lists:
            lists[key] = await fetch(self._depth)
        hits, total = lists[key]
        return hits[:limit], total

    async def vector_search(
        self, vector: Sequence[float], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        return await self._head(
            self.vector,
            (tuple(vector), filters),
            lambda depth: self._store.vector_search(vector, filters, depth),
            limit,
        )

    async def lexical_search(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        limit: int,
        stems: Sequence[StemGroup] = (),
    ) -> tuple[list[ScoredChunk], int]:
        lists, key = self._lexical_list(terms, filters, stems)
        return await self._head(
            lists,
            key,
            lambda depth: self._store.lexical_search(terms, filters, depth, stems),
            limit,
        )

    def _lexical_list(
        self, terms: Sequence[str], filters: SearchFilters, stems: Sequence[StemGroup]
    ) -> tuple[dict[Any, Any], tuple[Any, ...]]:
        """The recorded lists a lexical search belongs to, and its key there: a search with
        stem groups is another list, kept apart (``stemmed``: the lists of ``lexical`` are
        keyed by terms and filters alone, as the benches that rebuild them read them)."""
        if stems:
            return self.stemmed, (tuple(terms), filters, tuple(stems))
        return self.lexical, (tuple(terms), filters)

    async def definitions(
        self, names: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[Chunk]:
        key = (tuple(names), filters)
        if key not in self.defs:
            self.defs[key] = await self._store.definitions(names, filters, limit)
        return self.defs[key][:limit]


class _Replay(RecordingStore):
    """Answers from recorded lists; a lexical search within one file that was not recorded
    (lexical mode's files named by their path, ``services.search.path_files``, which
    recordings made before it lack) from a memory store holding the recording's chunks."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(None)
        self.vector, self.lexical, self.defs = data["vector"], data["lexical"], data["defs"]
        self.stemmed = data.get("stemmed", {})
        self._repos: list[Repository] = data["repos"]
        self._data = data

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)

    async def lexical_search(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        limit: int,
        stems: Sequence[StemGroup] = (),
    ) -> tuple[list[ScoredChunk], int]:
        lists, key = self._lexical_list(terms, filters, stems)
        if key in lists or filters.directory is None:
            return await super().lexical_search(terms, filters, limit, stems)
        store = await _chunk_store(self._data)
        return await store.lexical_search(terms, filters, limit, stems)

    async def file_hashes(
        self, repository_id: str, paths: Sequence[str] | None = None
    ) -> dict[str, str]:
        return await (await _chunk_store(self._data)).file_hashes(repository_id, paths)

    async def list_repositories(self) -> list[Repository]:
        return self._repos

    async def get_repository(self, repository_id: str) -> Repository:
        return next(r for r in self._repos if r.id == repository_id)

    async def hit_contexts(self, chunks: Sequence[Chunk]) -> dict[str, tuple[str, str]]:
        return {}


@dataclass(frozen=True)
class _File:
    """A file of a recording as ``ChunkStore.replace_files`` takes it (no text, no vectors:
    only its chunks' terms are read)."""

    file: SourceFile
    chunks: list[Chunk]
    text: str = ""
    vectors: None = None


async def store_of(data: dict[str, Any]) -> InMemoryChunkStore:
    """A memory store holding a recording's chunks: its terms are the analyser's whatever
    the constants, which the store's ``lexical_search`` reads at each search."""
    store = InMemoryChunkStore()
    files: dict[tuple[str, str], list[Chunk]] = {}
    for c in data["chunks"]:
        files.setdefault((c.repository_id, c.file_path), []).append(c)
    for repo in dict.fromkeys(r for r, _ in files):
        await store.save_repository(Repository(id=repo, name=repo, path=f"/{repo}"))
        batch = [
            _File(SourceFile(path=path, language=cs[0].language, content_hash="", size=0), cs)
            for (r, path), cs in files.items()
            if r == repo
        ]
        await store.replace_files(repo, batch)
    return store


async def _chunk_store(data: dict[str, Any]) -> InMemoryChunkStore:
    """``store_of(data)``, built once per recording (kept in it)."""
    if "_chunk_store" not in data:
        data["_chunk_store"] = await store_of(data)
    store: InMemoryChunkStore = data["_chunk_store"]
    return store


class Capturing(_Replay):
    """The recorded store, keeping the last ``semantic`` and ``lexical`` list a search
    fetched (the lists a fusion saw, for the benches that study them)."""

    def __init__(self, data: dict[str, Any]) -> None:
        super().__init__(data)
        self.last: dict[str, list[ScoredChunk]] = {}

    def forget(self) -> None:
        """Drop the lists kept (before the next search, so a mode that fetches one list
        does not show the last search's other)."""
        self.last = {}

    async def vector_search(
        self, vector: Sequence[float], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        hits, total = await super().vector_search(vector, filters, limit)
        self.last["semantic"] = hits
        return hits, total

    async def lexical_search(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        limit: int,
        stems: Sequence[StemGroup] = (),
    ) -> tuple[list[ScoredChunk], int]:
        hits, total = await super().lexical_search(terms, filters, limit, stems)
        self.last["lexical"] = hits
        return hits, total


class _Vectors:
    def __init__(self, model: str, dimension: int, vectors: dict[str, list[float]]) -> None:
        self.model, self.dimension, self._v = model, dimension, vectors

    async def embed_query(self, text: str) -> list[float]:
        return self._v[text]

    async def embed_documents(self, texts: Sequence[str]) -> Any:
        raise NotImplementedError


def load_recordings(directory: str, only: str | None = None) -> dict[str, dict[str, Any]]:
    """The recordings of ``bench.replay record`` in ``directory``: each repository's by its
    name, in name order, then CoSQA's and the own eval's as ``@cosqa`` and ``@own`` (where
    recorded); with ``only`` (group names, comma-separated: a script's ``--repos``) those
    alone, the others not read. Every one must hold its chunks (recorded since round four)."""
    d = Path(directory)
    files = {f.stem[5:]: f for f in sorted(d.glob("repo_*.pkl"))}
    files |= {f"@{n}": d / f"{n}.pkl" for n in ("cosqa", "own") if (d / f"{n}.pkl").exists()}
    wanted = set(only.split(",")) if only else set(files)
    datas = {g: pickle.loads(f.read_bytes()) for g, f in files.items() if g in wanted}
    missing = [g for g, data in datas.items() if "chunks" not in data]
    if missing:
        raise SystemExit(f"recordings without their chunks (record them again): {missing}")
    return datas


def stem_weight(data: dict[str, Any]) -> float:
    """The stem weight a replay of ``data`` searches with: the product's when the recording
    holds lists searched with stem groups, else 0 (recorded before lexical mode asked for
    them: its lexical mode is replayed as it was)."""
    return defaults.LEXICAL_STEM_WEIGHT if data.get("stemmed") else 0.0
