"""The decisions of an indexing run (``services.indexing.decisions``), without any adapter."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codebase_mcp_search.core import lexical
from codebase_mcp_search.core.errors import ModelMismatch
from codebase_mcp_search.core.models import FileError, IndexStatus, Repository, ScanEntry
from codebase_mcp_search.core.services.indexing import decisions
from tests.factories import needs_forced_reindex

_paths = st.sampled_from(["a.py", "b.py", "pkg/c.py", "README.md", "main.go", "pkg/d.py"])
_hashes = st.sampled_from(["h1", "h2", "h3"])
_scans = st.dictionaries(_paths, _hashes).map(
    lambda files: [
        ScanEntry(path=p, size=1, content_hash=h, language=None) for p, h in files.items()
    ]
)
_stored = st.dictionaries(_paths, _hashes)


@given(files=_scans, stored=_stored, force=st.booleans())
def test_changed_and_unchanged_partition_the_scan_and_removed_is_the_rest(
    files: list[ScanEntry], stored: dict[str, str], force: bool
) -> None:
    plan = decisions.plan_changes(files, stored, force)
    scanned = [e.path for e in files]
    changed = [e.path for e in plan.changed]
    assert changed == [p for p in scanned if p in changed]  # scan order
    assert len(changed) + plan.unchanged == len(scanned)
    assert plan.removed == sorted(set(stored) - set(scanned))
    assert not set(plan.removed) & set(scanned)
    for e in files:
        assert (e.path in changed) == (force or stored.get(e.path) != e.content_hash)


def test_new_edited_and_removed_files() -> None:
    files = [
        ScanEntry(path="same.py", size=1, content_hash="h1", language="python"),
        ScanEntry(path="edited.py", size=1, content_hash="h2", language="python"),
        ScanEntry(path="new.py", size=1, content_hash="h3", language="python"),
    ]
    stored = {"same.py": "h1", "edited.py": "old", "gone.py": "h4"}
    plan = decisions.plan_changes(files, stored, force=False)
    assert [e.path for e in plan.changed] == ["edited.py", "new.py"]
    assert (plan.removed, plan.unchanged) == (["gone.py"], 1)
    assert len(decisions.plan_changes(files, stored, force=True).changed) == 3


def _repo(model: str | None, dimension: int | None = None, chunks: int = 3) -> Repository:
    return Repository(
        id="r1",
        name="demo",
        path="/repos/demo",
        embedding_model=model,
        embedding_dimension=dimension,
        chunk_count=chunks,
    )


def test_a_new_repository_or_the_same_model_rechunks_only_when_forced() -> None:
    for existing in (None, _repo("m1", 64)):
        for force in (False, True):
            got = decisions.rechunk_all(existing, "m1", 64, force=force, root="/repos/demo")
            assert got is force


def test_a_lexical_only_repository_gaining_an_embedder_is_rechunked_whole() -> None:
    assert decisions.rechunk_all(_repo(None), "m1", 64, force=False, root="/repos/demo")


def test_another_model_needs_force_unless_nothing_is_indexed() -> None:
    with pytest.raises(ModelMismatch, check=needs_forced_reindex) as err:
        decisions.rechunk_all(_repo("m1", 64), "m2", 64, force=False, root="/repos/demo")
    assert err.value.details["path"] == "/repos/demo"
    assert err.value.details["repository_id"] == "r1"
    with pytest.raises(ModelMismatch):  # vectors of one model would be dropped for none
        decisions.rechunk_all(_repo("m1", 64), None, None, force=False, root="/repos/demo")
    with pytest.raises(ModelMismatch):  # same name, other size: still not comparable
        decisions.rechunk_all(_repo("m1", 64), "m1", 128, force=False, root="/repos/demo")
    assert decisions.rechunk_all(_repo("m1", 64), "m2", 64, force=True, root="/repos/demo")
    empty = _repo("m1", 64, chunks=0)
    assert not decisions.rechunk_all(empty, "m2", 64, force=False, root="/repos/demo")


def test_an_index_written_by_another_analyser_is_rechunked_whole() -> None:
    # Its postings were derived by other rules (bench/README.md, round four): every file's
    # terms are derived again, the vectors taken from the cache.
    older = _repo("m1", 64).model_copy(update={"analyser_version": lexical.ANALYSER_VERSION - 1})
    assert decisions.rechunk_all(older, "m1", 64, force=False, root="/repos/demo")
    assert not decisions.rechunk_all(_repo("m1", 64), "m1", 64, force=False, root="/repos/demo")
    empty = older.model_copy(update={"chunk_count": 0})
    assert not decisions.rechunk_all(empty, "m1", 64, force=False, root="/repos/demo")
    with pytest.raises(ModelMismatch):  # the model's rule still holds
        decisions.rechunk_all(older, "m2", 64, force=False, root="/repos/demo")


def test_repository_name_asked_else_kept_else_from_the_root() -> None:
    assert decisions.repository_name("given", _repo("m1"), "/repos/x") == "given"
    assert decisions.repository_name(None, _repo("m1"), "/repos/x") == "demo"
    assert decisions.repository_name(None, None, "/repos/x") == "x"
    assert decisions.repository_name(None, None, "/") == "/"


def _errors(*paths: str) -> list[FileError]:
    return [FileError(path=p, error="cannot decode") for p in paths]


def test_removed_files_and_changed_files_now_unreadable_are_deleted() -> None:
    stored = {"gone.py", "broke.py", "fine.py"}
    scanned = {"broke.py", "fine.py", "new_bad.py"}
    got = decisions.files_to_delete(["gone.py"], _errors("broke.py", "new_bad.py"), stored, scanned)
    assert got == ["gone.py", "broke.py"]  # new_bad.py was never stored


@given(
    stored=st.sets(_paths),
    scanned=st.sets(_paths),
    failed=st.lists(_paths, unique=True),
)
def test_only_stored_files_are_deleted_and_every_removed_one_is(
    stored: set[str], scanned: set[str], failed: list[str]
) -> None:
    removed = sorted(stored - scanned)
    got = decisions.files_to_delete(removed, _errors(*failed), stored, scanned)
    assert set(got) <= stored and len(got) == len(set(got))
    assert got[: len(removed)] == removed
    assert set(got) - set(removed) == {p for p in failed if p in stored and p in scanned}


def test_workers_start_for_many_changed_files_only() -> None:
    assert decisions.use_workers(4, 1000, min_files=1000, batch_files=64)
    assert not decisions.use_workers(4, 999, min_files=1000, batch_files=64)
    assert not decisions.use_workers(1, 10_000, min_files=1000, batch_files=64)
    assert not decisions.use_workers(4, 127, min_files=0, batch_files=64)  # two batches at least
    assert decisions.use_workers(4, 128, min_files=0, batch_files=64)


_counts = st.integers(min_value=0, max_value=5)


@given(failed=_counts, indexed=_counts, unchanged=_counts, to_index=_counts)
def test_a_run_fails_only_when_nothing_of_the_repository_is_indexed(
    failed: int, indexed: int, unchanged: int, to_index: int
) -> None:
    status = decisions.run_status(
        failed_files=failed, files_indexed=indexed, unchanged=unchanged, to_index=to_index
    )
    nothing_indexed = indexed == 0 and unchanged == 0
    assert (status is IndexStatus.FAILED) == (failed > 0 and nothing_indexed and to_index > 0)
    assert (status is IndexStatus.SUCCESS) == (failed == 0)
    assert (status is IndexStatus.PARTIAL) == (failed > 0 and not (nothing_indexed and to_index))


def test_run_status_examples() -> None:
    ok = {"files_indexed": 2, "unchanged": 0, "to_index": 2}
    assert decisions.run_status(failed_files=0, **ok) is IndexStatus.SUCCESS
    assert decisions.run_status(failed_files=1, **ok) is IndexStatus.PARTIAL
    # An unchanged re-index beside an undecodable file: the rest is searchable.
    kept = {"files_indexed": 0, "unchanged": 1, "to_index": 0}
    assert decisions.run_status(failed_files=1, **kept) is IndexStatus.PARTIAL
    lost = {"files_indexed": 0, "unchanged": 0, "to_index": 1}
    assert decisions.run_status(failed_files=1, **lost) is IndexStatus.FAILED
