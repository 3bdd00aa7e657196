"""HNSW parameters on a real index: segment build time, recall@10 against exact search, latency.

Reads the vectors of an index kept by ``bench.search_latency --keep DIR`` (the data directory
``DIR/data``), copies them to a scratch table, and for each (m, ef_construction) builds partial
HNSW indexes over the same seq ranges as the project's segments (one process, no parallel
workers, ``maintenance_work_mem`` 512 MB). Then for each ``hnsw.ef_search`` it runs the first
--queries CoSQA questions (hashing embedder, 384-d) as the union-of-segments top-10 query the
store runs, twice, and reports p50/p95 of the SQL alone and recall@10: the share of returned
rows whose distance is within the exact 10th-nearest distance (ties count as hits).

    python -m bench.ann_tuning --data DIR/data [--config 16,40 --config 10,40] [--ef 40,64]
"""

from __future__ import annotations

import argparse
import asyncio
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


async def run(args: argparse.Namespace) -> dict[str, Any]:
    pg_dir = Path(args.data) / "postgres"
    conn = await asyncpg.connect(await start_embedded(pg_dir))
    try:
        await register_vector(conn)
        s = await conn.fetchval(
            "SELECT schema_name FROM codebase_mcp.projects WHERE id = $1", args.project
        )
        segments = [
            (int(r["lo"]), int(r["hi"]))
            for r in await conn.fetch(f'SELECT lo, hi FROM "{s}".ann_segments ORDER BY lo')
        ]
        await conn.execute("DROP TABLE IF EXISTS bench_ann")
        await conn.execute(
            f'CREATE TABLE bench_ann AS SELECT seq, embedding FROM "{s}".chunks '
            "WHERE embedding IS NOT NULL"
        )
        n = await conn.fetchval("SELECT count(*) FROM bench_ann")
        embedder = HashingEmbedder(384)
        vectors = [
            np.asarray(await embedder.embed_query(q), dtype=np.float32)
            for q in cosqa_queries(args.queries)
        ]
        tenth = [
            max(
                r[0]
                for r in await conn.fetch(
                    "SELECT embedding <=> $1 FROM bench_ann ORDER BY embedding <=> $1 LIMIT 10", v
                )
            )
            for v in vectors
        ]
        branches = " UNION ALL ".join(
            f"(SELECT embedding <=> $1 AS d FROM bench_ann WHERE seq > {lo} AND seq <= {hi} "
            "ORDER BY embedding <=> $1 LIMIT 10)"
            for lo, hi in segments
        )
        sql = f"SELECT d FROM ({branches}) u ORDER BY d LIMIT 10"
        await conn.execute("SET maintenance_work_mem = '512MB'")
        await conn.execute("SET max_parallel_maintenance_workers = 0")
        results = []
        for m, efc in args.config:
            for (name,) in await conn.fetch(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'bench_ann'"
            ):
                await conn.execute(f'DROP INDEX "{name}"')
            t = time.perf_counter()
            for lo, hi in segments:
                await conn.execute(
                    f"CREATE INDEX ON bench_ann USING hnsw (embedding vector_cosine_ops) "
                    f"WITH (m = {m}, ef_construction = {efc}) WHERE seq > {lo} AND seq <= {hi}"
                )
            build = time.perf_counter() - t
            await conn.execute("VACUUM ANALYZE bench_ann")
            for ef in args.ef:
                await conn.execute(f"SET hnsw.ef_search = {ef}")
                lat: list[float] = []
                hits: list[float] = []
                for _ in range(2):
                    for v, cut in zip(vectors, tenth, strict=True):
                        t = time.perf_counter()
                        got = [r[0] for r in await conn.fetch(sql, v)]
                        lat.append((time.perf_counter() - t) * 1000)
                        hits.append(sum(d <= cut + 1e-6 for d in got) / 10)
                lat.sort()
                results.append(
                    {
                        "m": m,
                        "ef_construction": efc,
                        "build_seconds": round(build, 1),
                        "ef_search": ef,
                        "recall_at_10": round(statistics.fmean(hits), 3),
                        "p50_ms": round(statistics.median(lat), 1),
                        "p95_ms": round(lat[int(0.95 * len(lat))], 1),
                    }
                )
                print(results[-1], flush=True)
        await conn.execute("DROP TABLE bench_ann")
    finally:
        await conn.close()
        stop_embedded(pg_dir)
    return {"vectors": n, "segments": len(segments), "queries": args.queries, "runs": results}


def _pair(text: str) -> tuple[int, int]:
    m, efc = text.split(",")
    return int(m), int(efc)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", required=True, help="the data directory of a kept index")
    p.add_argument("--project", default="default")
    p.add_argument("--config", type=_pair, action="append", help="m,ef_construction")
    p.add_argument("--ef", type=lambda x: [int(v) for v in x.split(",")], default=[40, 64, 100])
    p.add_argument("--queries", type=int, default=60)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    args.config = args.config or [(16, 40), (12, 32), (10, 40)]
    emit(asyncio.run(run(args)), args.out)


if __name__ == "__main__":
    main()
