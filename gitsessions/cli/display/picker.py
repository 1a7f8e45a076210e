"""A list to pick from on the terminal: ``gs chat -r``, ``/open`` with no argument, ``/tree``.

One prompt_toolkit application below the cursor (not full screen): a filter line, and the
rows that match it. The arrow keys (and Page Up/Down, Home/End) move, Enter picks, Esc
cancels, Ctrl+C interrupts (KeyboardInterrupt: ``gs chat -r`` exits 130, the chat's pickers
go back to the prompt); typing filters. Only the rows on screen are drawn, and the filter is a
substring test per row, so ten thousand rows stay quick; a slower search (a session's
prompts, through the search index) runs in a background thread once the filter has three
characters, and the rows it finds join when it answers (Enter while nothing matches yet
picks the first of them).
"""

from __future__ import annotations

import contextlib
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from prompt_toolkit.application import Application
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.formatted_text import StyleAndTextTuples
    from prompt_toolkit.key_binding import KeyBindings

T = TypeVar("T")

#: Rows shown at most (fewer when the terminal is smaller).
MAX_ROWS = 15
#: Seconds of no typing before the background search starts.
SEARCH_DELAY = 0.25
#: A filter shorter than this is not searched in the background (a trigram index cannot narrow it).
SEARCH_MIN = 3


@dataclass
class _State(Generic[T]):
    rows: Sequence[T]
    texts: list[str]  # what the filter matches, casefolded, per row
    keys: list[str]
    shown: list[int] = field(default_factory=list)  # indices of the rows that match
    cursor: int = 0  # position in ``shown``
    top: int = 0  # first position of ``shown`` on screen
    found: dict[str, set[str]] = field(default_factory=dict)  # query -> keys the background search found

    def refilter(self, query: str) -> None:
        folded = query.casefold().strip()
        extra = self.found.get(folded, set())
        self.shown = [i for i, t in enumerate(self.texts) if folded in t or self.keys[i] in extra]
        self.cursor = min(self.cursor, max(len(self.shown) - 1, 0))
        self.top = min(self.top, self.cursor)


def pick(rows: Sequence[T], line: Callable[[T], str], *, title: str, selected: int = 0,
         match: Callable[[T], str] | None = None, key: Callable[[T], str] | None = None,
         search: Callable[[str], set[str]] | None = None) -> T | None:
    """Let the user pick one of ``rows`` on the terminal; return it, or None when cancelled.

    Args:
        rows: what to pick from, in the order shown.
        line: the text of a row on screen (one line; clipped to the terminal's width).
        title: the line above the filter (what is picked, and the keys).
        selected: the index of the row the cursor starts on.
        match: the text the filter looks in (default: ``line``).
        key: a row's key for ``search`` (default: ``line``).
        search: ``search(query) -> keys`` of rows matching beyond ``match`` (run in a
            background thread; it must not share state with the caller's thread).

    Returns:
        The row picked; None when Esc cancelled.

    Raises:
        KeyboardInterrupt: Ctrl+C.
    """
    return _Picker(rows, line, title, selected, match or line, key or line, search).run()


class _Search:
    """The slower search of a filter (a session's prompts), in a thread of its own once typing pauses.

    Args:
        search: ``search(query) -> keys`` of the rows it finds.
        found: ``found(query, keys)``, called in that thread when it answers (a failure: no keys).
    """

    def __init__(self, search: Callable[[str], set[str]], found: Callable[[str, set[str]], None]):
        self._search = search
        self._found = found
        self._timer: threading.Timer | None = None
        self.started: set[str] = set()  # queries whose search began

    def start(self, query: str, delay: float) -> None:
        """Search ``query`` after ``delay`` seconds, instead of the search not yet begun."""
        self.cancel()
        self._timer = threading.Timer(delay, self._run, (query,))
        self._timer.daemon = True
        self._timer.start()

    def cancel(self) -> None:
        """Forget the search not yet begun (one that runs answers all the same)."""
        if self._timer is not None:
            self._timer.cancel()

    def _run(self, query: str) -> None:
        self.started.add(query)
        try:
            found = self._search(query)
        except Exception:  # noqa: BLE001 - the search only adds rows; the filter still works without it
            found = set()
        self._found(query, found)


