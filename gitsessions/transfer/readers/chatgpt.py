"""ChatGPT's data export (``conversations.json``, or the export ``.zip``) into conversations.

Each conversation's ``mapping`` is a tree of message nodes (see the import formats notes):
edited prompts and regenerated answers are sibling children of one parent. Every leaf gives
one branch, the path from the root to it; the branch ending at ``current_node`` (the
conversation as last seen) comes first and becomes the session, the others its forks.

What becomes what:

- ``message: null`` nodes and blank system messages are skipped; messages hidden from the
  conversation (``metadata.is_visually_hidden_from_conversation``) and the model's thoughts
  and context notes (``thoughts``, ``reasoning_recap``, ``*_editable_context``) are kept
  as ignorable system messages (stored, never sent to the model).
- An assistant message to a tool (``recipient`` other than ``all``) is a tool call, the
  next ``tool`` message of that name its result; a tool message that answers no call is
  kept aside.
- Content that is not text (images, files) is described in the text (``[image ...]``);
  ``code``, ``execution_output`` and quotes keep the text they carry.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator
from typing import Any

from ...log.events import Event
from .conversation import ImportedConversation
from .messages import TIMES, _Bad, _kind, turns_from_messages

#: The source tool's name (headers, trailers, ids).
TOOL = "chatgpt"
#: The one file of the export that holds conversations.
CONVERSATIONS = "conversations.json"
_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")
#: Content types that are the model's own notes or context, not what it said: kept aside.
_ASIDE = ("thoughts", "reasoning_recap", "model_editable_context", "user_editable_context")


def is_export(obj: Any) -> bool:
    """True when ``obj`` (a parsed JSON value) looks like ChatGPT's ``conversations.json``."""
    return isinstance(obj, list) and bool(obj) and isinstance(obj[0], dict) and "mapping" in obj[0]


def member(names: list[str]) -> str:
    """The member of an export ``.zip`` (its ``names``) that holds the conversations.

    Raises:
        _Bad: no ``conversations.json`` in it.
    """
    found = [n for n in names if n.rsplit("/", 1)[-1] == CONVERSATIONS]
    if not found:
        raise _Bad(f"a zip without {CONVERSATIONS}: not a ChatGPT or Claude.ai data export")
    return min(found, key=len)


def _ms(value: Any, fallback: int) -> int:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and TIMES[0] <= value < TIMES[1]
    return int(value * 1000) if ok else fallback


def _part(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict):
        if isinstance(part.get("text"), str):
            return part["text"]
        kind = part.get("content_type") or "part"
        if part.get("asset_pointer"):
            size = f" {part['width']}x{part['height']}" if part.get("width") and part.get("height") else ""
            kind = "image" if "image" in str(kind) else kind
            return f"[{kind}{size} {part['asset_pointer']}: not imported]"
        return f"[{kind} not imported]"
    return ""


def _text(content: Any, at: str) -> str:
    if not isinstance(content, dict):
        raise _Bad(f"{at}: content is {_kind(content)}, not an object")
    parts = content.get("parts")
    if isinstance(parts, list):  # the words first (a commit subject shows them), then what was attached
        texts = [_part(p) for p in parts]
        joined = "\n".join([t for p, t in zip(parts, texts, strict=True) if t and isinstance(p, str)]
                            + [t for p, t in zip(parts, texts, strict=True) if t and not isinstance(p, str)])
        if joined or content.get("content_type") not in _ASIDE:
            return joined  # (thoughts come with "parts": [] beside what they hold)
    if isinstance(content.get("text"), str):  # code, execution_output, tether_quote
        quoted = [content[k] for k in ("title", "url") if isinstance(content.get(k), str)]
        return "\n".join([*quoted, content["text"]])
    strings = [v for k, v in content.items() if k != "content_type" and isinstance(v, str) and v.strip()]
    for value in content.values():  # o-series thoughts: [{"summary", "content"}]
        if isinstance(value, list):
            strings += [t[k] for t in value if isinstance(t, dict) for k in ("summary", "content")
                        if isinstance(t.get(k), str)]
    return "\n".join(strings) or f"[{content.get('content_type') or 'content'} not imported]"


