"""Chunking audit of the repo-search development repositories: how the product's chunker cuts
each language, and where its grammar entries miss.

Every file of each repository's ``benchmark_root`` is listed and read as the indexer does (the
product's ``LocalSourceTree``: its skip policy and ignore files, ``language_for_path``, UTF-8
text with LF endings) and chunked by ``TreeSitterChunker`` with its default settings and the
``TiktokenCounter``. The same text is parsed once more here (as the chunker parses it) to audit
the tree (``bench.chunk_audit_tree``). Reported per language and per repository:

- files, chunks, the share of chunks by kind, the share of definition chunks (function,
  method, class) with no symbol, tokens per chunk (median, p90), chunks cut by the token
  budget (kind ``block``);
- files of a language with a grammar whose chunks are all text windows, whose tree has
  errors (with the share of the file's rows under ERROR nodes), or which have at least
  ``--min-lines`` rows and no definition chunk;
- definition-like node types the grammar entry neither lists nor looks through (counts, how
  many at an item position, 2 examples each), and unclassified items by type and rows;
- definitions never reached by the chunker (nested in a statement or a call), by parent type;
- doc comments left behind (comment rows right above a definition in no chunk holding the
  definition's first row);
- for the annotations' targets: a line span inside one chunk, or split across how many; the
  number of chunks of each target file.

Only the development repositories and their annotations are read.

    python -m bench.chunk_audit [--bench-dir ../shared/bench/repo-search] [--repos gin,serde]
        [--examples 2] [--min-lines 40] [--out bench/results/chunk_audit.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tree_sitter import Parser
from tree_sitter_language_pack import get_language

from bench.chunk_audit_tree import TreeAudit, audit_tree, span_chunks
from codebase_mcp_search.adapters.filesystem.source_tree import LocalSourceTree
from codebase_mcp_search.adapters.tokens import TiktokenCounter
from codebase_mcp_search.adapters.treesitter import TreeSitterChunker
from codebase_mcp_search.adapters.treesitter import chunker as chunker_module
from codebase_mcp_search.adapters.treesitter.chunker import GRAMMARS
from codebase_mcp_search.core.defaults import CHUNK_MAX_TOKENS, CHUNK_MIN_TOKENS
from codebase_mcp_search.core.errors import FileUnreadable
from codebase_mcp_search.core.models import ChunkDraft, split_lines

HERE = Path(__file__).resolve().parent
DEFAULT_BENCH = HERE.parent.parent / "shared" / "bench" / "repo-search"
DEFINITION_KINDS = ("function", "method", "class")


@dataclass(slots=True)
class Tally:
    """Chunk statistics of a group of files (a language or a repository)."""

    files: int = 0
    chunks: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    no_symbol: int = 0
    tokens: list[int] = field(default_factory=list)
    # Symbols of definition chunks: a name repeated across files (``namespace``) is a misparse.
    symbols: Counter[str] = field(default_factory=Counter)

    def add(self, drafts: list[ChunkDraft]) -> None:
        self.files += 1
        self.chunks += len(drafts)
        for d in drafts:
            self.kinds[d.kind or "(none)"] += 1
            if d.kind in DEFINITION_KINDS:
                if d.symbol:
                    self.symbols[d.symbol.rsplit(".", 1)[-1]] += 1
                else:
                    self.no_symbol += 1
            self.tokens.append(d.token_count or 0)

    def summary(self) -> dict[str, Any]:
        definitions = sum(self.kinds[k] for k in DEFINITION_KINDS)
        tokens = sorted(self.tokens)
        return {
            "files": self.files,
            "chunks": self.chunks,
            "kinds": {k: round(n / max(1, self.chunks), 3) for k, n in self.kinds.most_common()},
            "definitions_without_symbol": round(self.no_symbol / max(1, definitions), 3),
            "tokens_median": statistics.median(tokens) if tokens else 0,
            "tokens_p90": tokens[int(0.9 * (len(tokens) - 1))] if tokens else 0,
            "blocks": self.kinds["block"],
            "top_symbols": dict(self.symbols.most_common(5)),
        }


@dataclass(slots=True)
class NodeTally:
    """Occurrences of one node type in one language, with a few examples."""

    count: int = 0
    items: int = 0
    rows: int = 0
    examples: list[str] = field(default_factory=list)


class Audit:
    """The whole run's findings, filled file by file."""

    def __init__(self, examples: int, min_lines: int) -> None:
        self.examples = examples
        self.min_lines = min_lines
        self.by_language: dict[str, Tally] = defaultdict(Tally)
        self.by_repo: dict[str, Tally] = defaultdict(Tally)
        self.problems: list[dict[str, Any]] = []
        self.unlisted: dict[str, dict[str, NodeTally]] = defaultdict(lambda: defaultdict(NodeTally))
        self.items: dict[str, dict[str, NodeTally]] = defaultdict(lambda: defaultdict(NodeTally))
        self.hidden: dict[str, dict[str, NodeTally]] = defaultdict(lambda: defaultdict(NodeTally))
        self.comments: dict[str, Counter[str]] = defaultdict(Counter)
        self.comment_examples: dict[str, list[str]] = defaultdict(list)
        self.targets: dict[str, dict[str, Any]] = {}
        # Per file ("repo/path"), what touched it: read back for the annotations' target files.
        self.notes: dict[str, dict[str, Any]] = {}
        self._parsers: dict[str, Parser] = {}

    def file(self, repo: str, path: str, language: str | None, text: str) -> list[ChunkDraft]:
        drafts = CHUNKER.chunk(path, text, language)
        lang = language or "(none)"
        self.by_language[lang].add(drafts)
        self.by_repo[repo].add(drafts)
        if language not in GRAMMARS or not drafts:
            return drafts
        where = f"{repo}/{path}"
        kinds = {d.kind for d in drafts}
        lines = split_lines(text)
        source = "\n".join(lines) if "\r" in text else text.removesuffix("\n")
        # As the chunker parses it (the bytes its parser is given, and a C/C++ retry).
        root, encoded, _ = chunker_module.parse(
            self._parser(language), language, source.encode("utf-8", "replace")
        )
        spans = [(d.start_line - 1, d.end_line - 1) for d in drafts]
        found = audit_tree(root, encoded, GRAMMARS[language], spans)
        nonblank = sum(1 for line in lines if line.strip())
        no_definition = len(lines) >= self.min_lines and not kinds & {*DEFINITION_KINDS}
        if kinds == {"text"} or root.has_error or no_definition:
            self.problems.append(
                {
                    "file": where,
                    "language": language,
                    "lines": len(lines),
                    "all_text": kinds == {"text"},
                    "has_error": root.has_error,
                    "error_share": round(found.error_rows / max(1, nonblank), 3),
                    "root_error": found.root_error,
                    "missing_nodes": found.missing,
                    "no_definition_chunk": no_definition,
                    "kinds": dict(Counter(d.kind for d in drafts)),
                }
            )
        self._tree(language, where, found)
        self.notes[where] = {
            "kinds": dict(Counter(d.kind for d in drafts)),
            "error_share": round(found.error_rows / max(1, nonblank), 3),
            "comments_left": len(found.left),
            "unreached_definitions": len(found.hidden),
            "unlisted_definition_items": sum(at_item for *_, at_item in found.unlisted),
        }
        return drafts

    def _parser(self, language: str) -> Parser:
        parser = self._parsers.get(language)
        if parser is None:
            parser = self._parsers[language] = Parser(get_language(language))  # type: ignore[arg-type]
        return parser

    def _tree(self, language: str, where: str, found: TreeAudit) -> None:
        for node_type, row, at_item in found.unlisted:
            tally = self.unlisted[language][node_type]
            tally.count += 1
            tally.items += at_item
            if len(tally.examples) < self.examples and (at_item or tally.count > tally.items):
                tally.examples.append(f"{where}:{row + 1}")
        for node_type, row, span in found.items:
            tally = self.items[language][node_type]
            tally.count += 1
            tally.rows += span
            if len(tally.examples) < self.examples:
                tally.examples.append(f"{where}:{row + 1}")
        for parent, row, symbol in found.hidden:
            tally = self.hidden[language][parent]
            tally.count += 1
            if len(tally.examples) < self.examples:
                tally.examples.append(f"{where}:{row + 1} {symbol}")
        counts = self.comments[language]
        counts["definitions"] += found.definitions
        counts["with_comment"] += found.with_comment
        counts["left_behind"] += len(found.left)
        counts["rows_left"] += sum(c.left for c in found.left)
        counts["absorbed_by_previous"] += sum(c.absorbed for c in found.left)
        for c in found.left:
            how = "previous chunk" if c.absorbed else "own part"
            if len(self.comment_examples[language]) < 4 * self.examples:
                self.comment_examples[language].append(
                    f"{where}:{c.row + 1} {c.symbol} ({c.left}/{c.comment_rows} rows, {how})"
                )

    def annotations(
        self, repo: str, queries: list[dict[str, Any]], chunks: dict[str, list[ChunkDraft]]
    ) -> None:
        """Targets of ``repo``'s queries against its chunks (paths matched as the benchmark)."""
        spans_out: list[dict[str, Any]] = []
        files_out: dict[str, Any] = {}
        for query in queries:
            for target in [*query["relevant"], *query.get("secondary", [])]:
                path = target if isinstance(target, str) else target["path"]
                indexed = next((p for p in chunks if _same_path(p, path)), None)
                files_out[path] = (
                    {"chunks": len(chunks[indexed]), **self.notes.get(f"{repo}/{indexed}", {})}
                    if indexed is not None
                    else None
                )
                if isinstance(target, str):
                    continue
                start, end = target["start_line"], target["end_line"]
                drafts = chunks.get(indexed, []) if indexed is not None else []
                spans = [(d.start_line, d.end_line) for d in drafts]
                inside, overlapping = span_chunks(spans, start, end)
                spans_out.append(
                    {
                        "target": f"{path}:{start}-{end}",
                        "query": query["query"],
                        "indexed": indexed is not None,
                        "inside_one_chunk": inside,
                        "overlapping_chunks": overlapping,
                        "chunks": [
                            f"{d.start_line}-{d.end_line} {d.kind} {d.symbol}"
                            for d in drafts
                            if d.start_line <= end and d.end_line >= start
                        ],
                    }
                )
        self.targets[repo] = {"spans": spans_out, "file_chunks": files_out}

    def report(self) -> dict[str, Any]:
        def nodes(table: dict[str, dict[str, NodeTally]], key: str) -> dict[str, Any]:
            return {
                lang: {
                    t: {"count": n.count, "items": n.items, "rows": n.rows, "examples": n.examples}
                    for t, n in sorted(types.items(), key=lambda kv: -getattr(kv[1], key))
                }
                for lang, types in sorted(table.items())
            }

        return {
            "chunker": {"max_tokens": CHUNK_MAX_TOKENS, "min_tokens": CHUNK_MIN_TOKENS},
            "languages": {k: t.summary() for k, t in sorted(self.by_language.items())},
            "repositories": {k: t.summary() for k, t in sorted(self.by_repo.items())},
            "file_problems": sorted(self.problems, key=lambda p: -p["error_share"]),
            "unlisted_definition_types": nodes(self.unlisted, "items"),
            "unclassified_items": nodes(self.items, "rows"),
            "unreached_definitions": nodes(self.hidden, "count"),
            "comments_left_behind": {
                lang: {**counts, "examples": self.comment_examples[lang]}
                for lang, counts in sorted(self.comments.items())
            },
            "targets": self.targets,
        }


