"""The chat's ``/compact [instructions]``: the history so far replaced by a summary in what the model sees.

The work is :func:`gitsessions.chat.compaction.compact`'s; here it is asked for and its
outcome told, one line (the log keeps every message: ``gs show`` and ``gs search`` see them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ProviderError

if TYPE_CHECKING:
    from .handle import ChatHandle


def compact_command(repl: ChatHandle, arg: str) -> None:
    """``/compact [instructions]``: ask the model for a summary of the session so far and keep it.

    ``instructions`` say what the summary should keep or focus on. A failure (an API error,
    a cut reply, Ctrl+C) changes nothing and says so.
    """
    from ...chat.compaction import compact

    assert repl.session is not None
    def asking() -> None:  # said once there is something to compact
        repl.env.write("(compacting: asking the model for a summary of the conversation so far)\n")

    try:
        done = compact(repl.session, repl.provider, arg, model=repl.model or repl.session.model,  # as a turn names it
                       on_ask=asking)
    except KeyboardInterrupt:
        repl.env.write("(compaction cancelled; nothing changed)\n")
    except ProviderError as exc:
        repl.env.write(f"error: {exc}\n(nothing was compacted: the model sees the conversation as before)\n")
    else:
        repl.env.write(f"({done.line()})\n")
