"""Anthropic's message content (Claude Code's transcripts, Claude.ai's export): blocks into text, usage.

A message's ``content`` is a string or a list of blocks: ``text``, ``image``, ``document``,
``tool_use``, ``tool_result`` (its own ``content`` a string or blocks), ``thinking``,
``redacted_thinking``. What is not text is described in it (``[image/png: not imported]``).
"""

from __future__ import annotations

import json
from typing import Any

from .messages import _Bad, _kind


def blocks(content: Any, at: str) -> list[dict]:
    """A message's ``content`` as a list of block objects (a string is one text block).

    Args:
        content: the ``content`` field.
        at: where it is, for the message of a refusal (``line 12``).

    Raises:
        _Bad: content that is neither text nor a list.
    """
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if content is None:
        return []
    if not isinstance(content, list):
        raise _Bad(f"{at}: message content is {_kind(content)}, not text or an array of blocks")
    return [b if isinstance(b, dict) else {"type": "text", "text": b} if isinstance(b, str) else {"type": "?"}
            for b in content]


def block_text(block: dict) -> str:
    """The text of a content block; what is not text (an image, a document) described in a bracket."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text") or "")
    if kind == "image":
        source = block.get("source")
        media = source.get("media_type") if isinstance(source, dict) else None
        return f"[{media if isinstance(media, str) else 'image'}: not imported]"
    if kind == "document":
        return "[document: not imported]"
    return f"[{kind or 'content'} block not imported]"


def result_text(content: Any) -> str:
    """The text of a ``tool_result``'s ``content`` (a string, or blocks such as text and images)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block_text(b) if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def usage(counts: dict) -> dict:
    """Anthropic's usage as the chat-completions API reports it (what gs keeps of a reply).

    Anthropic counts the prompt's cached parts apart (``cache_read_input_tokens``,
    ``cache_creation_input_tokens``); the API's ``prompt_tokens`` holds them all, and
    ``prompt_tokens_details.cached_tokens`` the part read from the cache.

    Args:
        counts: a message's ``usage`` (``input_tokens``, ``output_tokens``, the cache counts).

    Returns:
        ``{"prompt_tokens", "completion_tokens", "total_tokens"[, "prompt_tokens_details"]}``.
    """
    def count(key: str) -> int:
        value = counts.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    cached = count("cache_read_input_tokens")
    prompt = count("input_tokens") + cached + count("cache_creation_input_tokens")
    out: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": count("output_tokens"),
                           "total_tokens": prompt + count("output_tokens")}
    if cached:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    return out
