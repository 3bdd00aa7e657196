"""SQL in the Postgres adapter: named statements filled in only by ``adapters.postgres.sql``.

The scan reads every module of ``src/adapters/postgres`` and fails on SQL text built any other
way (an f-string, ``%`` or ``str.format``, concatenation with a run-time value, a joined list)
and on SQL written inline in a driver call instead of a named statement. It is checked first
against the patterns it must catch.
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from codebase_mcp_search.adapters.postgres.sql import (
    Sql,
    Statement,
    all_of,
    part,
    quote_ident,
    union_all,
)

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "adapters" / "postgres"
HELPER = PACKAGE / "sql.py"

# What makes a piece of text SQL: a keyword in capitals, a bound parameter's "$", or a
# qualified column compared ("c.repo_id = ").
_KEYWORD = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|VACUUM|ANALYZE|LOCK|SET|RESET|SHOW|"
    r"WITH|FROM|WHERE|JOIN|UNION|LIMIT|RETURNING|VALUES|AND|OR|NOT|NULL|ANY)\b"
)
_COLUMN = re.compile(r"\b[a-z]\.[a-z_]+\s*(=|<|>|&&|<=>)")
_DRIVER_CALLS = {"execute", "executemany", "fetch", "fetchrow", "fetchval", "prepare", "cursor"}


def _sqlish(text: str) -> bool:
    return bool(_KEYWORD.search(text) or _COLUMN.search(text) or "$" in text)


def _message(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether ``node`` is (inside) an argument of an exception's constructor or a log call:
    a message for people, which may name SQL ("CREATE EXTENSION vector needs it")."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            owner = func.value if isinstance(func, ast.Attribute) else None
            if name[:1].isupper() or (isinstance(owner, ast.Name) and owner.id == "log"):
                return True
    return False


def _leaves(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _leaves(node.left) + _leaves(node.right)
    return [node]


def _constant_text(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def findings(source: str, name: str = "<source>") -> list[str]:
    """SQL text built by hand in ``source``: one line per place."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: list[tuple[int, str]] = []

    def report(node: ast.expr, what: str) -> None:
        found.append((node.lineno, what))

    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            pieces = [_constant_text(v) or "" for v in node.values]
            if _sqlish(" ".join(pieces)) and not _message(node, parents):
                report(node, "SQL in an f-string")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            text = _constant_text(node.left)
            if text is not None and _sqlish(text):
                report(node, "SQL formatted with %")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            if isinstance(parents.get(node), ast.BinOp):
                continue  # the whole chain is looked at once, from its top
            leaves = _leaves(node)
            sql = any(_sqlish(_constant_text(x) or "") for x in leaves)
            # Constants only: string literals and module-level constants (UPPER_CASE names).
            runtime = [
                x
                for x in leaves
                if _constant_text(x) is None and not (isinstance(x, ast.Name) and x.id.isupper())
            ]
            if sql and runtime:
                report(node, "SQL concatenated with a run-time value")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, owner = node.func.attr, node.func.value
            if attr in {"format", "format_map"}:
                report(node, f"str.{attr} (SQL is filled in by adapters.postgres.sql)")
            elif attr == "join" and _sqlish(_constant_text(owner) or ""):
                report(node, "SQL pieces joined by hand")
            elif attr in _DRIVER_CALLS and node.args:
                first = node.args[0]
                if isinstance(first, ast.JoinedStr) or _sqlish(_constant_text(first) or ""):
                    report(node, f"SQL written inline in {attr}() (name the statement)")
    return [f"{name}:{line}: {what}" for line, what in sorted(found)]


