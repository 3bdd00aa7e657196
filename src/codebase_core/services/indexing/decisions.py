"""The decisions of an indexing run, as pure functions: what to re-chunk, whether the
repository's model allows the run, what to delete, whether to use worker processes, and how
the run ended. ``IndexingService`` asks them; they read no store and no disk."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from codebase_mcp_search.core.lexical import ANALYSER_VERSION
from codebase_mcp_search.core.models import FileError, IndexStatus, Repository, ScanEntry
from codebase_mcp_search.core.policies.one_model import HeldVectors, check_one_model


@dataclass(frozen=True, slots=True)
class Changes:
    """The scanned files against the stored hashes."""

    changed: list[ScanEntry]
    """Files to (re-)chunk, in scan order: new, edited, or every file when forced."""
    removed: list[str]
    """Stored files no longer scanned, sorted."""
    unchanged: int
    """Scanned files left as they are."""


def plan_changes(files: Sequence[ScanEntry], stored: Mapping[str, str], force: bool) -> Changes:
    """Which scanned ``files`` to re-chunk and which ``stored`` (path to content hash) to
    remove: a file is unchanged when its hash is the stored one, unless ``force``."""
    changed = [e for e in files if force or stored.get(e.path) != e.content_hash]
    scanned = {e.path for e in files}
    removed = sorted(set(stored) - scanned)
    return Changes(changed=changed, removed=removed, unchanged=len(files) - len(changed))


def rechunk_all(
    existing: Repository | None,
    model: str | None,
    dimension: int | None,
    *,
    force: bool,
    root: str,
) -> bool:
    """Whether every file of the repository must be re-chunked (and embedded) by this run.

    ``force`` asks so. A lexical-only repository gaining an embedder has no vectors to mix
    up: it is re-chunked as if forced (say, after installing the local extra). Otherwise a
    repository holding chunks keeps its model: another one raises ``ModelMismatch``. Chunks
    whose terms another version of the analyser derived (``Repository.analyser_version``)
    are re-chunked, their vectors taken from the embedding cache.
    """
    if existing is None:
        return force
    if existing.embedding_model is None and model is not None:
        return True
    stale_terms = existing.chunk_count > 0 and existing.analyser_version != ANALYSER_VERSION
    if existing.chunk_count and not force:
        held = HeldVectors(
            model=existing.embedding_model,
            dimension=existing.embedding_dimension,
            repository=existing.name,
            repository_id=existing.id,
            path=root,
        )
        check_one_model(held, model, dimension)
    return force or stale_terms


def repository_name(name: str | None, existing: Repository | None, root: str) -> str:
    """The name asked for, else the one the repository has, else the root's last part."""
    return name or (existing.name if existing else PurePath(root).name or root)


def files_to_delete(
    removed: Sequence[str],
    errors: Sequence[FileError],
    stored: Collection[str],
    scanned: Collection[str],
) -> list[str]:
    """The ``removed`` files, then those stored and still scanned that failed this run (a
    file that changed but could no longer be read keeps no stale chunks)."""
    unreadable = [e.path for e in errors if e.path in stored and e.path in scanned]
    return list(removed) + [p for p in unreadable if p not in removed]


def use_workers(workers: int, n_files: int, *, min_files: int, batch_files: int) -> bool:
    """Whether chunking ``n_files`` is worth starting ``workers`` worker processes: more than
    one, and at least ``min_files`` files and two batches (starting them costs more than
    chunking a few files in this process)."""
    return workers > 1 and n_files >= max(min_files, 2 * batch_files)


def run_status(
    *, failed_files: int, files_indexed: int, unchanged: int, to_index: int
) -> IndexStatus:
    """Failed when files had to be indexed, some failed, and none of the repository's files
    is now in the index (neither written by this run nor unchanged since the last one);
    partial when some file failed; success otherwise."""
    if failed_files and files_indexed == 0 and unchanged == 0 and to_index > 0:
        return IndexStatus.FAILED
    if failed_files:
        return IndexStatus.PARTIAL
    return IndexStatus.SUCCESS
