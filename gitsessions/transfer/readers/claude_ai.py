"""Claude.ai's data export (``conversations.json``) into conversations, one line each.

The export holds only the current branch of each conversation (see the import formats
notes): each one becomes one session, a commit per prompt. An edit made in Claude.ai since
an earlier import shows as another line, which becomes a fork at the turn it leaves.

What becomes what:

- ``human`` messages are prompts; files without extracted text are described in the prompt
  (``[file photo.png: not imported]``); an attachment's ``extracted_content`` (what
  Claude.ai read out of the file) is described in the prompt and kept whole as an ignorable
  message right after it (stored and searchable, never sent to a model).
- ``assistant`` messages are replies; their ``content`` blocks keep their order: ``text``
  is what was said, ``tool_use`` a tool call (web search, artifacts), ``tool_result`` its
  result, ``thinking`` an ignorable message. A message without ``content`` (older exports)
  is its ``text``.
- A last prompt without its answer (exported while Claude.ai was answering, or the answer
  failed) waits for the export that holds the answer: imported now, its turn would be
  closed, and the answer could only be a fork of it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from .conversation import ImportedConversation
from .messages import _Bad, _kind, iso_ms, turns_from_messages

#: The source tool's name (headers, trailers, ids, ``--from``).
TOOL = "claude-ai"


def is_export(obj: Any) -> bool:
    """True when ``obj`` (a parsed JSON value) looks like Claude.ai's ``conversations.json``."""
    return (isinstance(obj, list) and bool(obj) and isinstance(obj[0], dict)
            and "chat_messages" in obj[0] and "uuid" in obj[0])


def _ms(value: Any, at: str, fallback: int | None = None) -> int:
    ms = iso_ms(value)
    if ms is not None:
        return ms
    if fallback is not None:
        return fallback
    raise _Bad(f"{at}: {value!r} is not an ISO 8601 time with a zone")


def _result_text(content: Any) -> str:
    """A ``tool_result``'s content as text (search results by their title and address)."""
    if isinstance(content, str):
        return content
    out = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        head = " — ".join(str(block[k]) for k in ("title", "url") if isinstance(block.get(k), str))
        body = block.get("text") if isinstance(block.get("text"), str) else ""
        out.append("\n".join(s for s in (head, body) if s))
    return "\n\n".join(s for s in out if s) or json.dumps(content, ensure_ascii=False)


