"""Build hook: one import name, ``codebase_mcp_search``, over the hexagon's folders.

The folders of ``src/`` show the hexagon (``codebase_core``, ``adapters``, ``entrypoints``);
installed, they are the subpackages ``core``, ``adapters`` and ``entrypoints`` of
``codebase_mcp_search`` (whose own files are in ``src/codebase_mcp_search``). A wheel gets that
layout from ``[tool.hatch.build.targets.wheel.sources]``. An editable install cannot rename a
folder through a ``.pth`` path, so this hook mounts the folders under the package name in a
tree of symbolic links (``build/editable``), which the editable install's ``.pth`` names
(``dev-mode-dirs``). The links point at folders, so a module added to ``src/`` is importable at
once; mypy and import-linter read the same tree (``mypy_path``), so every tool sees the one
name and nothing of ours installs ``entrypoints``, ``adapters`` or ``codebase_core``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE = "codebase_mcp_search"
LINK_ROOT = Path("build") / "editable"
MOUNTS = {"core": "codebase_core", "adapters": "adapters", "entrypoints": "entrypoints"}
"""Subpackage name -> folder of ``src/``."""


def mount(root: Path) -> Path:
    """(Re)build ``root/build/editable/codebase_mcp_search``: relative links to the package's
    own files and to each mounted folder. Returns the package directory."""
    src = root / "src"
    package = root / LINK_ROOT / PACKAGE
    if package.is_symlink() or package.is_file():
        package.unlink()
    elif package.exists():
        shutil.rmtree(package)
    package.mkdir(parents=True)
    targets = {p.name: p for p in sorted((src / PACKAGE).iterdir()) if p.name != "__pycache__"}
    targets.update({name: src / folder for name, folder in MOUNTS.items()})
    for name, target in targets.items():
        try:
            os.symlink(os.path.relpath(target, package), package / name)
        except OSError as e:  # Windows without Developer Mode: no symlinks for this user
            raise RuntimeError(
                f"an editable install links {target} into {package} and could not ({e}); "
                "install without -e, or enable symbolic links for your user"
            ) from e
    return package


class EditableNamespace(BuildHookInterface):  # type: ignore[type-arg]
    """Mounts the folders for an editable install; a wheel or sdist needs nothing."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            mount(Path(self.root))
