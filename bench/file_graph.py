"""A repository's file reference graph and each file's centrality (issue 36, round six).

Built from the chunks a ``bench.replay`` recording keeps (every chunk of every file), by two
language-agnostic rules:

- **imports**: a line that imports, includes, requires or uses (``import``, ``from``,
  ``#include``, ``require``, ``use``, ``alias``, ``load``, ...) names another file by a
  path-like word (``"../core/index.js"``, ``"internal.h"``, ``'lspconfig.util'``,
  ``cats.syntax.functor``): its last part is the file's stem (or the folder of an entry file,
  ``mod.rs``, ``index.ts``, ``__init__.py``, ``init.lua``), its earlier parts the end of the
  file's folder as far as they go; of the files left, those nearest the importer's folder
  (relative imports resolve from there). An edge of weight 1 split among the files left.
- **defuse**: a file uses a name another file defines (the last part of a chunk's symbol,
  four letters or more, as an identifier in the user's text): an edge of weight 1 / (number
  of files defining it), the strongest such name per pair.

Per file: in-degree (weighted, from other files) and PageRank (damping 0.85, weights
normalised per source, a file naming none spreads its rank evenly), times the number of files
(1: the mean). ``bench.centrality`` measures them as ranking evidence.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from codebase_mcp_search.core.models import Chunk
from codebase_mcp_search.core.ranking import paths

FileKey = tuple[str, str]

# A line that brings another file or module in, in the languages of the evals and most others.
_IMPORT_LINE = re.compile(
    r"^\s*(?:#\s*include|#\s*import|import|from|export\s+.*\bfrom|require|require_relative|"
    r"use|using|alias|load|source|mod|open|include|extern\s+crate|@import)\b"
    r"|\brequire\s*\(|\bimport\s*\(|\brequire_relative\b"
)
_QUOTED = re.compile(r"""["'<]([^"'<>\s]+)[">']""")
_DOTTED = re.compile(r"[A-Za-z_][\w]*(?:(?:\.|::|/)[A-Za-z_][\w]*)+")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_SPLIT = re.compile(r"::|[./\\]")
ENTRY = frozenset({"mod", "index", "init", "__init__", "lib", "main"})
_EXTENSIONS = re.compile(
    r"\.(?:[jt]sx?|mjs|cjs|[ch](?:pp|xx|c)?|hh|py|rs|go|lua|rb|ex|exs|"
    r"scala|kt|java|swift|sh|bash)$"
)


def file_texts(chunks: Iterable[Chunk]) -> dict[FileKey, list[Chunk]]:
    by_file: dict[FileKey, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_file[(c.repository_id, c.file_path)].append(c)
    return by_file


def _parts(path: str) -> tuple[list[str], str]:
    """A file's folders and the name an import calls it by (an entry file: its folder's)."""
    folders = path.split("/")[:-1]
    stem = paths.split_path(path)[1]
    if stem.lower() in ENTRY and folders:
        return folders[:-1], folders[-1]
    return folders, stem


def import_edges(files: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """``imports`` (module docstring): importer -> imported -> weight; ``files``: path -> text."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for f in files:
        by_name[paths.normalise_name(_parts(f)[1])].append(f)
    edges: dict[str, dict[str, float]] = defaultdict(dict)
    for src, text in files.items():
        src_dir = src.split("/")[:-1]
        for line in text.splitlines():
            if len(line) > 300 or not _IMPORT_LINE.search(line):
                continue
            words = _QUOTED.findall(line) or _DOTTED.findall(line) or _IDENT.findall(line)[1:]
            for word in words:
                ext = _EXTENSIONS.search(word)
                family = _family(ext.group()[1:]) if ext else None
                segs = [s for s in _SPLIT.split(_EXTENSIONS.sub("", word)) if s and s != ".."]
                for k in range(len(segs), 0, -1):  # `a.b.C` may name file b with C in it
                    found = _resolve(segs[:k], src, src_dir, by_name, family)
                    if found:
                        for t in found:
                            edges[src][t] = max(edges[src].get(t, 0.0), 1.0 / len(found))
                        break
    return edges


# An extension named in an import: the file's must be of its kind (``<sys/process.h>`` is no
# ``process.c``; ``"./schemas.js"`` is ``schemas.ts`` compiled).
_FAMILIES = {
    **dict.fromkeys(("js", "jsx", "mjs", "cjs", "ts", "tsx"), "script"),
    **dict.fromkeys(("h", "hh", "hpp", "hxx"), "header"),
    **dict.fromkeys(("c", "cc", "cpp", "cxx"), "c source"),
}


