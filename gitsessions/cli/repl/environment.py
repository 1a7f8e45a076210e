"""What the chat takes from the world outside it: its input and output, the terminal's faculties, the settings.

:class:`ChatEnvironment` is built once by the face that runs the chat (``gs chat`` on a
terminal or behind a pipe; a test's scripted lines) and handed to
:class:`gitsessions.cli.repl.repl.Repl`. Its defaults are a pipe's chat: a faculty a
terminal gives (editing a prompt in place, the pickers, a rendered reply or recap) is None,
and the chat falls back to reading and writing plain lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...config import DEFAULT_MAX_STEPS
from ...secrets.redact import NO_REDACTION, Redactor

if TYPE_CHECKING:  # the turn loop is imported when first used: not before the prompt
    from ...chat.compaction import AutoCompact
    from ...chat.loop import Permit
    from ...chat.tools.toolset import Toolset
    from ...config import Config
    from ..display.stream import ReplyView
    from .tree_lines import Spot

#: ``edit(prompt, text, use_editor)``: the user's edit of ``text`` (None: cancelled).
Edit = Callable[[str, str, bool], "str | None"]
#: ``pick_session()``: the id the user picked (None: cancelled).
PickSession = Callable[[], "str | None"]
#: ``pick_spot(spots, selected)``: the spot picked, starting at index ``selected`` (None: cancelled).
PickSpot = Callable[[Sequence["Spot"], int], "Spot | None"]
#: ``copy(text)``: puts ``text`` on the clipboard, returns the tool's name (raises GitSessionsError).
Copy = Callable[[str], str]
#: ``draw_recap(entries)``: shows a recap (:func:`gitsessions.cli.display.recap.recap`'s entries).
DrawRecap = Callable[[Sequence[tuple[str, str]]], None]


@dataclass(frozen=True)
class ChatEnvironment:
    """The chat's outside world, fixed for the whole chat.

    Attributes:
        read_line: ``read_line(prompt) -> str | None``; None at end of input; raises
            ``KeyboardInterrupt`` or ``EOFError`` to leave.
        write: writes text to the user (no newline added).
        new_header: builds the header of a new session from its id.
        system: the system prompt a new session starts with (config ``system:``), its first
            ``session/system`` event; what is sent is what the log says.
        max_steps: model requests per turn.
        redactor: replaces secrets in what enters a session (:data:`NO_REDACTION`: redaction is off).
        warnings: where the services and the store's hook runner put warnings (the CLI's
            list); the chat shows and empties it after each line.
        edit: lets the user edit a prompt in place (None: ``read_line`` reads its replacement).
        pick_session: the session picker of ``/open`` with no argument (None: a usage line).
        pick_spot: the ``/tree`` picker (None: the tree is printed).
        reply: makes what shows each reply as it streams (None: its text through ``write``).
        copy: the clipboard of ``/copy`` (None: there is none).
        recap: how many earlier turns are shown when a session with turns is opened, at the
            start and by ``/open`` (see :mod:`gitsessions.cli.display.recap`; 0: none).
        draw_recap: shows a recap's entries (None: as plain lines through ``write``).
        config: the settings ``/usage`` and the footer read (each model's window and price).
        footer: after each reply, one line: model · context used · session tokens.
        toolset: the opt-in tools offered and their approvals (None: no tools are offered); the
            approvals "for this session" are forgotten when another session is opened.
        permit: asks the user before a write or a command runs (see
            :func:`gitsessions.cli.repl.tools.approver`; None: such a call is denied unless approved).
        compaction: compacts the history before a turn that would fill the model's window
            (None: never; ``/compact`` still does).
        save_behind: each turn is committed while the next line is read (a terminal's chat:
            the prompt comes back without waiting for git); a line sent waits for that commit,
            and its failure is said then. False: before the next line is read, as a script expects.
    """

    read_line: Callable[[str], str | None]
    write: Callable[[str], None]
    new_header: Callable[[str], dict]
    system: str | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    redactor: Redactor = NO_REDACTION
    warnings: list[str] = field(default_factory=list)
    edit: Edit | None = None
    pick_session: PickSession | None = None
    pick_spot: PickSpot | None = None
    reply: Callable[[], ReplyView] | None = None
    copy: Copy | None = None
    recap: int = 0
    draw_recap: DrawRecap | None = None
    config: Config | None = None
    footer: bool = False
    toolset: Toolset | None = None
    permit: Permit | None = None
    compaction: AutoCompact | None = None
    save_behind: bool = False