def test_the_scan_catches_sql_built_by_hand() -> None:
    bad = textwrap.dedent(
        """
        async def f(conn, s, lo, flt, tables, schema):
            await conn.fetch(f"SELECT id FROM {s}.chunks WHERE seq > {lo}")
            await conn.execute("VACUUM (ANALYZE) " + ", ".join(tables))
            cond = f"c.repo_id = {flt}"
            param = f"${lo + 1}"
            await conn.execute(MIGRATION.format(s=s))
            text = "SELECT * FROM %s.files" % s
            branches = " UNION ALL ".join(flt)
            await conn.fetchval("SELECT 1")
            query = "SELECT n FROM " + schema + ".meta"
        """
    )
    assert [line.split(":", 1)[1] for line in findings(bad)] == [
        "3: SQL in an f-string",
        "3: SQL written inline in fetch() (name the statement)",
        "4: SQL concatenated with a run-time value",
        "5: SQL in an f-string",
        "6: SQL in an f-string",
        "7: str.format (SQL is filled in by adapters.postgres.sql)",
        "8: SQL formatted with %",
        "9: SQL pieces joined by hand",
        "10: SQL written inline in fetchval() (name the statement)",
        "11: SQL concatenated with a run-time value",
    ]


def test_the_scan_leaves_named_statements_and_messages_alone() -> None:
    good = textwrap.dedent(
        """
        PING = "SELECT 1"
        FILES = Statement("SELECT path FROM {s}.files WHERE repo_id = $1")
        NOTIFY = "SELECT pg_notify('" + CHANNEL + "', 'x')"

        async def f(conn, db, url):
            await conn.fetchval(PING)
            await conn.fetch(db.sql(FILES), "r1")
            if not url:
                raise StoreUnavailable(f"at {url}: CREATE EXTENSION vector needs pgvector")
            log.debug("not read: %s", url)
            name = f"embedded:{url}"
        """
    )
    assert findings(good) == []


def test_no_sql_is_built_by_hand_in_the_postgres_adapter() -> None:
    modules = sorted(p for p in PACKAGE.rglob("*.py") if p != HELPER)
    assert len(modules) > 20
    found = [
        line
        for path in modules
        for line in findings(path.read_text(), str(path.relative_to(PACKAGE)))
    ]
    assert found == [], "\n".join(found)


# --- the helper ---------------------------------------------------------------------------


def test_a_statement_fills_in_a_quoted_schema_once() -> None:
    files = Statement("SELECT path FROM {s}.files WHERE repo_id = $1")
    text = files.at("cb_proj_app_1234abcd")
    assert text == 'SELECT path FROM "cb_proj_app_1234abcd".files WHERE repo_id = $1'
    # A plain str to run (asyncpg takes no subclass), made once and kept.
    assert type(text) is str and files.at("cb_proj_app_1234abcd") is text
    assert isinstance(files.piece("cb_proj_app_1234abcd"), Sql)
    for bad in ('x"; DROP TABLE t; --', "Upper", "a" * 64, ""):
        with pytest.raises(ValueError, match="unexpected identifier"):
            files.at(bad)


def test_slots_take_only_integers_and_sql_made_here() -> None:
    branch = Statement("(SELECT c.seq FROM {s}.chunks c WHERE {where} LIMIT {limit})")
    where = Statement("c.seq > {lo} AND c.file_ext = ${p}").piece(lo=10, p=3)
    assert branch.at("s1", where=where, limit=5) == (
        '(SELECT c.seq FROM "s1".chunks c WHERE c.seq > 10 AND c.file_ext = $3 LIMIT 5)'
    )
    text_to_run = Statement("c.language = $4").at()
    for value in ("5; DROP TABLE t", True, 1.5, None, text_to_run):
        with pytest.raises(TypeError, match="takes an int or Sql"):
            branch.at("s1", where=where, limit=value)  # type: ignore[arg-type]
    assert all_of([]) == "true"
    assert all_of([where, Statement("c.language = $4").piece()]).count(" AND ") == 2
    with pytest.raises(TypeError, match="not made by"):
        union_all([where, "(SELECT 1)"])  # type: ignore[list-item]


def test_parts_are_constants_put_in_at_definition() -> None:
    columns = "c.id, c.content"
    chunk = Statement("SELECT {columns} FROM {s}.chunks c WHERE {where}", columns=columns)
    assert chunk.template == "SELECT c.id, c.content FROM {s}.chunks c WHERE {where}"
    assert (
        part(
            "'{{}}' AND {s}.x",
        )
        == "'{{}}' AND {s}.x"
    )  # escapes left for the rendering
    with pytest.raises(ValueError, match="no slot"):
        Statement("SELECT 1", columns=columns)
    assert quote_ident("ann_1_2") == '"ann_1_2"'
