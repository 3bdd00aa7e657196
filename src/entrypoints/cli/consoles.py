"""The consoles a command prints through (rich), made when it first prints: a command that
prints JSON only never imports rich."""

from __future__ import annotations

from rich.console import Console


class Output(Console):
    """rich's console, except that a closed stdout ends the command as ``| head`` expects
    (exit 141, in ``main``) rather than with rich's own exit 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def stdout() -> Console:
    """The console of the command's data."""
    return Output(soft_wrap=True)


def stderr() -> Console:
    """The console of progress and messages."""
    return Console(stderr=True, soft_wrap=True)
