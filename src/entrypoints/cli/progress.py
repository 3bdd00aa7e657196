"""Indexing progress on stderr: a live bar on a terminal, plain lines in a pipe.

The indexing service reports ``(phase, done, total)``; ``embedding`` (a run of the vectors)
counts the vectors stored of those missing, ``chunking``, ``writing`` and ``deleting`` count
files. On a
terminal each phase gets a row of a live display (embedding with its rate in chunks/s). When
stderr is not a terminal (a pipe, CI) no control sequence is written: one line when a phase
starts, a line at most every ``HEARTBEAT_S`` seconds while a long phase goes on, and one for
the embedding rate at the end.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Self, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from codebase_mcp_search.core.models import ProgressPhase

HEARTBEAT_S = 15.0
MIN_RATE_S = 1.0
"""A rate measured over less time than this says more about timers than about the model."""

UNITS: dict[ProgressPhase, str] = {
    "chunking": "files",
    "embedding": "chunks",
    "writing": "files",
    "deleting": "files",
    "done": "files",
}


def counted(n: int, unit: str) -> str:
    """``1 file``, ``2 files`` (``unit`` is the plural)."""
    return f"{n} {unit.removesuffix('s') if n == 1 else unit}"


STAGES: dict[ProgressPhase, int] = {
    "waiting": 0,
    "scanning": 1,
    "chunking": 2,
    "embedding": 2,
    "writing": 2,
    "deleting": 3,
    "optimizing": 4,
    "done": 5,
}


class _CountColumn(ProgressColumn):
    """``done/total unit``, and the rate of the chunks embedded."""

    def render(self, task: Task) -> Text:
        if task.fields.get("text"):
            return Text(str(task.fields["text"]))
        unit = task.fields.get("unit")
        if not unit:
            return Text("")
        total = int(task.total or 0)
        text = f"{int(task.completed)}/{counted(total, unit)}"
        if unit == "chunks" and task.speed:
            text += f", {task.speed:.0f} chunks/s"
        return Text(text)


class _Rate:
    """Items per second of one phase since its first report."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.started: float | None = None
        self.ended: float | None = None
        self.done = 0

    def update(self, done: int) -> None:
        now = self._clock()
        if self.started is None:
            self.started = now
        self.ended = now
        self.done = done

    @property
    def seconds(self) -> float:
        if self.started is None or self.ended is None:
            return 0.0
        return self.ended - self.started

    @property
    def per_second(self) -> float | None:
        if self.started is None or self.ended is None or self.ended <= self.started:
            return None
        return self.done / (self.ended - self.started)


class IndexProgress:
    """The progress callback of one indexing run (``callback``), shown on ``err``.

    ``live=None`` decides from ``err``: a live display on a terminal, plain lines otherwise;
    ``quiet`` shows only that the run waits for another process; ``announce=False`` prints no
    first line (a run of the vectors, after its repository's lexical run said it).
    """

    def __init__(
        self,
        err: Console,
        path: str,
        *,
        quiet: bool = False,
        announce: bool = True,
        live: bool | None = None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._err = err
        self._path = path
        self._quiet = quiet
        self._announce = announce
        self._live = (err.is_terminal and not err.is_dumb_terminal) if live is None else live
        self._stream = stream
        self._clock = clock
        self._seen: set[ProgressPhase] = set()
        self._last_line = 0.0
        self._embedding = _Rate(clock)
        self._bar: Progress | None = None
        self._rows: dict[ProgressPhase, TaskID] = {}
        self._starting: TaskID | None = None
        self._totals: dict[ProgressPhase, int] = {}

    def __enter__(self) -> Self:
        if self._quiet:
            return self
        if self._live:
            self._bar = Progress(
                SpinnerColumn(finished_text=" "),
                TextColumn("[bold]{task.description:<10}"),
                BarColumn(),
                _CountColumn(),
                TimeElapsedColumn(),
                console=self._err,
                transient=True,
            )
            self._bar.start()
            self._starting = self._bar.add_task("starting", total=None)
        elif self._announce:
            self._line(f"indexing {self._path}")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        if kind is None and not self._quiet:
            rate = self._embedding
            if rate.per_second is not None and rate.seconds >= MIN_RATE_S and rate.done:
                self._line(
                    f"embedded {counted(rate.done, 'chunks')}, {rate.per_second:.1f} chunks/s"
                )

    def _line(self, text: str) -> None:
        stream = self._stream or sys.stderr
        stream.write(text + "\n")
        stream.flush()
        self._last_line = self._clock()

    def callback(self, phase: ProgressPhase, done: int, total: int) -> None:
        if phase == "embedding":
            self._embedding.update(done)
        first = phase not in self._seen
        self._seen.add(phase)
        if phase == "waiting":
            if first:
                doing = "indexing" if self._announce else "building the vectors of"
                self._err.print(
                    f"another process is {doing} {self._path}; waiting for it to finish "
                    "(--no-wait to fail instead)",
                    highlight=False,
                )
            return
        if self._quiet:
            return
        if self._bar is not None:
            self._show(phase, done, total)
            return
        unit = UNITS.get(phase)
        if first:
            if phase == "done":
                return
            self._line(f"{phase} {counted(total, unit)}" if unit and total else phase)
        elif unit and self._clock() - self._last_line >= HEARTBEAT_S:
            text = f"{phase} {done}/{counted(total, unit)}"
            rate = self._embedding.per_second if phase == "embedding" else None
            self._line(text + (f", {rate:.1f} chunks/s" if rate else ""))

    def _show(self, phase: ProgressPhase, done: int, total: int) -> None:
        bar = self._bar
        assert bar is not None
        if self._starting is not None:
            bar.remove_task(self._starting)
            self._starting = None
        # A phase of an earlier stage is over once a later stage reports (chunking reports
        # only its start, and goes on while embedding and writing do).
        stage = STAGES[phase]
        for earlier, earlier_row in self._rows.items():
            if STAGES[earlier] < stage:
                size = self._totals.get(earlier, 1)
                bar.update(earlier_row, total=size, completed=size)
        if phase == "done":
            return
        found = self._rows.get(phase)
        if phase == "chunking":
            if found is None:
                text = counted(total, "files") if total else ""
                self._rows[phase] = bar.add_task(phase, total=None, unit="", text=text)
            return
        row = found
        if row is None:
            row = bar.add_task(phase, total=max(total, 1), unit=UNITS.get(phase, ""), text="")
            self._rows[phase] = row
        self._totals[phase] = max(total, done, 1)
        bar.update(row, completed=done, total=self._totals[phase])
