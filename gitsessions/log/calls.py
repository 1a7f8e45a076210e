"""A tool call and its result as values, and their one conversion to the log and to a request.

A call travels from the model's reply through the loop, the toolset, the user's approval
and back as a result; here it is a typed value. What the log holds of it is the entry of an
``assistant/message``'s ``tool_calls`` (``{"id", "name", "arguments"}``) and a
``tool/result``'s data; what a request sends is the chat-completions shape
(``{"id", "type": "function", "function": {"name", "arguments"}}`` and a ``tool`` message).
The loop, the toolset, the transcript and the messages reader convert a call through these;
the readers of other tools' files build chat-completions messages that the messages reader
takes in. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .events import clean_text


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for.

    Attributes:
        id: the call id the result answers.
        name: the tool named.
        arguments: the arguments as the model wrote them (JSON text; ``""``: none).
    """

    id: str
    name: str
    arguments: str

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> ToolCall:
        """Read one entry of a reply's ``tool_calls`` (a log another tool wrote too).

        Args:
            data: ``{"id", "name", "arguments"}``; a field missing (or an empty id or
                arguments) is ``""``, one of another type its ``str``.

        Returns:
            The call, its text as given (see :meth:`cleaned`).
        """
        return cls(str(data.get("id") or ""), str(data.get("name", "")), str(data.get("arguments", "") or ""))

    def cleaned(self) -> ToolCall:
        """The call with well-formed text (lone surrogates become U+FFFD): what a request may send."""
        return ToolCall(clean_text(self.id), clean_text(self.name), clean_text(self.arguments))

    def data(self) -> dict[str, str]:
        """The call as an ``assistant/message``'s ``tool_calls`` holds it."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    def wire(self) -> dict[str, Any]:
        """The call as a request's assistant message carries it (chat completions)."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the model is told of a call: its tool's output, or why it did not run.

    Attributes:
        call_id: the id of the call it answers (as the call has it: a log another tool
            wrote may hold an id of another type).
        name: the tool the call named.
        content: the text the model reads.
        is_error: the tool failed, or the call never ran.
        error_code: why it never ran or how it ended (``denied``, ``not_started``, ...;
            see :mod:`gitsessions.log.transcript`); None for a call that ran.
    """

    call_id: str
    name: str
    content: str
    is_error: bool = False
    error_code: str | None = None

    def data(self) -> dict[str, Any]:
        """The ``tool/result`` event's data (``error_code`` only when there is one)."""
        data: dict[str, Any] = {"id": self.call_id, "name": self.name, "content": self.content,
                                "is_error": self.is_error}
        if self.error_code is not None:
            data["error_code"] = self.error_code
        return data

    def wire(self) -> dict[str, Any]:
        """The ``tool`` message a request sends for it (chat completions)."""
        return {"role": "tool", "tool_call_id": self.call_id, "content": self.content}
