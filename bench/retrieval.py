"""Shared by the benchmarks: the retrieval hit rule, its metrics, and result output."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bench.harness import Bench
from codebase_mcp_search.core.models import SearchQuery, SearchResult
from codebase_mcp_search.core.ranking import RankingConfig

SLACK_LINES = 20


class Hit(Protocol):
    """Where a hit lies: a ``SearchHit``, or a ``Chunk`` a bench ranks itself. Read-only
    members, so that frozen models (whose fields cannot be set) are hits too."""

    @property
    def file_path(self) -> str: ...

    @property
    def start_line(self) -> int: ...

    @property
    def end_line(self) -> int: ...


def rank_of(hits: Sequence[Hit], path: str, start: int, end: int) -> int | None:
    """Rank (from 1) of the first hit in ``path`` overlapping ``start..end`` and at most
    ``SLACK_LINES`` lines longer than it; None when no hit qualifies."""
    for rank, h in enumerate(hits, start=1):
        if h.file_path != path:
            continue
        overlaps = h.start_line <= end and h.end_line >= start
        short = (h.end_line - h.start_line) <= (end - start) + SLACK_LINES
        if overlaps and short:
            return rank
    return None


def metrics(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks)
    return {
        "mrr@10": round(sum(1.0 / r for r in ranks if r and r <= 10) / n, 4),
        "recall@1": round(sum(1 for r in ranks if r == 1) / n, 4),
        "recall@5": round(sum(1 for r in ranks if r and r <= 5) / n, 4),
        "recall@10": round(sum(1 for r in ranks if r and r <= 10) / n, 4),
    }


def emit(result: dict[str, Any], out: str | None) -> None:
    """Print a benchmark result as JSON, and write it to ``out`` when given."""
    text = json.dumps(result, indent=2)
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + "\n")


@dataclass(frozen=True)
class Variant:
    """A ranking configuration and fusion settings to compare on one index."""

    ranking: RankingConfig
    fusion: dict[str, Any]


def ranking_variants(
    spec: str | None, extra: dict[str, dict[str, Any]] | None = None
) -> dict[str, Variant]:
    """The defaults, then each variant of ``extra`` and ``spec`` (JSON ``{name: {field:
    value}}``, RankingConfig fields, and ``"fusion": {FusionConfig field: value}``)."""
    named: dict[str, dict[str, Any]] = {"default": {}, **(extra or {})}
    if spec:
        named.update(json.loads(spec))
    out: dict[str, Variant] = {}
    for name, fields in named.items():
        fields = dict(fields)
        fusion = fields.pop("fusion", {})
        out[name] = Variant(RankingConfig(**fields), fusion)
    return out


async def ranked_search(
    bench: Bench,
    variant: Variant,
    text: str,
    mode: str,
    limit: int = 10,
    repository_id: str | None = None,
) -> SearchResult:
    """A search of ``bench``'s project with another ranking and fusion configuration."""
    service = await bench.search_service(ranking=variant.ranking, fusion=variant.fusion)
    query = SearchQuery.build(text, mode=mode, limit=limit, repository_id=repository_id)
    return await service.search(query)
