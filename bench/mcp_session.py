"""The README's example MCP session, run for real: this project's ``src/`` (copied to a
scratch folder) indexed with the local model into a fresh embedded Postgres, searched, and a
task tracked, all through fastmcp's in-memory client. Prints each call and its response.

    python -m bench.mcp_session [--embedder local] [--out bench/results/mcp_session.txt]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from fastmcp import Client

from codebase_mcp_search.entrypoints.mcp import build_server
from codebase_mcp_search.entrypoints.settings import Settings

SRC = Path(__file__).resolve().parents[1] / "src"
QUERY = "drop search hits that overlap lines of a better hit in the same file"
COMMIT = "9fceb02d0ae598e95dc970b74767f19372d61af8"


async def session(embedder: str) -> str:
    lines: list[str] = []
    scratch = Path(tempfile.mkdtemp(prefix="cb-session-"))
    project = scratch / "project"
    shutil.copytree(SRC, project, ignore=shutil.ignore_patterns("__pycache__"))
    settings = Settings(embedder=embedder, data_dir=scratch / "data", project="demo")
    try:
        async with Client(build_server(settings)) as c:

            async def call(name: str, args: dict[str, Any]) -> Any:
                result = await c.call_tool(name, args, raise_on_error=False)
                lines.append(f"→ {name} {json.dumps(args)}")
                lines.append(f"← {result.content[0].text}")
                return result.structured_content

            await call("index_repository", {"repo_path": str(project), "detail_level": "concise"})
            await call(
                "search_code",
                {
                    "query": QUERY,
                    "response_format": "markdown",
                    "detail_level": "concise",
                    "limit": 3,
                },
            )
            task = await call(
                "create_task",
                {
                    "title": "Merge hits that share most of their lines",
                    "planning_references": ["docs/search.md"],
                },
            )
            tid = task["id"]
            await call(
                "update_task", {"task_id": tid, "status": "in-progress", "branch": "fix/overlap"}
            )
            await call("update_task", {"task_id": tid, "status": "complete", "commit": COMMIT})
            await call("list_tasks", {"status": "in-progress"})
            await call("list_tasks", {"limit": 500})
    finally:
        from codebase_mcp_search.adapters.postgres.embedded import stop_embedded

        if (scratch / "data" / "postgres").exists():
            stop_embedded(scratch / "data" / "postgres")
        shutil.rmtree(scratch, ignore_errors=True)
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--embedder", default="local")
    p.add_argument("--out")
    args = p.parse_args()
    text = asyncio.run(session(args.embedder))
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
