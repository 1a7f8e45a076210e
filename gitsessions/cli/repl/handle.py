"""What a slash command may use of the chat it runs in: :class:`ChatHandle`.

The commands (:mod:`.slash`, :mod:`.slash_compact`, :mod:`.slash_settings`) are handed the
running chat through this interface, so that they import nothing of the loop that runs
them: the loop (:class:`gitsessions.cli.repl.repl.Repl`, which has all of it) imports the
commands, never the other way round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...store import LockWait, SessionStore
    from ...writer.session import Session
    from .environment import ChatEnvironment


class ChatHandle(Protocol):
    """The running chat, as a slash command sees it.

    Attributes:
        model: the run's model (``-m``; None: none given); ``/model`` clears it, so that
            the session's choice rules from then on.
    """

    model: str | None

    @property
    def env(self) -> ChatEnvironment:
        """The chat's outside world: ``write``, ``read_line``, the pickers, the settings."""

    @property
    def store(self) -> SessionStore:
        """The session store."""

    @property
    def provider(self) -> Any:
        """The model the chat talks to (``stream``, ``model``; ``models()`` where the server lists them)."""

    @property
    def session(self) -> Session | None:
        """The current session (None only between :meth:`release` and the next open)."""

    def open(self, rev: str, create: bool, fork_as: str | None = None, wait: LockWait | None = None) -> None:
        """Open revision ``rev`` (a new session when ``create``) and make it the current one.

        Raises:
            GitSessionsError: ``rev`` cannot be opened (unknown, locked...).
        """

    def switch(self, session: Session, note: str | None) -> None:
        """Make ``session`` (opened by the command) the current one; ``note`` is said first (None: nothing)."""

    def release(self) -> Session | None:
        """Close the current session and hold none until the next open; return the one closed (None: none)."""

    def show_recap(self) -> None:
        """Show the last turns of the current session, as on opening it."""

    def turn(self, prompt: str) -> None:
        """Send ``prompt`` in the current session and show the reply, as a typed line is."""

    def command(self, line: str) -> bool:
        """Run the slash command ``line``; return False when the chat should end."""

    def current_model(self) -> str:
        """The model the next request goes to."""

    def window(self) -> int | None:
        """The context window of :meth:`current_model` (None: unknown)."""