class _Conversation:
    """One conversation of the export, converted message by message."""

    def __init__(self, conv: Any, i: int):
        if not isinstance(conv, dict):
            raise _Bad(f"conversation {i} is {_kind(conv)}, not an object")
        cid = conv.get("uuid")
        self.at = f"conversation {i}" + (f" ({cid!r})" if isinstance(cid, str) else "")
        if not isinstance(cid, str) or not cid:
            raise _Bad(f"{self.at} has no \"uuid\"")
        self.cid = cid
        self.title: str = conv["name"] if isinstance(conv.get("name"), str) else ""
        self.created = _ms(conv.get("created_at"), f"{self.at}, \"created_at\"")
        self.messages: list[dict] = []
        self.times: list[int] = []
        self.calls: list[str] = []  # tool_use ids not answered yet
        chat = conv.get("chat_messages")
        if not isinstance(chat, list):
            raise _Bad(f"{self.at}: \"chat_messages\" is {_kind(chat)}, not an array")
        self.last = cid
        self.asked: tuple[int, str] | None = None  # the last prompt: where its messages begin, the uuid before it
        for j, msg in enumerate(chat):
            self.message(msg, f"{self.at}, message {j}")

    def add(self, msg: dict, t: int) -> None:
        self.messages.append(msg)
        self.times.append(t)

    def message(self, msg: Any, at: str) -> None:
        if not isinstance(msg, dict):
            raise _Bad(f"{at} is {_kind(msg)}, not an object")
        t = _ms(msg.get("created_at"), at, self.times[-1] if self.times else self.created)
        sender = msg.get("sender")
        self.asked = (len(self.messages), self.last) if sender == "human" else None
        self.last = str(msg.get("uuid") or self.last)
        blocks = msg.get("content")
        if blocks is not None and not isinstance(blocks, list):
            raise _Bad(f"{at}: \"content\" is {_kind(blocks)}, not an array")
        if not blocks:  # older exports: the text only
            blocks = [{"type": "text", "text": msg.get("text") if isinstance(msg.get("text"), str) else ""}]
        if sender == "human":
            self.human(msg, blocks, t)
        elif sender == "assistant":
            self.assistant(blocks, t, at)
        else:
            raise _Bad(f"{at}: sender {sender!r} is not human or assistant")

    def human(self, msg: dict, blocks: list, t: int) -> None:
        text = "\n".join(b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str))
        described, kept = [], []
        for a in msg.get("attachments") or []:
            if not isinstance(a, dict):
                continue
            name = str(a.get("file_name") or "attachment")
            extracted = a.get("extracted_content")
            if isinstance(extracted, str) and extracted:
                size = f", {a['file_size']} bytes" if isinstance(a.get("file_size"), int) else ""
                described.append(f"[attachment {name} ({a.get('file_type') or 'file'}{size}): its text is kept "
                                 "in the log, not sent]")
                kept.append({"role": "system", "name": f"claude.ai attachment {name}", "content": extracted})
            else:
                described.append(f"[attachment {name}: not imported]")
        for f in msg.get("files") or []:
            if isinstance(f, dict):
                described.append(f"[file {f.get('file_name') or 'file'}: not imported]")
        self.add({"role": "user", "content": "\n".join(s for s in (text, *described) if s)}, t)
        for aside in kept:
            self.add(aside, t)

    def assistant(self, blocks: list, t: int, at: str) -> None:
        reply: dict | None = None
        for k, block in enumerate(blocks):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                if reply is None or reply.get("tool_calls"):
                    reply = {"role": "assistant", "content": ""}
                    self.add(reply, t)
                reply["content"] = "\n".join(s for s in (reply["content"], block["text"]) if s)
            elif kind == "tool_use":
                given = block.get("id")  # older exports name no id: one from the message, the same every time
                call_id = given if isinstance(given, str) and given else f"toolu_{self.last}_{k}"
                if reply is None:
                    reply = {"role": "assistant", "content": ""}
                    self.add(reply, t)
                args = block.get("input")
                reply.setdefault("tool_calls", []).append({"id": call_id, "function": {
                    "name": str(block.get("name") or "tool"),
                    "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)}})
                self.calls.append(call_id)
            elif kind == "tool_result":
                wanted = block.get("tool_use_id")
                call_id = wanted if wanted in self.calls else (self.calls[0] if self.calls else f"unanswered-{k}")
                if call_id in self.calls:
                    self.calls.remove(call_id)
                self.add({"role": "tool", "tool_call_id": call_id, "content": _result_text(block.get("content"))}, t)
                reply = None
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                self.add({"role": "system", "name": "claude.ai thinking", "content": block["thinking"]}, t)
            elif not isinstance(block, dict):
                raise _Bad(f"{at}, content block {k} is {_kind(block)}, not an object")


def read_export(obj: Iterable[Any]) -> list[ImportedConversation]:
    """Convert a parsed Claude.ai ``conversations.json`` into conversations, each turn a chunk.

    Raises:
        _Bad: something cannot be read (the message names the conversation and the message).
    """
    return list(convert(obj))


def convert(items: Iterable[Any]) -> Iterator[ImportedConversation]:
    """Convert the conversations of Claude.ai's ``conversations.json`` one by one, as they are read.

    Args:
        items: the array's elements, in order (a list, or a :class:`~.stream.ArrayReader`).

    Yields:
        Each conversation with a turn, or with a prompt waiting for its answer (no branch, a note).

    Raises:
        _Bad: something cannot be read (the message names the conversation and the message).
    """
    for i, raw in enumerate(items):
        conv = _Conversation(raw, i)
        held = []
        if conv.asked is not None:  # no answer yet: closed now, the answer could only fork from it later
            cut, conv.last = conv.asked
            conv.messages, conv.times = conv.messages[:cut], conv.times[:cut]
            held = ["its last prompt has no answer yet; it is imported once it has one"]
        chunks, notes = turns_from_messages(conv.messages, conv.times, title=conv.title, where=f"{conv.at}, ")
        if len(chunks) > 1 or held:
            yield ImportedConversation(TOOL, conv.cid, conv.title, conv.created,
                                       [(conv.last, chunks)] if len(chunks) > 1 else [], held + notes)
