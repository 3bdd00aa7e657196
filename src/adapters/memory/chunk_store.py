"""InMemoryChunkStore: the reference ChunkStore, exact cosine over numpy and BM25 in dicts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

import numpy as np

from codebase_mcp_search.adapters.memory.vector_index import Matrix, VectorIndex, top, unit
from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.errors import RepositoryBusy, RepositoryNotFound
from codebase_mcp_search.core.models import (
    CONTEXT_LINES,
    Chunk,
    Repository,
    ScoredChunk,
    SearchFilters,
    SourceFile,
    StemGroup,
    context_lines,
    split_lines,
    symbol_names,
)
from codebase_mcp_search.core.policies.one_model import HeldVectors, check_one_model
from codebase_mcp_search.core.ports import IndexedFile


@dataclass(slots=True)
class _StoredFile:
    file: SourceFile
    text: str
    chunk_ids: list[str]


class InMemoryChunkStore:
    """Process-local ChunkStore: exact numpy cosine search and BM25 postings held in dicts.

    Every method runs without awaiting anything, so each call is atomic on the event loop:
    a reader never sees half of a ``replace_files``.
    """

    def __init__(self) -> None:
        self._repos: dict[str, Repository] = {}
        self._files: dict[str, dict[str, _StoredFile]] = {}
        self._chunks: dict[str, Chunk] = {}
        self._vectors: dict[str, Matrix] = {}
        self._postings: dict[str, dict[str, int]] = {}
        # Name -> ids of the chunks whose symbol holds it (models.symbol_names).
        self._names: dict[str, set[str]] = {}
        self._doc_len: dict[str, int] = {}
        self._total_len = 0
        # float32 arrays, not lists of Python floats: a 384-d list costs ~12 KiB, an array 1.5.
        self._cache: dict[tuple[str, str], Matrix] = {}
        self._index: VectorIndex | None = None
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    # --- repositories -------------------------------------------------------------------

    def _with_counts(self, repo: Repository) -> Repository:
        files = self._files.get(repo.id, {})
        ids = [cid for f in files.values() for cid in f.chunk_ids]
        return repo.model_copy(
            update={
                "file_count": len(files),
                "chunk_count": len(ids),
                "vector_count": sum(1 for cid in ids if cid in self._vectors),
            }
        )

    async def save_repository(self, repository: Repository) -> None:
        model = repository.embedding_model
        if model is not None:
            others = sorted(
                (
                    r
                    for rid, r in self._repos.items()
                    if rid != repository.id
                    and r.embedding_model not in (None, model)
                    and self._files.get(rid)
                ),
                key=lambda r: r.name,
            )
            if others:
                held = HeldVectors(
                    model=others[0].embedding_model,
                    dimension=others[0].embedding_dimension,
                    repository=others[0].name,
                    repository_id=others[0].id,
                    path=others[0].path,
                )
                check_one_model(held, model, repository.embedding_dimension)
            previous = self._repos.get(repository.id)
            if previous is not None and previous.embedding_model not in (None, model):
                for stored in self._files.get(repository.id, {}).values():
                    for cid in stored.chunk_ids:
                        self._vectors.pop(cid, None)
                self._index = None
        self._repos[repository.id] = repository
        self._files.setdefault(repository.id, {})

    async def get_repository(self, repository_id: str) -> Repository:
        repo = self._repos.get(repository_id)
        if repo is None:
            raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
        return self._with_counts(repo)

    async def find_repository(self, path: str) -> Repository | None:
        for repo in self._repos.values():
            if repo.path == path:
                return self._with_counts(repo)
        return None

    async def list_repositories(self) -> list[Repository]:
        repos = sorted(self._repos.values(), key=lambda r: (r.name, r.id))
        return [self._with_counts(r) for r in repos]

    async def delete_repository(self, repository_id: str) -> None:
        if repository_id not in self._repos:
            raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
        files = self._files.pop(repository_id, {})
        for stored in files.values():
            self._drop_chunks(stored.chunk_ids)
        del self._repos[repository_id]

    # --- files and chunks ---------------------------------------------------------------

    def _files_of(self, repository_id: str) -> dict[str, _StoredFile]:
        files = self._files.get(repository_id)
        if files is None or repository_id not in self._repos:
            raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
        return files

    async def file_hashes(
        self, repository_id: str, paths: Sequence[str] | None = None
    ) -> dict[str, str]:
        files = self._files.get(repository_id, {})
        wanted = files.keys() if paths is None else [p for p in paths if p in files]
        return {p: files[p].file.content_hash for p in wanted}

    async def replace_files(self, repository_id: str, files: Sequence[IndexedFile]) -> None:
        stored_files = self._files_of(repository_id)
        for f in files:
            if f.vectors is not None and len(f.vectors) != len(f.chunks):
                raise ValueError(f"{f.file.path}: {len(f.vectors)} vectors for {len(f.chunks)}")
        model = self._repos[repository_id].embedding_model
        for f in files:
            old = stored_files.pop(f.file.path, None)
            if old is not None:
                self._drop_chunks(old.chunk_ids)
            for i, chunk in enumerate(f.chunks):
                self._chunks[chunk.id] = chunk
                for name in symbol_names(chunk.symbol):
                    self._names.setdefault(name, set()).add(chunk.id)
                terms = lexical.document_terms(chunk.content, chunk.file_path, chunk.symbol)
                for term, tf in terms.items():
                    self._postings.setdefault(term, {})[chunk.id] = tf
                length = sum(terms.values())
                self._doc_len[chunk.id] = length
                self._total_len += length
                if f.vectors is not None and f.vectors[i] is not None:
                    raw = np.asarray(f.vectors[i], dtype=np.float32)
                    self._vectors[chunk.id] = unit(raw)
                    if model is not None:
                        self._cache[(model, chunk.content_hash)] = raw
            stored_files[f.file.path] = _StoredFile(
                file=f.file, text=f.text, chunk_ids=[c.id for c in f.chunks]
            )
        self._index = None

    def _drop_chunks(self, chunk_ids: Sequence[str]) -> None:
        for cid in chunk_ids:
            chunk = self._chunks.pop(cid, None)
            if chunk is None:
                continue
            for name in symbol_names(chunk.symbol):
                holders = self._names.get(name)
                if holders is not None:
                    holders.discard(cid)
                    if not holders:
                        del self._names[name]
            for term in lexical.document_terms(chunk.content, chunk.file_path, chunk.symbol):
                posting = self._postings.get(term)
                if posting is not None:
                    posting.pop(cid, None)
                    if not posting:
                        del self._postings[term]
            self._total_len -= self._doc_len.pop(cid, 0)
            self._vectors.pop(cid, None)
        self._index = None

    async def delete_files(self, repository_id: str, paths: Sequence[str]) -> int:
        stored_files = self._files.get(repository_id, {})
        removed = 0
        for path in paths:
            old = stored_files.pop(path, None)
            if old is not None:
                self._drop_chunks(old.chunk_ids)
                removed += 1
        return removed

    async def file_texts(self, repository_id: str, paths: Sequence[str]) -> dict[str, str]:
        stored_files = self._files.get(repository_id, {})
        return {p: stored_files[p].text for p in paths if p in stored_files}

    async def without_vectors(self, chunk_ids: Sequence[str]) -> set[str]:
        return {cid for cid in chunk_ids if cid in self._chunks and cid not in self._vectors}

    async def hit_contexts(self, chunks: Sequence[Chunk]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        split: dict[tuple[str, str], list[str]] = {}
        for c in chunks:
            stored = self._files.get(c.repository_id, {}).get(c.file_path)
            if stored is None or c.id not in stored.chunk_ids:
                continue
            key = (c.repository_id, c.file_path)
            if key not in split:
                split[key] = split_lines(stored.text)
            out[c.id] = context_lines(
                stored.text, c.content, c.start_line, c.end_line, CONTEXT_LINES, split[key]
            )
        return out

    async def chunks(self, repository_id: str) -> list[Chunk]:
        stored_files = self._files_of(repository_id)
        out = [self._chunks[cid] for f in stored_files.values() for cid in f.chunk_ids]
        return sorted(out, key=lambda c: (c.file_path, c.start_line, c.end_line))

    def indexing_lock(self, repository_id: str, *, wait: bool) -> AbstractAsyncContextManager[None]:
        return self._lock(repository_id, "indexed", wait)

    def vectors_lock(self, repository_id: str, *, wait: bool) -> AbstractAsyncContextManager[None]:
        return self._lock(repository_id, "given its vectors", wait)

    @asynccontextmanager
    async def _lock(self, repository_id: str, doing: str, wait: bool) -> AsyncIterator[None]:
        lock = self._locks.setdefault((repository_id, doing), asyncio.Lock())
        if lock.locked() and not wait:
            raise RepositoryBusy(
                f"repository {repository_id} is being {doing}: retry when it finishes",
                repository_id=repository_id,
            )
        async with lock:
            yield

    # --- the semantic layer -------------------------------------------------------------

    async def vector_backlog(self, repository_id: str, limit: int) -> list[Chunk]:
        out: list[Chunk] = []
        # In the order chunks were written (a dict keeps it): a backfill goes oldest first.
        for chunk in self._chunks.values():
            if len(out) >= limit:
                break
            if chunk.repository_id == repository_id and chunk.id not in self._vectors:
                out.append(chunk)
        return out

    async def set_vectors(self, repository_id: str, vectors: Mapping[str, Sequence[float]]) -> int:
        repo = self._repos.get(repository_id)
        if repo is None:
            raise RepositoryNotFound(f"no indexed repository with id {repository_id!r}")
        wanted = {
            cid: np.asarray(v, dtype=np.float32)
            for cid, v in vectors.items()
            if cid in self._chunks
            and self._chunks[cid].repository_id == repository_id
            and cid not in self._vectors
        }
        if not wanted:
            return 0
        dimension = len(next(iter(wanted.values())))
        held = self._held_dimension()
        if held is not None or repo.embedding_dimension is not None:
            # Vectors beside others of another size, or of another size than the repository
            # says, are refused as a model change would be.
            check_one_model(
                HeldVectors(
                    model=repo.embedding_model,
                    dimension=held or repo.embedding_dimension,
                    repository=repo.name,
                    repository_id=repo.id,
                    path=repo.path,
                ),
                repo.embedding_model,
                dimension,
            )
        for cid, raw in wanted.items():
            self._vectors[cid] = unit(raw)
            if repo.embedding_model is not None:
                self._cache[(repo.embedding_model, self._chunks[cid].content_hash)] = raw
        self._index = None
        return len(wanted)

    def _held_dimension(self) -> int | None:
        for vector in self._vectors.values():
            return int(vector.shape[-1])
        return None

    async def optimize(self) -> None:
        """Nothing to build: searches are exact."""

    # --- embedding cache ----------------------------------------------------------------

    async def cached_embeddings(
        self, model: str, content_hashes: Sequence[str]
    ) -> dict[str, list[float]]:
        found = {h: self._cache.get((model, h)) for h in content_hashes}
        return {h: v.tolist() for h, v in found.items() if v is not None}

    async def cache_embeddings(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        for h, v in vectors.items():
            self._cache[(model, h)] = np.asarray(v, dtype=np.float32)

    # --- search -------------------------------------------------------------------------

    async def vector_search(
        self, vector: Sequence[float], filters: SearchFilters, limit: int
    ) -> tuple[list[ScoredChunk], int]:
        if self._index is None:
            self._index = VectorIndex.of(self._vectors)
        return self._index.search(self._chunks, vector, filters, limit)

    async def lexical_search(
        self,
        terms: Sequence[str],
        filters: SearchFilters,
        limit: int,
        stems: Sequence[StemGroup] = (),
    ) -> tuple[list[ScoredChunk], int]:
        n_docs = len(self._doc_len)
        if n_docs == 0:
            return [], 0
        avg_len = self._total_len / n_docs
        lists = [
            (self._postings[t], lexical.idf(n_docs, len(self._postings[t])))
            for t in dict.fromkeys(terms)
            if t in self._postings
        ]
        lists += [g for group in stems if (g := self._group(group, n_docs)) is not None]
        raw: dict[str, float] = {}
        for postings, term_idf in lists:
            for cid, tf in postings.items():
                raw[cid] = raw.get(cid, 0.0) + lexical.term_score(
                    tf, self._doc_len[cid], avg_len, term_idf
                )
        bound = lexical.upper_bound(term_idf for _, term_idf in lists)
        matched = [
            (self._chunks[cid], lexical.normalised(score, bound))
            for cid, score in raw.items()
            if filters.matches(self._chunks[cid])
        ]
        return top(matched, limit), len(matched)

    def _group(self, group: StemGroup, n_docs: int) -> tuple[dict[str, int], float] | None:
        """A stem group's postings (its held terms' frequencies summed per chunk) and idf
        (``StemGroup``); None when no term of it is held."""
        held = [self._postings[t] for t in dict.fromkeys(group.terms) if t in self._postings]
        if not held:
            return None
        merged: dict[str, int] = {}
        for postings in held:
            for cid, tf in postings.items():
                merged[cid] = merged.get(cid, 0) + tf
        df = min(n_docs, sum(len(p) for p in held))
        return merged, group.weight * lexical.idf(n_docs, df)

    async def definitions(
        self, names: Sequence[str], filters: SearchFilters, limit: int
    ) -> list[Chunk]:
        ids = set().union(*(self._names.get(n, set()) for n in names)) if names else set()
        found = [c for c in (self._chunks[i] for i in ids) if filters.matches(c)]
        found.sort(key=lambda c: (c.file_path, c.start_line, c.end_line, c.id))
        return found[:limit]
