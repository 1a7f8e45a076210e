"""The clock, ``get_current_time`` (the ``time`` group of ``--tools``): harmless, it runs unasked."""

from __future__ import annotations

import datetime as dt
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
