"""Repository files on the local filesystem."""

from adapters.filesystem.source_tree import LocalSourceTree

__all__ = ["LocalSourceTree"]
