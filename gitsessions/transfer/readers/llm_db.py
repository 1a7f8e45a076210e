"""llm's ``logs.db`` (SQLite) into conversations: each conversation a session, each prompt a turn.

The database is opened read-only (llm may be writing it) and its schema is read from
``sqlite_master``, not from a version number (see the import formats notes). Two
generations of tables hold conversations:

- the long-standing ``conversations`` / ``responses`` (a row per prompt and its response,
  ``tool_calls`` and ``tool_results`` beside them), written by llm before 0.36;
- the message store of llm 0.36 on: ``threads`` (a conversation, ``forked_from`` another),
  ``turns`` (a model call: its model, tokens and time) and the chain of ``messages`` /
  ``parts`` each turn ends at.

A conversation found in both (llm wrote both for a while; the ids are the same) is read
from the one that holds more of it, the long-standing tables when they hold as much. What
becomes what: a system prompt is the session's (``session/system``, sent when the session
is continued); prompts open turns, and the calls a model made and the results llm sent back
are steps of the same turn; each reply names its model and carries its token counts as the
API's usage; reasoning is kept as an ignorable message, attachments are described.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .conversation import ImportedConversation
from .messages import EventItem, _Bad, iso_ms, turns_from_messages

#: The source tool's name (headers, trailers, ids, ``--from``).
TOOL = "llm"
#: How every SQLite database file begins.
MAGIC = b"SQLite format 3\x00"


def user_dir(env: Mapping[str, str], home: Path) -> Path:
    """Return llm's user directory, where its ``logs.db`` is (``llm logs path`` prints it).

    Args:
        env: the environment: ``LLM_USER_PATH`` names the directory; else it is the
            platform's user directory for ``io.datasette.llm`` (``$XDG_CONFIG_HOME`` or
            ``~/.config`` on Linux, ``~/Library/Application Support`` on macOS,
            ``%APPDATA%`` on Windows), the first of them that holds a ``logs.db``.
        home: the user's home directory.
    """
    if env.get("LLM_USER_PATH"):
        return Path(env["LLM_USER_PATH"])
    linux = (Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config") / "io.datasette.llm"
    mac = home / "Library" / "Application Support" / "io.datasette.llm"
    dirs = {"darwin": [mac, linux], "win32": [Path(env.get("APPDATA") or home) / "io.datasette.llm"]}.get(
        sys.platform, [linux, mac])
    return next((d for d in dirs if (d / "logs.db").is_file()), dirs[0])


def default_paths(env: Mapping[str, str], home: Path) -> list[Path]:
    """Return llm's ``logs.db`` on this machine when there is one (in :func:`user_dir`).

    Args:
        env: the environment (``LLM_USER_PATH``, ``XDG_CONFIG_HOME``, ``APPDATA``).
        home: the user's home directory.

    Returns:
        The ``logs.db`` found, or nothing.
    """
    db = user_dir(env, home) / "logs.db"
    return [db] if db.is_file() else []


def is_db(data: bytes) -> bool:
    """True when ``data`` begins as a SQLite database does."""
    return data.startswith(MAGIC)


def _open(path: Path) -> sqlite3.Connection:
    """The database, read-only (``mode=ro``: llm may be writing it)."""
    try:
        con = sqlite3.connect(f"file:{quote(os.fspath(path.resolve()))}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        con.execute("select count(*) from sqlite_master").fetchone()
        return con
    except sqlite3.DatabaseError as exc:
        raise _Bad(f"not a readable SQLite database ({exc})") from None


def _ms(value: Any, fallback: int) -> int:
    """A time of llm's as epoch ms (llm writes UTC, with or without saying so)."""
    ms = iso_ms(value, naive_utc=True)
    return fallback if ms is None else ms


def _usage(row: sqlite3.Row) -> dict | None:
    """A row's token counts as the API's usage object (its ``token_details`` beside them)."""
    keys = row.keys()
    inp = row["input_tokens"] if "input_tokens" in keys else None
    out = row["output_tokens"] if "output_tokens" in keys else None
    if inp is None and out is None:
        return None
    usage: dict[str, Any] = {"prompt_tokens": inp or 0, "completion_tokens": out or 0,
                             "total_tokens": (inp or 0) + (out or 0)}
    details = _json(row["token_details"]) if "token_details" in keys else None
    if isinstance(details, dict):
        usage.update({k: v for k, v in details.items() if k not in usage})
    return usage


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _model(row: sqlite3.Row) -> str | None:
    keys = row.keys()
    return (row["resolved_model"] if "resolved_model" in keys else None) or row["model"]


