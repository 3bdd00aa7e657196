"""The house rules of docs/architecture.md that a tool can check: the import-linter contracts,
no import circles, small modules, and a core that starts no thread or process."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
MAX_MODULE_LINES = 400
# What hands work to another thread or process without importing threading,
# multiprocessing or concurrent (which the import-linter contracts forbid in the core).
OFF_LOOP_CALLS = {
    "to_thread",
    "run_in_executor",
    "create_subprocess_exec",
    "create_subprocess_shell",
}


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph.find_modules_directly_imported_by(module):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_circles_counting_type_checking_and_function_imports() -> None:
    graph = grimp.build_graph("codebase_mcp_search", exclude_type_checking_imports=False)
    assert _cycles(graph) == []


def test_the_circle_check_finds_a_circle(tmp_path: Path) -> None:
    package = tmp_path / "circled"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circled import b\n"
    )
    (package / "b.py").write_text("def f():\n    from circled import a\n")
    sys.path.insert(0, str(tmp_path))
    try:
        graph = grimp.build_graph("circled", exclude_type_checking_imports=False)
    finally:
        sys.path.remove(str(tmp_path))
    assert _cycles(graph) == [["circled.a", "circled.b"]]


def _sources() -> Iterator[Path]:
    yield from sorted(SRC.rglob("*.py"))


def test_no_module_over_the_line_budget() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in _sources()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_the_core_hands_no_work_to_threads_or_processes() -> None:
    calls = []
    for path in sorted((SRC / "codebase_core").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in OFF_LOOP_CALLS:
                calls.append(f"{path.relative_to(SRC)}:{node.lineno} {node.attr}")
            elif isinstance(node, ast.Name) and node.id in OFF_LOOP_CALLS:
                calls.append(f"{path.relative_to(SRC)}:{node.lineno} {node.id}")
    assert calls == []
