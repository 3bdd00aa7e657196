"""Files a question names by their path, as lexical candidates.

BM25 reads a file's path as two more words of each of its chunks, so a file whose name says
what the question asks ("color definitions" -> ``lib/colors.bash``) can miss the list when its
word is common in the bodies of others (every theme of a shell framework speaks of colours)
and its own chunks are long. The ranking's path gain would lift it, but only a candidate
gains. So a lexical list (lexical mode's, and the one a hybrid search fuses) takes, over all
the paths of each repository searched (not only the candidates'), the files whose path holds the most of the question's words (``path_share``,
each word weighed by how few paths hold it, as the gain weighs it), at least
``RankingConfig.path_file_share`` of them, and adds the best chunk of each of the first
``RankingConfig.path_files`` not among the candidates already: a lexical search restricted to
that file, with the list's terms and stem groups, so its score is a BM25 score of the same
query. A file none of whose chunks holds a term adds nothing. The words are weighed over the
repository's paths in the search's directory (its language and file type filters apply to the
chunk asked for).

Each repository's path words are kept (``PathIndex``) until its file or chunk count or its
index time changes (a run, a watcher's batch), read again at most every ``REFRESH_SECONDS``
(a repository being written is not read again by every search) and at least every
``MAX_AGE_SECONDS`` (a rename keeps the counts), for the ``REPOSITORIES_KEPT`` last searched.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from codebase_mcp_search.core.models import Repository, ScoredChunk, SearchFilters, StemGroup
from codebase_mcp_search.core.ports import SearchStore
from codebase_mcp_search.core.ranking import QueryProfile, RankingConfig
from codebase_mcp_search.core.ranking.path_words import PathIndex
from codebase_mcp_search.core.services.concurrency import all_of

_Key = tuple[object, ...]
# The least and the most time between two reads of a repository's paths, and the
# repositories whose paths are kept, the least recently searched let go first
# (``PathFiles._index``).
REFRESH_SECONDS = 2.0
MAX_AGE_SECONDS = 60.0
REPOSITORIES_KEPT = 16


class PathFiles:
    """Adds the files a question names by their path to a lexical list (module docstring)."""

    def __init__(self, store: SearchStore, config: RankingConfig) -> None:
        self._store = store
        self._config = config
        self._indexes: dict[str, tuple[_Key, float, PathIndex]] = {}

    @property
    def enabled(self) -> bool:
        return self._config.enabled and self._config.path_files > 0

    async def added(
        self,
        hits: list[ScoredChunk],
        profile: QueryProfile,
        terms: Sequence[str],
        groups: Sequence[StemGroup],
        filters: SearchFilters,
        repositories: Sequence[Repository],
    ) -> list[ScoredChunk]:
        """``hits`` with the best chunk of each file the question names by its path that
        none of them is from, in score order (ties by path and line, as a store's)."""
        if not self.enabled or not terms:
            return hits
        have = {(h.chunk.repository_id, h.chunk.file_path) for h in hits}
        named: list[tuple[float, str, str]] = []
        for repo in repositories:
            index = await self._index(repo)
            shares = index.shares(profile, self._config.path_word_floor, filters.directory)
            named += [
                (-share, repo.id, path)
                for path, share in shares.items()
                if share >= self._config.path_file_share and (repo.id, path) not in have
            ]
        named.sort()
        # At once: a pooled store asks on several connections.
        asked = await all_of(
            [
                self._store.lexical_search(
                    terms,
                    filters.model_copy(update={"repository_id": repository_id, "directory": path}),
                    1,
                    groups,
                )
                for _, repository_id, path in named[: self._config.path_files]
            ]
        )
        extra = [
            h
            for (_, _, path), (found, _) in zip(named, asked, strict=False)
            for h in found
            if h.chunk.file_path == path
        ]
        if not extra:
            return hits
        return sorted([*hits, *extra], key=ScoredChunk.store_order)

    async def _index(self, repo: Repository) -> PathIndex:
        key: _Key = (repo.indexed_at, repo.file_count, repo.chunk_count)
        kept = self._indexes.pop(repo.id, None)
        now = time.monotonic()
        # While a repository is written (its first run: every search sees new counts) its
        # paths are read again at most every REFRESH_SECONDS: a file named by its path joins
        # a moment later, and one deleted meanwhile adds nothing. Unchanged counts may hide
        # a rename (until the run's end moves ``indexed_at``): read again after MAX_AGE.
        if kept is not None:
            age = now - kept[1]
            if age < REFRESH_SECONDS or (kept[0] == key and age < MAX_AGE_SECONDS):
                self._indexes[repo.id] = kept  # the most recent last
                return kept[2]
        index = PathIndex.of(await self._store.file_hashes(repo.id))
        self._indexes[repo.id] = (key, now, index)
        while len(self._indexes) > REPOSITORIES_KEPT:
            del self._indexes[next(iter(self._indexes))]
        return index