class _Db:
    """One database's conversations, read table by table."""

    def __init__(self, con: sqlite3.Connection):
        self.con = con
        self.tables = {r["name"] for r in con.execute("select name from sqlite_master where type = 'table'")}
        self.fragments: dict[int, str] = {}
        self.parent: dict[str, str | None] = {}  # message hash -> its parent's
        if "fragments" in self.tables:
            self.fragments = {r["id"]: r["content"] for r in con.execute("select id, content from fragments")}

    def rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        try:
            return self.con.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise _Bad(f"cannot read llm's tables ({exc}): is this a logs.db of llm?") from None

    # -- the message store (llm 0.36 on) --------------------------------------------------

    def chain(self, tip: str | None, at: str) -> list[str]:
        """The message hashes from the root to ``tip``."""
        out: list[str] = []
        seen: set[str] = set()
        while tip is not None:
            if tip in seen:
                raise _Bad(f"{at}: message {tip} is its own ancestor")
            if tip not in self.parent:
                raise _Bad(f"{at}: message {tip} is not in the messages table")
            seen.add(tip)
            out.append(tip)
            tip = self.parent[tip]
        return out[::-1]

    def said_when(self) -> tuple[dict[str, int], dict[str, sqlite3.Row]]:
        """When each message was first sent or said (the turn's time), and the turn that said each reply.

        From the turns alone, whichever thread they belong to: a message two threads share
        (a fork) reads the same in both.
        """
        when: dict[str, int] = {}
        made: dict[str, sqlite3.Row] = {}
        for turn in self.rows("select * from turns order by datetime_utc, id"):
            t = _ms(turn["datetime_utc"], 0)
            h, own = turn["tip_message_hash"], True
            while h is not None and h not in when and h in self.parent:
                own = own and h != turn["parent_message_hash"]
                when[h] = t
                if own:
                    made[h] = turn
                h = self.parent[h]
        return when, made

    def text(self, part: sqlite3.Row, payload: dict) -> str:
        if isinstance(part["text"], str):
            return part["text"]
        if isinstance(payload.get("text"), str):
            return payload["text"]
        pieces = payload.get("text_ref") or []
        return "".join(p.get("literal") or self.fragments.get(p.get("fragment"), "")  # type: ignore[arg-type]
                       for p in pieces if isinstance(p, dict))

    def message(self, hash_: str, role: str, model: str | None, usage: dict | None) -> list[Any]:
        """One stored message as chat messages (a tool message per result, reasoning kept aside)."""
        texts, calls, out = [], [], []
        for part in self.rows("select * from parts where message_hash = ? order by position", hash_):
            payload = _json(part["payload"]) or {}
            kind = part["type"]
            if kind == "text":
                texts.append(self.text(part, payload))
            elif kind == "reasoning" and self.text(part, payload):
                out.append({"role": "system", "name": "llm reasoning", "content": self.text(part, payload)})
            elif kind == "tool_call":
                args = payload.get("arguments")
                calls.append({"id": payload.get("tool_call_id") or None, "function": {
                    "name": payload.get("name") or part["tool_name"] or "tool",
                    "arguments": args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)}})
            elif kind == "tool_result":
                output = payload.get("output")
                out.append({"role": "tool", "tool_call_id": str(payload.get("tool_call_id")),
                            "content": output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)})
            else:
                texts.append(f"[{kind} not imported]")
        content = "\n".join(t for t in texts if t)
        if role == "system":
            return [EventItem("session/system", {"content": content})]
        if role == "assistant":
            said: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": calls}
            said.update({k: v for k, v in (("model", model), ("usage", usage)) if v is not None})
            return [*out, said]
        return [*out, {"role": "user", "content": content}] if content or not out else out

    def threads(self) -> list[tuple[sqlite3.Row, list[Any], list[int]]]:
        """Every thread with its messages and their times."""
        if not {"threads", "turns", "messages", "parts"} <= self.tables:
            return []
        self.parent = {r["hash"]: r["parent_hash"] for r in self.rows("select hash, parent_hash from messages")}
        roles = {r["hash"]: r["role"] for r in self.rows("select hash, role from messages")}
        when, made = self.said_when()
        out = []
        for thread in self.rows("select * from threads order by datetime_utc, id"):
            t = _ms(thread["datetime_utc"], 0)  # what no turn said (appended by hand) is dated by the thread
            messages, times = [], []
            for h in self.chain(thread["tip_message_hash"], f"thread {thread['id']!r}"):
                t = when.get(h, t)
                by = made.get(h)
                items = self.message(h, roles[h], _model(by) if by else None, _usage(by) if by else None)
                messages += items
                times += [t] * len(items)
            out.append((thread, messages, times))
        return out

    # -- the long-standing tables -------------------------------------------------------

    def legacy(self) -> dict[str, tuple[str, list[Any], list[int]]]:
        """Every conversation of ``responses``: its name, messages and their times."""
        if "responses" not in self.tables:
            return {}
        names = {}
        if "conversations" in self.tables:
            names = {r["id"]: r["name"] or "" for r in self.rows("select id, name from conversations")}
        calls: dict[str, list[sqlite3.Row]] = {}
        results: dict[str, list[sqlite3.Row]] = {}
        for table, into in (("tool_calls", calls), ("tool_results", results)):
            if table in self.tables:
                for r in self.rows(f"select * from {table} order by id"):  # noqa: S608 (a name of ours)
                    into.setdefault(r["response_id"], []).append(r)
        out: dict[str, tuple[str, list[Any], list[int]]] = {}
        system = ""
        for row in self.rows("select * from responses where conversation_id is not null order by datetime_utc, id"):
            cid = row["conversation_id"]
            name, messages, times = out.setdefault(cid, (names.get(cid, ""), [], []))
            t = _ms(row["datetime_utc"], times[-1] if times else 0)
            said: list[Any] = []
            if not messages:
                system = ""
            if (row["system"] or "") != system:
                system = row["system"] or ""
                said.append(EventItem("session/system", {"content": system}))
            said += [{"role": "tool", "tool_call_id": str(r["tool_call_id"]), "content": r["output"] or ""}
                     for r in results.get(row["id"], [])]
            if row["prompt"]:
                said.append({"role": "user", "content": row["prompt"]})
            reply: dict[str, Any] = {"role": "assistant", "content": row["response"] or "", "tool_calls": [
                {"id": c["tool_call_id"] or None, "function": {"name": c["name"], "arguments": c["arguments"] or ""}}
                for c in calls.get(row["id"], [])], "model": _model(row)}
            usage = _usage(row)
            if usage is not None:
                reply["usage"] = usage
            said.append(reply)
            messages += said
            times += [t] * len(said)
        return out


