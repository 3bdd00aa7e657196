"""The installed distribution adds one import name, ``codebase_mcp_search``, and nothing that
another project owns (``entrypoints`` and ``adapters`` are names of PyPI projects)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = "codebase_mcp_search"


@pytest.mark.slow
def test_the_wheel_holds_one_top_level_package(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = z.read(entry_points).decode()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {OURS}
    for sub in ("core/ports/store.py", "adapters/postgres/__init__.py", "entrypoints/facade.py"):
        assert f"{OURS}/{sub}" in names
    # Package data travels with its subpackage (the default model's tokenizer).
    assert f"{OURS}/adapters/onnx/minilm/tokenizer.json" in names
    assert f"{OURS}/adapters/onnx/bert_tables.json" in names  # its tokenizer's character classes
    assert f"{OURS}/py.typed" in names
    assert f"codebase-mcp = {OURS}.entrypoints.cli.main:main" in scripts


def test_the_old_top_level_names_find_nothing_of_ours() -> None:
    for name in ("entrypoints", "adapters", "codebase_core"):
        spec = importlib.util.find_spec(name)
        assert spec is None or not str(spec.origin or "").startswith(str(ROOT)), name


def test_a_project_owning_entrypoints_keeps_its_name(tmp_path: Path) -> None:
    """The PyPI project ``entrypoints`` (a dependency of older Jupyter and flake8 installs)
    and this one in one environment: each import finds its own module."""
    (tmp_path / "entrypoints.py").write_text("def get_group_all(group):\n    return []\n")
    (tmp_path / "adapters.py").write_text("OWNER = 'another project'\n")
    script = textwrap.dedent(
        """
        import adapters, entrypoints
        from codebase_mcp_search.entrypoints.facade import open_codebase
        from codebase_mcp_search.adapters.memory import InMemoryChunkStore
        assert entrypoints.get_group_all("x") == [], entrypoints
        assert adapters.OWNER == "another project"
        print("ok")
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
