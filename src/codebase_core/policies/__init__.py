"""Policies every adapter applies alike, so that an answer does not depend on which adapter
holds the data: ``skipping`` (what a scan leaves out of the index, by name, size and content,
and why, and what it redacts), ``secrets`` (credential files and private key blocks),
``ignoring`` (ignore files and their precedence, matched through the ``IgnoreRules`` port)
and ``one_model`` (a project holds vectors of one embedding model)."""

from codebase_mcp_search.core.policies.ignoring import (
    GIT_EXCLUDE,
    GITIGNORE_FILE,
    IGNORE_FILE,
    IgnoreFiles,
    compile_ignore_file,
)
from codebase_mcp_search.core.policies.skipping import SkipPolicy, in_vcs_dir, unlisted

__all__ = [
    "GITIGNORE_FILE",
    "GIT_EXCLUDE",
    "IGNORE_FILE",
    "IgnoreFiles",
    "SkipPolicy",
    "compile_ignore_file",
    "in_vcs_dir",
    "unlisted",
]
