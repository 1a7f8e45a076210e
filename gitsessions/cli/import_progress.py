"""The progress bar of ``gs import``: on a terminal only, over the files and their conversations.

A pipe, a log or cron gets the lines alone (and rich is never imported there). While the
bar is drawn, what the import says on stderr is printed above it (rich redirects the
stream); stdout (the ids written, for scripts) is redirected only when it is the same
terminal.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from .display.output import Output, is_terminal, make_console


class ImportProgress:
    """A bar over ``files``, each file one unit, split evenly among its conversations.

    Use as a context manager (it draws nothing when stderr is no terminal, or for one file
    with nothing to split).

    Args:
        files: how many files the import reads.
        output: the command line's output settings (colour).
    """

    def __init__(self, files: int, output: Output):
        self.files, self.done = files, -1
        self._bar: Any = None
        if files and is_terminal(sys.stderr):
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            console = make_console(sys.stderr, color=output.color(sys.stderr))
            self._bar = Progress(TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                 console=console, transient=True, redirect_stderr=True,
                                 redirect_stdout=is_terminal(sys.stdout))
            self._task = self._bar.add_task("import", total=files)

    def __enter__(self) -> ImportProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()  # the terminal as it was, also when the import failed

    def next_file(self) -> None:
        """A file begins (the one before it is done)."""
        self.done += 1
        self._show(0, 1)

    def conversations(self, written: int, total: int) -> None:
        """``written`` of the ``total`` conversations of the current file are done."""
        self._show(written, total)

    def _show(self, written: int, total: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=max(self.done, 0) + (written / total if total else 0))
