"""The README's examples run as written: the library example, the MCP client snippet."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_library_example_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    example = re.search(r"```python\n(.*?)```", readme, re.DOTALL)
    assert example is not None
    proc = subprocess.run(
        [sys.executable, "-c", example.group(1)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    # The function that collapses duplicate hits, and where a search calls it.
    assert "codebase_core/services/hits.py" in proc.stdout
    assert "codebase_core/services/search/service.py" in proc.stdout


async def test_client_configuration_snippet_starts_the_server(tmp_path: Path) -> None:
    """The Claude Desktop / Cursor snippet, with its placeholder path pointed at this install."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```json\n(\{\n  \"mcpServers\".*?)```", readme, re.DOTALL)
    assert block is not None
    server = json.loads(block.group(1))["mcpServers"]["codebase"]
    placeholder = "/path/to/codebase-mcp/.venv/bin/codebase-mcp"
    assert server["command"] == placeholder
    assert f"-- {placeholder} serve" in readme  # the Claude Code line runs the same command
    params = StdioServerParameters(
        command=str(Path(sys.executable).with_name("codebase-mcp")),
        args=server["args"],
        env={**os.environ, **server["env"]},
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
    assert len(tools) == 13
