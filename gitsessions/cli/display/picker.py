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
    from prompt_toolkit.formatted_text import StyleAndTextTuples

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
    from prompt_toolkit.application import Application
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.layout import HSplit, Layout, Window
    from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl

    match = match or line
    key = key or line
    state: _State[T] = _State(rows, [match(r).casefold() for r in rows], [key(r) for r in rows])
    state.refilter("")
    state.cursor = max(0, min(selected, len(rows) - 1))
    size = shutil.get_terminal_size()
    height = max(1, min(MAX_ROWS, size.lines - 3, len(rows)))
    state.top = max(0, state.cursor - height + 1)
    query = Buffer(multiline=False)
    timer: list[threading.Timer] = []
    started: set[str] = set()  # queries whose background search began
    enter: list[str] = []  # Enter was pressed on this query while nothing matched and its search ran

    def folded() -> str:
        return query.text.casefold().strip()

    def columns() -> int:  # the terminal's width now (prompt_toolkit follows a resize; $COLUMNS does not)
        return app.output.get_size().columns

    def searched(q: str) -> None:  # in the background thread
        assert search is not None
        started.add(q)
        try:
            found = search(q)
        except Exception:  # noqa: BLE001 - the search only adds rows; the filter still works without it
            found = set()

        def refresh() -> None:  # back in the picker's thread
            state.found[q] = found
            state.refilter(query.text)
            if enter and enter[0] == folded() == q:
                enter.clear()
                if state.shown:
                    app.exit(result=rows[state.shown[state.cursor]])
            app.invalidate()

        with contextlib.suppress(RuntimeError, AttributeError):  # the picker may be gone by now
            app.loop.call_soon_threadsafe(refresh)  # type: ignore[union-attr]

    def start_search(q: str, delay: float) -> None:
        for t in timer:
            t.cancel()
        timer[:] = [threading.Timer(delay, searched, (q,))]
        timer[0].daemon = True
        timer[0].start()

    def changed(_buf: Buffer) -> None:
        enter.clear()
        state.refilter(query.text)
        q = folded()
        if search is not None and len(q) >= SEARCH_MIN and q not in state.found and q not in started:
            start_search(q, SEARCH_DELAY)

    query.on_text_changed += changed

    def body() -> StyleAndTextTuples:
        if state.cursor < state.top:
            state.top = state.cursor
        elif state.cursor >= state.top + height:
            state.top = state.cursor - height + 1
        out: StyleAndTextTuples = []
        width = max(10, columns() - 3)
        for pos in range(state.top, min(state.top + height, len(state.shown))):
            text = line(rows[state.shown[pos]])
            text = text if len(text) <= width else text[:width - 1] + "…"
            here = pos == state.cursor
            out.append(("reverse" if here else "", f"{'›' if here else ' '} {text}\n"))
        if not state.shown:
            short = search is not None and 0 < len(folded()) < SEARCH_MIN  # too short for the prompts' search
            note = f"; the prompts are searched from {SEARCH_MIN} characters on" if short else ""
            out.append(("", f"  (nothing matches{note})\n"))
        return out

    def status() -> StyleAndTextTuples:
        busy = "  searching the prompts…" if search is not None and folded() not in state.found \
            and len(folded()) >= SEARCH_MIN else ""
        count = f"  {len(state.shown)}/{len(rows)}{busy}"
        room = columns() - len(count) - 1  # the count stays whole: the title gives way
        head = title if len(title) <= room else title[:max(room - 1, 0)] + "…"
        return [("bold", head), ("", count)]

    kb = KeyBindings()

    def move(by: int) -> None:
        state.cursor = max(0, min(len(state.shown) - 1, state.cursor + by))

    kb.add("up")(lambda _e: move(-1))
    kb.add("down")(lambda _e: move(1))
    kb.add("pageup")(lambda _e: move(-height))
    kb.add("pagedown")(lambda _e: move(height))
    kb.add("c-home")(lambda _e: move(-len(rows)))
    kb.add("c-end")(lambda _e: move(len(rows)))

    @kb.add("enter")
    def _enter(event: Any) -> None:
        q = folded()
        if state.shown:
            event.app.exit(result=rows[state.shown[state.cursor]])
        elif search is not None and len(q) >= SEARCH_MIN and q not in state.found:
            enter[:] = [q]  # nothing matches yet: pick what the search of the prompts finds first
            if q not in started:
                start_search(q, 0)

    @kb.add("escape", eager=True)
    @kb.add("c-d")
    def _cancel(event: Any) -> None:
        event.app.exit(result=None)

    @kb.add("c-c")
    def _interrupt(event: Any) -> None:
        event.app.exit(exception=KeyboardInterrupt())

    app: Application[T | None] = Application(
        layout=Layout(HSplit([
            Window(FormattedTextControl(status), height=1),
            Window(BufferControl(query, input_processors=[]), height=1, get_line_prefix=lambda *_: "filter › "),
            Window(FormattedTextControl(body), height=height + (0 if rows else 1)),
        ]), focused_element=query),
        key_bindings=kb, full_screen=False, erase_when_done=True)
    try:
        return app.run()
    finally:
        for t in timer:
            t.cancel()
