"""The persistence seam (design.md, "Shape of the code"): the store interface and its backends.

Nothing in this package imports typer, rich, prompt_toolkit or openai, or reads the environment.
"""

from .base import CommitInfo, Revision, SessionInfo, SessionStore, Snapshot, TurnJournal, WriterLock
from .git import GitStore
from .journal import Journal, JournalContents
from .lock import LockWait, SessionLock
from .memory import MemoryStore
from .values import ReflogEntry

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