def _family(ext: str) -> str:
    return _FAMILIES.get(ext.lower(), ext.lower())


def _resolve(
    segs: list[str], src: str, src_dir: list[str], by_name: Any, family: str | None = None
) -> list[str]:
    cands = [
        f
        for f in by_name.get(paths.normalise_name(segs[-1]), ())
        if f != src and (family is None or _family(paths.split_path(f)[2]) == family)
    ]
    if not cands:
        return []
    want = [paths.normalise_name(s) for s in segs[:-1]]

    def suffix(f: str) -> int:
        folders = [paths.normalise_name(s) for s in _parts(f)[0]]
        n = 0
        while n < min(len(want), len(folders)) and want[-1 - n] == folders[-1 - n]:
            n += 1
        return n

    def near(f: str) -> int:
        folders = f.split("/")[:-1]
        n = 0
        while n < min(len(folders), len(src_dir)) and folders[n] == src_dir[n]:
            n += 1
        return n

    best = max(suffix(f) for f in cands)
    cands = [f for f in cands if suffix(f) == best]
    closest = max(near(f) for f in cands)
    return [f for f in cands if near(f) == closest]


def defuse_edges(chunks: Mapping[str, list[Chunk]]) -> dict[str, dict[str, float]]:
    """``defuse`` (module docstring): user -> definer -> weight."""
    defined: dict[str, set[str]] = defaultdict(set)
    for f, cs in chunks.items():
        for c in cs:
            if c.symbol:
                name = re.split(r"::|[.#:]", c.symbol)[-1]
                if len(name) >= 4:
                    defined[name].add(f)
    edges: dict[str, dict[str, float]] = defaultdict(dict)
    for f, cs in chunks.items():
        used = set().union(*(_IDENT.findall(c.content) for c in cs))
        for name in used & defined.keys():
            owners = defined[name]
            if f in owners:
                continue
            for t in owners:
                edges[f][t] = max(edges[f].get(t, 0.0), 1.0 / len(owners))
    return edges


def pagerank(nodes: Sequence[str], edges: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """PageRank (damping 0.85) over weighted edges, dangling mass spread evenly."""
    n = len(nodes)
    index = {f: i for i, f in enumerate(nodes)}
    m = np.zeros((n, n))
    for s, outs in edges.items():
        total = sum(outs.values())
        for t, w in outs.items():
            m[index[t], index[s]] += w / total
    dangling = m.sum(axis=0) == 0
    pr = np.full(n, 1.0 / n)
    for _ in range(100):
        new = 0.15 / n + 0.85 * (m @ pr + pr[dangling].sum() / n)
        if np.abs(new - pr).sum() < 1e-10:
            pr = new
            break
        pr = new
    return {f: float(pr[index[f]]) for f in nodes}


def centralities(data: dict[str, Any]) -> dict[str, dict[FileKey, float]]:
    """Per measure (``imports_in``, ``imports_pr``, ``defuse_in``, ``defuse_pr``): each file's
    centrality, keyed by (repository id, path); PageRank times the repository's files."""
    out: dict[str, dict[FileKey, float]] = defaultdict(dict)
    by_repo: dict[str, dict[str, list[Chunk]]] = defaultdict(dict)
    for (rid, f), cs in file_texts(data["chunks"]).items():
        by_repo[rid][f] = sorted(cs, key=lambda c: c.start_line)
    for rid, chunks in by_repo.items():
        texts = {f: "\n".join(c.content for c in cs) for f, cs in chunks.items()}
        nodes = sorted(chunks)
        for name, edges in (("imports", import_edges(texts)), ("defuse", defuse_edges(chunks))):
            indeg: dict[str, float] = defaultdict(float)
            for outs in edges.values():
                for t, w in outs.items():
                    indeg[t] += w
            pr = pagerank(nodes, edges)
            for f in nodes:
                out[f"{name}_in"][(rid, f)] = indeg.get(f, 0.0)
                out[f"{name}_pr"][(rid, f)] = pr[f] * len(nodes)
    return out


def log_scaled(values: Mapping[FileKey, float]) -> dict[FileKey, float]:
    """``log(1 + c) / log(1 + max c)`` per repository (1 everywhere when nothing is named)."""
    most: dict[str, float] = defaultdict(float)
    for (rid, _), v in values.items():
        most[rid] = max(most[rid], v)
    return {
        k: math.log1p(v) / math.log1p(most[k[0]]) if most[k[0]] > 0 else 1.0
        for k, v in values.items()
    }