CHUNKER = TreeSitterChunker(TiktokenCounter())


def _same_path(indexed: str, target: str) -> bool:
    """The benchmark's path rule: equal, or one a ``/``-suffix of the other."""
    return indexed == target or indexed.endswith("/" + target) or target.endswith("/" + indexed)


async def _read_repo(root: Path) -> tuple[list[tuple[str, str | None, str]], dict[str, int]]:
    """(path, language, text) of every file the indexer would index, and skips by reason."""
    tree = LocalSourceTree()
    scan = await tree.scan(str(root))
    texts = await tree.read_texts(str(root), [e.path for e in scan.files])
    files = [
        (e.path, e.language, t)
        for e, t in zip(scan.files, texts, strict=True)
        if not isinstance(t, FileUnreadable)
    ]
    skipped = Counter(str(s.reason) for s in scan.skipped)
    skipped["unreadable"] += len(scan.files) - len(files)
    return files, dict(skipped)


def run(args: argparse.Namespace) -> dict[str, Any]:
    bench = Path(args.bench_dir)
    repos = json.loads((bench / "repos.json").read_text())
    wanted = set(args.repos.split(",")) if args.repos else None
    audit = Audit(args.examples, args.min_lines)
    skipped: dict[str, dict[str, int]] = {}
    for repo in repos:
        name = repo["name"]
        if wanted is not None and name not in wanted:
            continue
        root = bench / "repos" / name
        if repo["benchmark_root"]:
            root = root / repo["benchmark_root"]
        files, skipped[name] = asyncio.run(_read_repo(root))
        chunks = {path: audit.file(name, path, lang, text) for path, lang, text in files}
        annotations = bench / "annotations" / f"{name}.json"
        if annotations.exists():
            audit.annotations(name, json.loads(annotations.read_text()), chunks)
    return {**audit.report(), "skipped": skipped}


def table(result: dict[str, Any]) -> str:
    """The per-language and per-repository figures as a Markdown table."""
    kinds = ["function", "method", "class", "header", "module", "block", "text"]
    head = "| group | files | chunks | " + " | ".join(kinds) + " | no sym | tok p50 | tok p90 |"
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for section in ("languages", "repositories"):
        for name, s in result[section].items():
            shares = " | ".join(f"{s['kinds'].get(k, 0):.2f}" for k in kinds)
            out.append(
                f"| {name} | {s['files']} | {s['chunks']} | {shares} | "
                f"{s['definitions_without_symbol']:.2f} | {s['tokens_median']:g} | {s['tokens_p90']} |"
            )
        out.append("|" + "---|" * (head.count("|") - 1))
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--bench-dir", default=str(DEFAULT_BENCH))
    p.add_argument("--repos", default=None, help="comma-separated names (default: all)")
    p.add_argument("--examples", type=int, default=2, help="examples kept per finding")
    p.add_argument("--min-lines", type=int, default=40, help="a file this long with no definition")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    result = run(args)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))


if __name__ == "__main__":
    main()
