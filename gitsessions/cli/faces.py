"""What the chat asks of a terminal, built apart from the chat's command: the pickers, ``/copy``, the first line.

The chat draws its first prompt before its session is open (:class:`FirstLine` keeps what
is typed there for the chat); the pickers of ``gs chat -r``, ``/open`` and ``/tree``
import what they need when first shown.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .common import Context, err
from .display.render import terminal_safe

if TYPE_CHECKING:
    from ..store import GitStore, SessionInfo
    from .repl.tree_lines import Spot


class FirstLine:
    """The chat's ``read_line``, whose first answer may have been read before the chat was built.

    The first prompt is drawn before the session is open (:meth:`read`); the line typed
    there, or the Ctrl+C or Ctrl+D that left it, is the chat's first input.

    Args:
        read_line: the prompt's ``read_line``.
    """

    def __init__(self, read_line: Callable[[str], str | None]):
        self.read_line = read_line
        self._first: list[tuple[str | None, BaseException | None]] = []
        #: True while a line is waited for: work done behind the prompt now delays no turn.
        self.reading = False

    def read(self, prompt: str) -> None:
        """Read the first line now, kept for the first call."""
        try:
            self._first.append((self._read(prompt), None))
        except (KeyboardInterrupt, EOFError) as exc:
            self._first.append((None, exc))

    def _read(self, prompt: str) -> str | None:
        self.reading = True
        try:
            return self.read_line(prompt)
        finally:
            self.reading = False

    def __call__(self, prompt: str) -> str | None:
        """The line read ahead (once), else a line read now."""
        if not self._first:
            return self._read(prompt)
        line, left = self._first.pop()
        if left is not None:
            raise left
        return line


def drawn_first(drawn: str | None) -> Callable[[int], str]:
    """``secrets.token_hex``, whose first answer is ``drawn``: the id the first prompt shows, kept unless taken."""
    first = [drawn] if drawn else []
    return lambda n: first.pop() if first else secrets.token_hex(n)


def chat_faces(c: Context, store: GitStore, edit: Callable[..., object] | None) -> dict[str, Any]:
    """What the chat asks of a terminal (editing a prompt, the pickers) and ``/copy``'s clipboard.

    Ctrl+C in a picker cancels it as Esc does: the chat goes on.
    """
    faces: dict[str, Any] = {"copy": _copy}
    if edit is not None:
        faces.update(edit=edit, pick_session=_ctrl_c_cancels(session_picker(c, store)),
                     pick_spot=_ctrl_c_cancels(_spot_picker))
    return faces


def session_picker(c: Context, store: GitStore) -> Callable[[], str | None]:
    """The picker of ``gs chat -r`` and ``/open``: sessions newest first, filtered by title or prompt.

    Listing reads tip commits only (no log); the prompts are searched through the search
    index, in a thread of its own with a store of its own, once the filter has 3 characters.
    Built before the chat's first prompt, it imports what it needs when it is first shown.
    """
    path = c.repo_path()

    def search(query: str) -> set[str]:
        from ..history.search_index import lookup
        from ..store.git import GitStore

        with GitStore(path) as own:
            targets: list[tuple[str, str, bool]] = [(sid, tip, False) for sid, tip in own.tips().items()]
            found = lookup(own, path / "gs" / "search.sqlite", targets, query, complete=frozenset({False}))
        return {key[0] for key, hits in (found or {}).items() if any(hit[2] == "user" for hit in hits)}

    def pick_session() -> str | None:
        from ..history.reading import list_sessions
        from ..history.tree import places  # gs tree's own rules for a fork's parent and name
        from ..text import plural
        from .display.picker import pick
        from .display.render import saved_ago

        infos = sorted(list_sessions(store, redactor=c.redactor(), warnings=c.warnings),
                       key=lambda i: i.time, reverse=True)
        if not infos:
            err("no sessions yet; start one with: gs chat")
            return None
        width = min(24, max(len(i.session_id) for i in infos))

        def title(info: SessionInfo) -> str:  # the trailer as it is: no parse of every row's trailers
            return info.message.trailers.get("Title", "")

        found = places(store, infos)

        def label(info: SessionInfo) -> str:  # as gs tree names it: a fork by its own first prompt
            place = found.get(info.session_id)
            return place.label if place is not None else title(info)

        def line(info: SessionInfo) -> str:  # drawn for the rows on screen only
            turns = plural(info.message.fields.turn or 0, "turn")
            return (f"{info.session_id:<{width}}  {saved_ago(info.time):<16}  "
                    f"{turns:>9}  {terminal_safe(label(info))}")

        chosen = pick(infos, line, title="Open which session? ↑↓ move · Enter opens · Esc cancels · type to filter",
                      match=lambda i: f"{i.session_id} {title(i)}", key=lambda i: i.session_id, search=search)
        return chosen.session_id if chosen is not None else None

    return pick_session


def _copy(text: str) -> str:
    """``/copy``'s clipboard (see :func:`.clipboard.copy`), imported when first used."""
    from .repl.clipboard import copy

    return copy(text)


def _ctrl_c_cancels(pick: Callable[..., object]) -> Callable[..., object]:
    """``pick`` for the chat: Ctrl+C in the list cancels it as Esc does (None), the chat goes on."""
    def cancellable(*args: object) -> object:
        try:
            return pick(*args)
        except KeyboardInterrupt:
            return None
    return cancellable


def _spot_picker(spots: Sequence[Spot], selected: int) -> Spot | None:
    """The picker of ``/tree``: the family's sessions and turns, the current one selected."""
    from .display.picker import pick

    return pick(spots, lambda s: terminal_safe(s.label), selected=selected,
                title="Jump where? ↑↓ move · Enter opens (a past turn: what you send forks) · Esc cancels")