class _Picker(Generic[T]):
    """One pick on the screen: the rows that match the filter, the keys, the background search (see :func:`pick`)."""

    def __init__(self, rows: Sequence[T], line: Callable[[T], str], title: str, selected: int,
                 match: Callable[[T], str], key: Callable[[T], str], search: Callable[[str], set[str]] | None):
        from prompt_toolkit.buffer import Buffer

        self.rows, self.line, self.title = rows, line, title
        self.state: _State[T] = _State(rows, [match(r).casefold() for r in rows], [key(r) for r in rows])
        self.state.refilter("")
        self.state.cursor = max(0, min(selected, len(rows) - 1))
        self.height = max(1, min(MAX_ROWS, shutil.get_terminal_size().lines - 3, len(rows)))
        self.state.top = max(0, self.state.cursor - self.height + 1)
        self.search = _Search(search, self._found) if search is not None else None
        self.enter: str | None = None  # Enter was pressed on this query while nothing matched and its search ran
        self.query = Buffer(multiline=False)
        self.query.on_text_changed += self._changed
        self.app: Application[T | None] | None = None  # while it runs

    def run(self) -> T | None:
        """Show the picker until a row is picked (returned) or it is cancelled (None)."""
        from prompt_toolkit.application import Application
        from prompt_toolkit.layout import HSplit, Layout, Window
        from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl

        self.app = Application(
            layout=Layout(HSplit([
                Window(FormattedTextControl(self._status), height=1),
                Window(BufferControl(self.query, input_processors=[]), height=1,
                       get_line_prefix=lambda *_: "filter › "),
                Window(FormattedTextControl(self._body), height=self.height + (0 if self.rows else 1)),
            ]), focused_element=self.query),
            key_bindings=self._keys(), full_screen=False, erase_when_done=True)
        try:
            return self.app.run()
        finally:
            if self.search is not None:
                self.search.cancel()

    def _folded(self) -> str:
        return self.query.text.casefold().strip()

    def _columns(self) -> int:  # the terminal's width now (prompt_toolkit follows a resize; $COLUMNS does not)
        assert self.app is not None
        return self.app.output.get_size().columns

    def _searching(self, query: str) -> bool:
        """Whether ``query`` is for the background search and it has not answered yet."""
        return self.search is not None and len(query) >= SEARCH_MIN and query not in self.state.found

    # -- the filter and the background search

    def _changed(self, _buf: Buffer) -> None:
        self.enter = None
        self.state.refilter(self.query.text)
        q = self._folded()
        if self.search is not None and self._searching(q) and q not in self.search.started:
            self.search.start(q, SEARCH_DELAY)

    def _found(self, query: str, keys: set[str]) -> None:  # in the search's thread
        def refresh() -> None:  # back in the picker's thread
            assert self.app is not None
            self.state.found[query] = keys
            self.state.refilter(self.query.text)
            if self.enter == self._folded() == query:
                self.enter = None
                if self.state.shown:
                    self.app.exit(result=self.rows[self.state.shown[self.state.cursor]])
            self.app.invalidate()

        with contextlib.suppress(RuntimeError, AttributeError):  # the picker may be gone by now
            self.app.loop.call_soon_threadsafe(refresh)  # type: ignore[union-attr]

    # -- what is drawn

    def _body(self) -> StyleAndTextTuples:
        state, height = self.state, self.height
        if state.cursor < state.top:
            state.top = state.cursor
        elif state.cursor >= state.top + height:
            state.top = state.cursor - height + 1
        out: StyleAndTextTuples = []
        width = max(10, self._columns() - 3)
        for pos in range(state.top, min(state.top + height, len(state.shown))):
            text = self.line(self.rows[state.shown[pos]])
            text = text if len(text) <= width else text[:width - 1] + "…"
            here = pos == state.cursor
            out.append(("reverse" if here else "", f"{'›' if here else ' '} {text}\n"))
        if not state.shown:
            short = self.search is not None and 0 < len(self._folded()) < SEARCH_MIN  # too short for the prompts'
            note = f"; the prompts are searched from {SEARCH_MIN} characters on" if short else ""
            out.append(("", f"  (nothing matches{note})\n"))
        return out

    def _status(self) -> StyleAndTextTuples:
        busy = "  searching the prompts…" if self._searching(self._folded()) else ""
        count = f"  {len(self.state.shown)}/{len(self.rows)}{busy}"
        room = self._columns() - len(count) - 1  # the count stays whole: the title gives way
        head = self.title if len(self.title) <= room else self.title[:max(room - 1, 0)] + "…"
        return [("bold", head), ("", count)]

    # -- the keys

    def _keys(self) -> KeyBindings:
        from prompt_toolkit.key_binding import KeyBindings

        kb = KeyBindings()
        height, rows = self.height, len(self.rows)
        kb.add("up")(lambda _e: self._move(-1))
        kb.add("down")(lambda _e: self._move(1))
        kb.add("pageup")(lambda _e: self._move(-height))
        kb.add("pagedown")(lambda _e: self._move(height))
        kb.add("c-home")(lambda _e: self._move(-rows))
        kb.add("c-end")(lambda _e: self._move(rows))
        kb.add("enter")(self._enter)
        kb.add("escape", eager=True)(lambda event: event.app.exit(result=None))
        kb.add("c-d")(lambda event: event.app.exit(result=None))
        kb.add("c-c")(lambda event: event.app.exit(exception=KeyboardInterrupt()))
        return kb

    def _move(self, by: int) -> None:
        self.state.cursor = max(0, min(len(self.state.shown) - 1, self.state.cursor + by))

    def _enter(self, event: Any) -> None:
        q = self._folded()
        if self.state.shown:
            event.app.exit(result=self.rows[self.state.shown[self.state.cursor]])
        elif self.search is not None and self._searching(q):
            self.enter = q  # nothing matches yet: pick what the search of the prompts finds first
            if q not in self.search.started:
                self.search.start(q, 0)
