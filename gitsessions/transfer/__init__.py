"""Export sessions for people and other tools, and import conversations from files.

The package re-exports its parts (as dulwich's porcelain package does), so callers write
``transfer.export_bytes`` or ``transfer.read_import`` without knowing the module:

- :mod:`.export`: ``gs export`` rendering (markdown, html, json, jsonl).
- :mod:`.read`: detecting and validating an import file into an :class:`ImportPlan`
  (gs's own jsonl/json exports, messages arrays, GeekAgent's ``sessions.json``).
- :mod:`.messages`: a chat-completions ``messages`` list into session events.
- :mod:`.chatgpt`: ChatGPT's data export into conversations (a tree of branches).
- :mod:`.claude_ai`: Claude.ai's data export into conversations (one line each).
- :mod:`.claude_code`: Claude Code's transcripts into conversations (rewinds as forks, sub-agents).
- :mod:`.codex`: Codex rollouts into conversations (a forked session forks its origin's).
- :mod:`.llm_db`: llm's ``logs.db`` (SQLite, read-only) into conversations.
- :mod:`.stream`: a data export's array read a conversation at a time (:mod:`.source`: the
  file, or its zip's member, opened again for each pass).
- :mod:`.discover`: where each tool keeps its files (``gs import --from TOOL`` without a file).
- :mod:`.write`: writing a plan into the store (:func:`write_import`).
- :mod:`.conversation`: another tool's conversation as a reader gives it (:class:`ImportedConversation`).
- :mod:`.branches`: another tool's conversation, a commit per turn, incrementally
  (:func:`write_conversation`).
- :mod:`.seen`: the files imported whole before, by content (passed over when unchanged).
- :mod:`.ahead`: the next files of an import read and redacted in a worker process.

Nothing here prints or reads the environment; the CLI does.
"""

from ..errors import TransferError
from ..events import IMPORTED_MESSAGE
from . import ahead, discover, seen
from .branches import ImportedConversation, SourceIndex, write_conversation
from .export import EXPORT_FORMATS, event_time, export_bytes, export_html, export_markdown
from .messages import ROLES, events_from_messages
from .read import FORMATS, TOOLS, ImportedSession, ImportPlan, read_import
from .write import ImportResult, check_plan, write_import

__all__ = [
    "EXPORT_FORMATS",
    "FORMATS",
    "IMPORTED_MESSAGE",
    "ROLES",
    "TOOLS",
    "ImportPlan",
    "ImportedConversation",
    "ImportResult",
    "ImportedSession",
    "SourceIndex",
    "TransferError",
    "ahead",
    "check_plan",
    "discover",
    "seen",
    "event_time",
    "events_from_messages",
    "export_bytes",
    "export_html",
    "export_markdown",
    "read_import",
    "write_conversation",
    "write_import",
]
