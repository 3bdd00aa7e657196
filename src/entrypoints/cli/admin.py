"""``repos`` and ``projects``: the MCP tools ``list_repositories``, ``delete_repository`` and
``list_projects``, and one repository's details."""

from __future__ import annotations

from datetime import datetime

from codebase_mcp_search.entrypoints.cli.common import Run, open_project
from codebase_mcp_search.entrypoints.cli.errors import EXIT_OK
from codebase_mcp_search.entrypoints.cli.views import (
    columns,
    dump,
    layer_text,
    projects_view,
    repositories_view,
    repository_view,
    size_text,
)
from codebase_mcp_search.entrypoints.facade import open_workspaces
from codebase_mcp_search.entrypoints.presenters import deleted_payload


def when(at: datetime | None) -> str:
    return at.astimezone().strftime("%Y-%m-%d %H:%M") if at is not None else "-"


async def repos_command(run: Run) -> int:
    a = run.args
    action = a.action or "list"
    async with open_workspaces(run.settings) as ws:
        cb = await open_project(ws, a.project, create=False)
        if action == "list":
            repos = await cb.repositories()
            layers = await cb.semantic_layers(repos)
            if a.json:
                dump(repositories_view(repos, cb.project_id, cb.database_name, layers))
            elif not repos:
                run.out.print(
                    f"No repositories in project {cb.project_id!r}: "
                    "'codebase-mcp index PATH' adds one.",
                    highlight=False,
                    markup=False,
                )
            else:
                rows = [
                    (
                        r.id,
                        r.name,
                        r.file_count,
                        r.chunk_count,
                        layer_text(layers.get(r.id)),
                        when(r.indexed_at) if r.indexed_at else "indexing",
                        r.embedding_model or "none",
                        r.path,
                    )
                    for r in repos
                ]
                header = ("id", "name", "files", "chunks", "vectors", "indexed", "model", "path")
                run.out.print(columns(header, rows), highlight=False, markup=False)
            return EXIT_OK
        repo = await cb.repository(a.repository_id)
        layer = (await cb.semantic_layers([repo])).get(repo.id)
        if action == "delete":
            await cb.delete_repository(repo.id)
            if a.json:
                dump(deleted_payload(repo, cb.project_id))
            else:
                run.out.print(
                    f"deleted {repo.name} ({repo.id}) from project {cb.project_id}: "
                    f"{repo.file_count} files, {repo.chunk_count} chunks (the files on disk "
                    "are untouched)",
                    highlight=False,
                    markup=False,
                )
            return EXIT_OK
        if a.json:
            dump(repository_view(repo, cb.project_id, cb.database_name, layer))
            return EXIT_OK
        fields = [
            ("id", repo.id),
            ("name", repo.name),
            ("path", repo.path),
            ("project", cb.project_id),
            ("files", repo.file_count),
            ("chunks", repo.chunk_count),
            ("vectors", f"{repo.vector_count} ({layer_text(layer)})" if layer else "-"),
            ("indexed", when(repo.indexed_at) if repo.indexed_at else "indexing"),
            (
                "model",
                f"{repo.embedding_model} ({repo.embedding_dimension} dimensions)"
                if repo.embedding_model
                else "none (lexical search only)",
            ),
        ]
        for key, value in fields:
            run.out.print(f"{key:<8} {value}", highlight=False, markup=False)
        return EXIT_OK


async def projects_command(run: Run) -> int:
    async with open_workspaces(run.settings) as ws:
        projects = await ws.projects()
        default = ws.default_project
    if run.args.json:
        dump(projects_view(projects))
        return EXIT_OK
    if not projects:
        run.out.print(
            "No projects yet: 'codebase-mcp index PATH' creates the default one.",
            highlight=False,
            markup=False,
        )
        return EXIT_OK
    rows = [
        (
            p.id + (" *" if p.id == default else ""),
            p.database_name or "-",
            p.repositories,
            p.files,
            p.chunks,
            p.tasks,
            size_text(p.size_bytes),
        )
        for p in projects
    ]
    header = ("project", "schema", "repos", "files", "chunks", "tasks", "size")
    run.out.print(columns(header, rows), highlight=False, markup=False)
    if any(p.id == default for p in projects):
        run.out.print("* the default project (CODEBASE_MCP_PROJECT)", highlight=False)
    return EXIT_OK
