"""The persistence seam: the store interface and its backends (git, memory), and the remote side.

Nothing in this package imports typer, rich, prompt_toolkit or openai, or reads the environment.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import SessionStore
    from .git import GitStore
    from .journal import Journal, JournalContents
    from .lock import LockWait, SessionLock
    from .memory import MemoryStore
    from .values import CommitInfo, ReflogEntry, Revision, SessionInfo, Snapshot, TurnJournal, WriterLock

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


#: Where each name of :data:`__all__` is defined. Each is imported when first asked for
#: (PEP 562), so that a module of the package (``privacy``, ``lock``) comes without the
#: backend and dulwich: the chat draws its prompt before it opens the store, and the CLI
#: never uses ``MemoryStore`` (tests and embedders do).
_HOMES = {
    "CommitInfo": "values", "Revision": "values", "SessionInfo": "values", "SessionStore": "base",
    "Snapshot": "values", "TurnJournal": "values", "WriterLock": "values", "GitStore": "git", "Journal": "journal",
    "JournalContents": "journal", "LockWait": "lock", "SessionLock": "lock", "MemoryStore": "memory",
    "ReflogEntry": "values",
}


def __getattr__(name: str) -> object:
    """A name of :data:`__all__`, from its module (imported now if it was not)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # asked once
    return value
