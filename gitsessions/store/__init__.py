"""The persistence seam (design.md, "Shape of the code"): the store interface and its backends.

Nothing in this package imports typer, rich, prompt_toolkit or openai, or reads the environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import CommitInfo, Revision, SessionInfo, SessionStore, Snapshot, TurnJournal, WriterLock
from .git import GitStore
from .journal import Journal, JournalContents
from .lock import LockWait, SessionLock
from .values import ReflogEntry

if TYPE_CHECKING:
    from .memory import MemoryStore

__all__ = [
    "CommitInfo",
    "GitStore",
    "Journal",
    "JournalContents",
    "LockWait",
    "MemoryStore",
    "ReflogEntry",
    "SessionInfo",
    "SessionLock",
    "SessionStore",
    "Revision",
    "Snapshot",
    "TurnJournal",
    "WriterLock",
]


def __getattr__(name: str) -> object:
    """``MemoryStore``, imported when first asked for: the CLI never uses it (tests and embedders do)."""
    if name == "MemoryStore":
        from .memory import MemoryStore

        return MemoryStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
