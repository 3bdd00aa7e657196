"""What an index holds, table by table, to check that two code trees write the same index.

For each data directory (an embedded server's, left by ``codebase-mcp index``): every table of
every schema, its row count and an md5 of its rows sorted (as text), with the columns that
differ between any two runs left out: timestamps, and ``chunks.seq`` (insertion order, which
follows the workers' finishing order). Vectors, token counts, postings and the ANN segments'
bounds are compared.

    CODEBASE_MCP_EMBEDDER=hash CODEBASE_MCP_DATA_DIR=/tmp/a PYTHONPATH=... codebase-mcp index REPO
    python -m bench.index_digest /tmp/a /tmp/b --out bench/results/index_digest_x.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

VOLATILE = {"seq"}

TABLES = """
SELECT table_schema, table_name FROM information_schema.tables
WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'
ORDER BY 1, 2"""
COLUMNS = """
SELECT column_name, data_type FROM information_schema.columns
WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position"""


async def _digest(uri: str) -> dict[str, Any]:
    import asyncpg

    conn = await asyncpg.connect(uri)
    out: dict[str, Any] = {}
    try:
        for schema, table in await conn.fetch(TABLES):
            cols = await conn.fetch(COLUMNS, schema, table)
            keep = [c[0] for c in cols if "timestamp" not in c[1] and c[0] not in VOLATILE]
            listed = ", ".join(f'"{k}"' for k in keep)
            n, md5 = await conn.fetchrow(
                f"SELECT count(*), md5(coalesce(string_agg(x, E'\\n' ORDER BY x), '')) "
                f'FROM (SELECT ({listed})::text AS x FROM "{schema}"."{table}") s'
            )
            out[f"{schema}.{table}"] = {
                "rows": n,
                "md5": md5,
                "left_out": [c[0] for c in cols if c[0] not in keep],
            }
    finally:
        await conn.close()
    return out


def digest(data_dir: Path) -> dict[str, Any]:
    import pgserver

    server = pgserver.get_server(data_dir / "postgres", cleanup_mode="stop")
    return asyncio.run(_digest(server.get_uri()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data_dirs", type=Path, nargs=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    a, b = (digest(d) for d in args.data_dirs)
    tables = {
        name: {"same": a.get(name) == b.get(name), "a": a.get(name), "b": b.get(name)}
        for name in sorted(set(a) | set(b))
    }
    for name, t in tables.items():
        rows = t["a"]["rows"] if t["a"] else None
        print(f"{'same' if t['same'] else 'DIFFERENT'}  {name}  ({rows} rows)")
    if args.out:
        dirs = [str(d) for d in args.data_dirs]
        args.out.write_text(json.dumps({"data_dirs": dirs, "tables": tables}, indent=1))


if __name__ == "__main__":
    main()