def _waiting(messages: list[Any]) -> int:
    """Where the last turn begins when its model asked for tools llm has not answered yet, else the end.

    llm logs each model call as it ends: a tool's result is logged with the next call. A
    turn imported before then would be closed with made-up results and the next import,
    holding the real ones, would fork it instead of growing the session.
    """
    answered = {m.get("tool_call_id") for m in messages if isinstance(m, dict) and m.get("role") == "tool"}
    last = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "assistant"), None)
    if last is None or all(c.get("id") in answered for c in last.get("tool_calls") or []):
        return len(messages)
    return max((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"), default=0)


def read_db(path: Path | None, data: bytes) -> list[ImportedConversation]:
    """Read every conversation of an llm ``logs.db``, oldest first.

    Args:
        path: the file (opened read-only, so that what llm is writing is seen); None for
            ``data`` read from stdin.
        data: the file's bytes (used when there is no path).

    Returns:
        The conversations (those without a prompt left out by the caller).

    Raises:
        _Bad: not a database llm wrote, or a chain of messages that cannot be followed.
    """
    if path is None:  # from stdin: SQLite reads files
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "logs.db"
            copy.write_bytes(data)
            return read_db(copy, b"")
    db = _Db(_open(path))
    try:
        legacy = db.legacy()
        if not legacy and not {"threads", "turns"} <= db.tables:
            raise _Bad("a SQLite database without llm's conversations (no responses or threads table)")
        out: list[tuple[int, ImportedConversation]] = []
        for thread in [("legacy", cid, *v) for cid, v in legacy.items()] + [
                ("thread", t["id"], t["name"] or "", m, ts) for t, m, ts in db.threads()]:
            kind, cid, name, messages, times = thread
            at = f"{'conversation' if kind == 'legacy' else 'thread'} {cid!r}, "
            held = _waiting(messages)
            chunks, notes = turns_from_messages(messages[:held], times[:held], title=name, where=at)
            if held < len(messages):
                notes.append(f"{at}its last turn waits for a tool's result; it is imported once llm has logged it")
            out.append((len(chunks), ImportedConversation(TOOL, cid, name, times[0] if times else 0,
                                                          [(cid, chunks)] if len(chunks) > 1 else [], notes)))
        chosen: dict[str, tuple[int, ImportedConversation]] = {}
        for n, conv in out:  # one id in both generations: the one holding more, the older when equal
            if conv.source_id not in chosen or n > chosen[conv.source_id][0]:
                chosen[conv.source_id] = (n, conv)
        convs = {cid: conv for cid, (_, conv) in chosen.items()}
        forked = {t["id"]: t["forked_from"] for t in db.rows("select id, forked_from from threads")} \
            if "threads" in db.tables else {}
        for conv in convs.values():
            conv.forked_from = forked.get(conv.source_id) or None
        return sorted(convs.values(), key=lambda c: c.created)
    finally:
        db.con.close()
