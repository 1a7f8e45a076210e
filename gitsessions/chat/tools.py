"""Built-in tools the model may call. One harmless tool for now: ``get_current_time``."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

#: Tool schemas in the chat-completions ``tools`` shape.
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_current_time",
            "description": "Get the current date and time, optionally in an IANA time zone.",
            "parameters": {
                "type": "object",
                "properties": {
                    "timezone": {
                        "type": "string",
                        "description": "IANA time zone name such as 'Europe/Paris'; default UTC.",
                    }
                },
                "required": [],
            },
        },
    }
]


def get_current_time(timezone: str | None = None) -> str:
    """Return the current time as ISO 8601 in ``timezone`` (an IANA name; UTC when omitted).

    Raises:
        ValueError: an unknown time zone name.
    """
    tz: dt.tzinfo = dt.timezone.utc
    if timezone and timezone.upper() != "UTC":
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            tz = ZoneInfo(timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {timezone!r}") from None
    return dt.datetime.now(tz).isoformat(timespec="seconds")


def run_tool(name: str, arguments: str) -> tuple[str, bool]:
    """Run a built-in tool call.

    Args:
        name: the function name the model asked for.
        arguments: its JSON-encoded arguments (the API's ``function.arguments`` string).

    Returns:
        ``(content, is_error)``: the text sent back as the tool message, and whether it is
        an error (unknown tool, bad arguments, the tool failed). Never raises.
    """
    try:
        args = json.loads(arguments) if arguments and arguments.strip() else {}
        if not isinstance(args, dict):
            raise ValueError("arguments must be a JSON object")
    except ValueError as exc:
        return f"error: bad arguments for {name}: {exc}", True
    if name != "get_current_time":
        return f"error: unknown tool {name!r}", True
    try:
        return get_current_time(args.get("timezone")), False
    except (ValueError, TypeError) as exc:
        return f"error: {exc}", True