class _Conversation:
    """One conversation of the export, its tree checked and its branches converted."""

    def __init__(self, conv: Any, i: int):
        if not isinstance(conv, dict):
            raise _Bad(f"conversation {i} is {_kind(conv)}, not an object")
        cid = conv.get("conversation_id") or conv.get("id")
        self.at = f"conversation {i}" + (f" ({cid!r})" if isinstance(cid, str) else "")
        if not isinstance(cid, str) or not cid:
            raise _Bad(f"{self.at} has no \"id\" or \"conversation_id\"")
        self.cid = cid
        self.title: str = conv["title"] if isinstance(conv.get("title"), str) else ""
        # A conversation without times is dated by its last update, else now (never 1970).
        self.created = _ms(conv.get("create_time"), _ms(conv.get("update_time"), int(time.time() * 1000)))
        mapping = conv.get("mapping")
        if not isinstance(mapping, dict) or not mapping:
            raise _Bad(f"{self.at}: \"mapping\" is {_kind(mapping)}, not an object of message nodes")
        for key, node in mapping.items():
            if not isinstance(node, dict):
                raise _Bad(f"{self.at}, node {key!r} is {_kind(node)}, not an object")
            parent, children = node.get("parent"), node.get("children", [])
            if parent is not None and (not isinstance(parent, str) or parent not in mapping):
                raise _Bad(f"{self.at}, node {key!r}: its parent {parent!r} is not in the mapping")
            if not isinstance(children, list):
                raise _Bad(f"{self.at}, node {key!r}: \"children\" is {_kind(children)}, not an array")
        self.mapping = mapping
        self.notes: list[str] = []

    def kids(self, key: str) -> list[str]:
        """The children of node ``key`` that are in the mapping (an export may name some it left out)."""
        return [c for c in self.mapping[key].get("children") or [] if isinstance(c, str) and c in self.mapping]

    def newest_leaf(self) -> str | None:
        """The leaf whose message is newest: the conversation as last seen, when ``current_node`` is missing."""
        def said(key: str) -> float:
            msg = self.mapping[key].get("message")
            t = msg.get("create_time") if isinstance(msg, dict) else None
            return t if isinstance(t, (int, float)) else 0.0

        return max((k for k in self.mapping if not self.kids(k)), key=said, default=None)

    def path(self, leaf: str) -> list[str]:
        """The node ids from the root to ``leaf``."""
        out, seen, node = [], set(), leaf
        while node is not None:
            if node in seen:
                raise _Bad(f"{self.at}, node {node!r}: the parent links form a loop")
            seen.add(node)
            out.append(node)
            node = self.mapping[node].get("parent")
        return out[::-1]

    def leaves(self, current: str) -> list[str]:
        """Every leaf, the one ``current_node`` leads to first (its first child's line when it has children)."""
        others = [k for k in self.mapping if not self.kids(k)]
        node, seen = current, {current}
        while kids := self.kids(node):
            node = kids[-1]  # the newest child: ChatGPT shows the last one
            if node in seen:
                raise _Bad(f"{self.at}, node {node!r}: the children links form a loop")
            seen.add(node)
        return [node, *[k for k in others if k != node]]

    def messages(self, nodes: list[str]) -> tuple[list[dict], list[int]]:
        """The chat messages along ``nodes`` and their times (epoch ms)."""
        messages: list[dict] = []
        times: list[int] = []
        calls: dict[str, str] = {}  # tool name -> its last call's id
        t = self.created
        for key in nodes:
            msg = self.mapping[key].get("message")
            if msg is None:
                continue
            at = f"{self.at}, node {key!r}"
            if not isinstance(msg, dict):
                raise _Bad(f"{at}: \"message\" is {_kind(msg)}, not an object or null")
            author: dict = msg["author"] if isinstance(msg.get("author"), dict) else {}
            role = author.get("role")
            if role not in ("user", "assistant", "system", "tool"):
                raise _Bad(f"{at}: author role {role!r} is not user, assistant, system or tool")
            text = _text(msg.get("content"), at)
            meta: dict = msg["metadata"] if isinstance(msg.get("metadata"), dict) else {}
            t = _ms(msg.get("create_time"), t)
            out: dict[str, Any] = {"role": role, "content": text}
            recipient = msg.get("recipient")
            if role == "system" and not text.strip():
                continue
            kind = msg["content"].get("content_type")
            if role != "tool" and (meta.get("is_visually_hidden_from_conversation") or kind in _ASIDE):
                why = f"{role} {kind}" if kind in _ASIDE else f"hidden {role} message"
                out = {"role": "system", "content": text, "name": why}
            elif role == "assistant" and isinstance(recipient, str) and recipient != "all":
                name = _TOOL_NAME.sub("_", recipient)
                calls[name] = str(msg.get("id") or key)
                out = {"role": "assistant", "content": "",
                       "tool_calls": [{"id": calls[name], "function": {"name": name, "arguments": text}}]}
            elif role == "tool":
                name = _TOOL_NAME.sub("_", str(author.get("name") or "tool"))
                out = {"role": "tool", "tool_call_id": calls.pop(name, f"unanswered-{key}"), "content": text}
            if role == "assistant" and isinstance(meta.get("model_slug"), str):
                out["model"] = meta["model_slug"]
            messages.append(out)
            times.append(t)
        return messages, times


def read_export(obj: Iterable[Any]) -> list[ImportedConversation]:
    """Convert a parsed ``conversations.json`` into conversations, each branch split per turn.

    Raises:
        _Bad: something cannot be read (the message names the conversation and the node).
    """
    return list(convert(obj))


def convert(items: Iterable[Any]) -> Iterator[ImportedConversation]:
    """Convert the conversations of ``conversations.json`` one by one, as they are read.

    Args:
        items: the array's elements, in order (a list, or a :class:`~.stream.ArrayReader`).

    Yields:
        Each conversation with a turn (those without any are left out).

    Raises:
        _Bad: something cannot be read (the message names the conversation and the node).
    """
    for i, raw in enumerate(items):
        conv = _Conversation(raw, i)
        current = raw.get("current_node")
        if current is None:
            current = conv.newest_leaf()
            conv.notes.append(f"{conv.at} names no current_node; its newest message's line is the session")
        if not isinstance(current, str) or current not in conv.mapping:
            raise _Bad(f"{conv.at}: \"current_node\" {current!r} is not a node of the mapping")
        branches: list[tuple[str, list[list[Event]]]] = []
        for leaf in conv.leaves(current):
            messages, times = conv.messages(conv.path(leaf))
            chunks, notes = turns_from_messages(messages, times, title=conv.title, where=f"{conv.at}, ")
            conv.notes.extend(n for n in notes if n not in conv.notes)
            if len(chunks) > 1 and chunks not in [c for _, c in branches]:  # a branch without prompts adds nothing
                branches.append((leaf, chunks))
        if branches:
            yield ImportedConversation(TOOL, conv.cid, conv.title, conv.created, branches, conv.notes)
