"""Recall of a segmented ANN search against exact search, by candidates asked of each segment
and ``hnsw.ef_search``: what cheaper walks would cost.

Reads a kept index (``bench.search_latency --keep DIR`` or ``bench.million --keep DIR``: the
data directory ``DIR/data``) in place, without opening the project (no migration, nothing
written): for the first --queries questions (CoSQA's, or the generated corpus's with
``--million``; hashing embedder, 384-d), the exact top 100 by cosine distance, then the store's
unfiltered query (``vector_search.ANN_TOP``'s union of one walk per segment and the exact
tail) with each variant: ``store`` (100 candidates a segment, ``ef_search`` max(64, 150), as
the store asks), ``share:M:F`` (a segment asked for its share of the 100 times M, at least F,
``ef_search`` 1.5 times the most asked), ``ef:E`` (100 a segment, ``ef_search`` E). Reports
recall@10 and @100 (the share of returned rows within the exact 10th / 100th distance) and
the SQL's p50.

    python -m bench.ann_candidates --data DIR/data [--million] [--variant share:3:40 ...]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import time
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from bench.retrieval import emit
from bench.search_latency import cosqa_queries
from codebase_mcp_search.adapters.hashing import HashingEmbedder
from codebase_mcp_search.adapters.postgres.embedded import start_embedded, stop_embedded

CANDIDATES = 100


def _plan(variant: str, sizes: list[int]) -> tuple[list[int], int]:
    """The candidates asked of each segment and the ``ef_search`` of ``variant``."""
    total = sum(sizes)
    if variant == "store":
        return [CANDIDATES] * len(sizes), max(64, math.ceil(CANDIDATES * 1.5))
    kind, *args = variant.split(":")
    if kind == "ef":
        return [CANDIDATES] * len(sizes), int(args[0])
    times, floor = float(args[0]), int(args[1])
    asked = [min(CANDIDATES, max(floor, math.ceil(CANDIDATES * n / total * times))) for n in sizes]
    return asked, max(64, math.ceil(max(asked) * 1.5))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    pg_dir = Path(args.data) / "postgres"
    conn = await asyncpg.connect(await start_embedded(pg_dir))
    try:
        await register_vector(conn)
        await conn.execute("SET statement_timeout = 0")
        s = await conn.fetchval(
            "SELECT schema_name FROM codebase_mcp.projects WHERE id = $1", args.project
        )
        segments = [
            (int(r["lo"]), int(r["hi"]))
            for r in await conn.fetch(f'SELECT lo, hi FROM "{s}".ann_segments ORDER BY lo')
        ]
        sizes = [hi - lo for lo, hi in segments]
        if args.million:
            from bench.million import queries

            texts = queries(args.queries)
        else:
            texts = cosqa_queries(args.queries)
        embedder = HashingEmbedder(384)
        vectors = [np.asarray(await embedder.embed_query(q), dtype=np.float32) for q in texts]
        exact = [
            [
                float(r[0])
                for r in await conn.fetch(
                    f'SELECT embedding <=> $1 FROM "{s}".chunks WHERE embedding IS NOT NULL '
                    f"ORDER BY 1 LIMIT {CANDIDATES}",
                    v,
                )
            ]
            for v in vectors
        ]
        results = []
        for variant in args.variant:
            asked, ef = _plan(variant, sizes)
            branches = [
                f'(SELECT c.embedding <=> $1 AS d FROM "{s}".chunks c '
                f"WHERE c.seq > {lo} AND c.seq <= {hi} ORDER BY c.embedding <=> $1 LIMIT {n})"
                for (lo, hi), n in zip(segments, asked, strict=True)
            ]
            branches.append(
                f'(SELECT c.embedding <=> $1 AS d FROM "{s}".chunks c '
                f"WHERE c.seq > {segments[-1][1]} AND c.embedding IS NOT NULL "
                f"ORDER BY c.embedding <=> $1 LIMIT {CANDIDATES})"
            )
            sql = f"SELECT d FROM ({' UNION ALL '.join(branches)}) u ORDER BY d LIMIT {CANDIDATES}"
            await conn.execute(f"SET hnsw.ef_search = {ef}")
            lat: list[float] = []
            at10: list[float] = []
            at100: list[float] = []
            for v, cut in zip(vectors, exact, strict=True):
                t = time.perf_counter()
                got = [r[0] for r in await conn.fetch(sql, v)]
                lat.append((time.perf_counter() - t) * 1000)
                at10.append(sum(d <= cut[9] + 1e-6 for d in got[:10]) / 10)
                at100.append(sum(d <= cut[-1] + 1e-6 for d in got) / len(cut))
            results.append(
                {
                    "variant": variant,
                    "asked": asked,
                    "ef_search": ef,
                    "recall_at_10": round(statistics.fmean(at10), 3),
                    "recall_at_100": round(statistics.fmean(at100), 3),
                    "p50_ms": round(statistics.median(lat), 1),
                }
            )
            print(results[-1], flush=True)
    finally:
        await conn.close()
        if not args.keep_server:
            stop_embedded(pg_dir)
    return {
        "segments": len(segments),
        "vectors": sum(sizes),
        "queries": args.queries,
        "runs": results,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", required=True, help="the data directory of a kept index")
    p.add_argument("--project", default="default")
    p.add_argument("--million", action="store_true", help="the generated corpus's questions")
    p.add_argument("--variant", action="append", help="store, share:M:F or ef:E")
    p.add_argument("--queries", type=int, default=40)
    p.add_argument("--keep-server", action="store_true", help="leave Postgres running")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    args.variant = args.variant or ["store", "share:3:40", "share:2:30", "ef:100", "ef:120"]
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
