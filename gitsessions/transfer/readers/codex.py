"""Codex rollouts (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``) into conversations.

A rollout is one JSON object per line, ``{"timestamp", "type", "payload"}`` (see the import
formats notes). What becomes what:

- ``session_meta`` (the first line) names the conversation (``id``); Codex's instructions in
  it are kept as an ignorable message. A session forked from another repeats its lines
  (older Codex: ``forked_from_id``) or, as Codex 0.171 writes it (``/fork``, ``codex exec
  fork``), names them (``history_base``: the origin's thread and where the fork left it,
  its ordinal and byte offset): those lines are read from the origin's rollout (beside it,
  under its ``sessions`` folder or ``archived_sessions``, else under Codex's own folder;
  recursively for a fork of a fork) before the fork's own, so that its first turns are the
  origin's, event for event, and it is written as a fork of the origin's session there
  (``forked_from``). The origins, read whole from their files, are conversations of the
  fork's file too, before it (:func:`read_rollouts`): whichever file is imported first, the
  fork forks the origin's session. A fork whose origin's rollout is not here holds its own
  turns alone, says so and ``awaits`` it: read again by every import, once the origin is
  here the whole fork is written as a new session forking the origin's, and the first one
  is kept as it was (nothing rewritten, nothing lost).
- ``response_item`` messages: the user's prompts open turns; the assistant's replies are
  steps. What Codex injects as messages (``developer`` and ``system`` messages, ``user``
  messages holding ``<environment_context>`` or instructions) and the model's ``reasoning``
  summaries are kept as ignorable messages (stored, never sent to a model). The local paths
  in that context (the working directories named so far, workspace and writable roots, the
  skills' folder) are replaced unless the paths are kept (:mod:`.local_paths`).
- ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` are tool calls (one
  assistant message holds the calls of one reply), their ``*_output`` items the results.
- ``compacted`` is a ``compaction/summary`` event covering all before it (``through``): the
  model is sent the earlier prompts its ``replacement_history`` keeps word for word
  (``kept``), the summary, and what follows. ``/compact`` runs as a task of its own whose
  one reply is the summary: that reply is the summary's (its model and usage), no turn's,
  and the summary opens the next turn's commit; a compaction mid-task is in its turn. A
  remote compaction's summary is what its ``replacement_history`` kept in the clear, and
  its encrypted summary, which only the model's server reads, an ignorable message after
  it. ``turn_context`` names the model of the replies after it, and with the ``task_*``
  events ends the turn before it once that has a reply; ``event_msg`` ``token_count`` gives
  the usage of the reply (or summary) before it. Every other line (UI events,
  ``world_state``, types of newer versions) is skipped.
- A file Codex is still writing (a torn last line, a turn without its ``task_complete``)
  keeps its last turn for the next import, and what follows the last turn's end (the next
  turn's context, a compaction) always waits for the turn it opens; what a line becomes
  depends only on the lines before it: so that the next import finds every commit as it
  wrote it and fast-forwards.

Nothing here reads the file system but :func:`default_paths` and a fork's origins
(:func:`find_rollout`, their files).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import stream
from .conversation import ImportedConversation
from .local_paths import LocalPaths
from .messages import COMPACTION, TURN_OVER, _Bad, _kind, iso_ms, turns_from_messages

#: The source tool's name (headers, trailers, ids, ``--from``).
TOOL = "codex"
#: Longest title taken from the first prompt, characters.
_TITLE_MAX = 80
#: How injected context begins (Codex writes it as ``user`` messages).
_CONTEXT_TAGS = ("<environment_context>", "<user_instructions>", "<user_shell_command>", "# AGENTS.md",
                 "<turn_aborted>")
#: ``event_msg`` types that open or close a turn.
_TURN_EVENTS = ("task_started", "task_complete", "turn_aborted")
#: Where Codex moves an archived thread's rollout: a folder beside ``sessions``.
_ARCHIVED = "archived_sessions"
#: A thread id as a rollout's file name ends with it (anything else is never looked for).
_THREAD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def codex_home(env: Mapping[str, str], home: Path) -> Path:
    """Return Codex's own folder (its ``config.toml``, its rollouts): ``$CODEX_HOME``, else ``~/.codex``.

    Args:
        env: the environment.
        home: the user's home directory.
    """
    return Path(env["CODEX_HOME"]).expanduser() if env.get("CODEX_HOME") else home / ".codex"


def sessions_dir(env: Mapping[str, str], home: Path) -> Path:
    """Return the folder Codex keeps its rollouts in: ``sessions`` in :func:`codex_home`.

    Args:
        env: the environment.
        home: the user's home directory.
    """
    return codex_home(env, home) / "sessions"


def default_paths(env: Mapping[str, str], home: Path) -> list[Path]:
    """Return the rollout files Codex keeps on this machine, oldest first.

    Args:
        env: the environment (``CODEX_HOME`` names Codex's directory, default ``~/.codex``).
        home: the user's home directory.

    Returns:
        Every ``**/rollout-*.jsonl`` under :func:`sessions_dir` (empty when there is none).
    """
    return sorted(sessions_dir(env, home).glob("**/rollout-*.jsonl"))


def is_rollout(head: Any) -> bool:
    """True when ``head`` (a rollout's first line, parsed) is Codex's ``session_meta`` line."""
    return (isinstance(head, dict) and head.get("type") == "session_meta"
            and isinstance(head.get("payload"), dict))


def find_rollout(thread: str, near: Path | None = None, elsewhere: Sequence[Path] = ()) -> Path | None:
    """Return the rollout of Codex thread ``thread`` (``rollout-*-<thread>.jsonl``), if it is on this machine.

    Looked for beside ``near``, then under the ``sessions`` folder ``near`` is in, then under
    each of ``elsewhere``; in each ``sessions`` folder's ``archived_sessions`` beside it too.

    Args:
        thread: the thread's id.
        near: a rollout of the same Codex (a fork of the thread), if read from a file.
        elsewhere: folders Codex keeps rollouts in (its ``sessions`` folder).

    Returns:
        The first such file by name, or None (none, or an id no file name holds).
    """
    if _THREAD.fullmatch(thread) is None:
        return None
    roots: list[tuple[Path, str]] = [(near.parent, "")] if near is not None else []
    roots += [(folder, "**/") for folder in [*(p for p in (near.parents if near else ()) if p.name == "sessions"),
                                              *elsewhere]]
    roots += [(root.parent / _ARCHIVED, "**/") for root, _ in roots if root.name == "sessions"]
    for root, depth in dict.fromkeys(roots):
        try:
            found = sorted(p for p in root.glob(f"{depth}rollout-*-{thread}.jsonl") if p.is_file())
        except OSError:
            continue
        if found:
            return found[0]
    return None


@dataclass(frozen=True)
class _Base:
    """Where the history of a fork Codex 0.171 wrote begins: its origin's lines before a point.

    Such a fork (``history_mode: "paginated"``) does not repeat them: its ``session_meta``
    names them (``history_base``), its own lines go on from there.

    Attributes:
        thread: the origin's id.
        offset: how many bytes of the origin's file they are (``end_byte_offset``), if said.
        ordinal: the ordinal of the origin's first line after them (``end_ordinal_exclusive``), if said.
    """

    thread: str
    offset: int | None
    ordinal: int | None

    @classmethod
    def of(cls, meta: dict) -> _Base | None:
        """The base a ``session_meta`` names (None: its lines are all its history)."""
        base = meta.get("history_base")
        if not isinstance(base, dict) or not isinstance(base.get("thread_id"), str) or not base["thread_id"]:
            return None

        def number(value: Any) -> int | None:
            return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

        return cls(base["thread_id"], number(base.get("end_byte_offset")),
                   number(base.get("end_ordinal_exclusive", meta.get("forked_from_ordinal_exclusive"))))

    def past(self, end: int, line: Any) -> bool:
        """Whether an origin's line (ending ``end`` bytes in; parsed, or None) lies after the fork.

        Told by the line's ordinal when both have one (it holds however the file's bytes
        changed since: a copy, a rewritten line), else by the byte offset.
        """
        ordinal = line.get("ordinal") if isinstance(line, dict) else None
        if self.ordinal is not None and isinstance(ordinal, int) and not isinstance(ordinal, bool):
            return ordinal >= self.ordinal
        return self.offset is not None and end > self.offset


class _Counted:
    """A file's lines as they are read, and where the last one given ends (bytes)."""

    def __init__(self, raw: Iterable[bytes]):
        self.raw, self.end = raw, 0

    def __iter__(self) -> Iterator[bytes]:
        for data in self.raw:
            self.end += len(data)
            yield data


def _ms(value: Any, at: str) -> int:
    """A line's ISO 8601 time as epoch ms."""
    ms = iso_ms(value)
    if ms is None:
        raise _Bad(f"{at}: \"timestamp\" {value!r} is not an ISO 8601 time with a zone")
    return ms


def _text(content: Any) -> str:
    """A message's ``content`` items as text (an image described)."""
    if isinstance(content, str):
        return content
    out = []
    for item in content if isinstance(content, list) else []:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            out.append(item["text"])
        elif isinstance(item, dict) and item.get("type") == "input_image":
            out.append("[image not imported]")
    return "\n".join(out)


def _output(value: Any) -> str:
    """A tool output as text: a string, ``{"content"}``, or a list of content items."""
    if isinstance(value, dict) and "content" in value:
        value = value["content"]
    if isinstance(value, list):
        return _text(value)
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _usage(info: Any) -> dict | None:
    """A ``token_count`` event's ``last_token_usage`` as the API's usage object."""
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(last, dict):
        return None
    num = {k: v for k, v in last.items() if isinstance(v, int) and not isinstance(v, bool)}
    usage: dict[str, Any] = {"prompt_tokens": num.get("input_tokens", 0),
                             "completion_tokens": num.get("output_tokens", 0),
                             "total_tokens": num.get("total_tokens",
                                                     num.get("input_tokens", 0) + num.get("output_tokens", 0))}
    if "cached_input_tokens" in num:
        usage["prompt_tokens_details"] = {"cached_tokens": num["cached_input_tokens"]}
    if "reasoning_output_tokens" in num:
        usage["completion_tokens_details"] = {"reasoning_tokens": num["reasoning_output_tokens"]}
    return usage


class _Rollout:
    """The messages of one rollout, built line by line."""

    def __init__(self, *, keep_paths: bool = False, elsewhere: Sequence[Path] = ()) -> None:
        self.elsewhere = elsewhere
        self.messages: list[Any] = []
        self.times: list[int] = []
        self.model: str | None = None
        self.reply: dict | None = None  # the assistant message the next calls join
        self.said: dict | None = None  # the last assistant message (a token count is its usage)
        self.answered = False  # the prompt so far has a reply: a turn may end
        self.tasks = False  # this Codex writes task events (task_complete ends each turn)
        self.complete = False  # the last prompt's task is complete
        self.notes: list[str] = []
        self.local = LocalPaths(keep_paths)  # the working directories the rollout names (session_meta, turn_context)
        self.sealed: set[str] = set()  # the encrypted compaction summaries kept so far (each once)
        self.before = False  # whether the prompt had a reply before the last one
        self.floor = 0  # the messages before the first line's (Codex's own prompt): never held back
        self.instructions: str | None = None  # Codex's own prompt, as the last session_meta gave it
        self.origins: list[Path] = []  # the rollouts the history began in, read (the first origin first)
        self.missing: str | None = None  # the thread whose rollout, where the history begins, was not found

    def read(self, raw: Iterable[bytes], path: Path | None, cut: _Base | None = None,
             within: tuple[str, ...] = ()) -> tuple[dict | None, bool]:
        """Take a rollout's lines, after those of the rollout its history begins in (a fork's).

        Args:
            raw: its bytes, line by line.
            path: its file, if any (its origin is looked for near it).
            cut: for an origin's file, where the fork left it: only the lines before are read.
            within: the threads whose history this reading is part of (a loop is no history).

        Returns:
            Its ``session_meta`` (None: no line), and whether its last line is torn (being written).

        Raises:
            _Bad: a line is not JSON or cannot be read (the message names the line, and the
                file when it is an origin's).
        """
        meta: dict | None = None
        counted = _Counted(raw)
        at = "" if cut is None or path is None else f"{path.name} (where its history begins), "
        for n, line, ended in stream.lines(counted):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                if not ended:  # Codex is writing it: the next import reads it
                    return meta, True
                if cut is not None and cut.past(counted.end, None):
                    break  # (after the fork: none of its history)
                raise _Bad(f"{at}line {n}: not JSON ({exc})") from None
            if meta is None:
                if not is_rollout(obj):
                    raise _Bad(f"{at}line {n}: a Codex rollout begins with a session_meta line")
                meta = obj["payload"]
                self.begin(meta, path, within)
            elif cut is None or not cut.past(counted.end, obj):
                self.line(obj, f"{at}line {n}")
            else:
                break
        return meta, False

    def begin(self, meta: dict, path: Path | None, within: tuple[str, ...]) -> None:
        """Take a ``session_meta``: the history it goes on from, its working directory, Codex's own prompt.

        Codex's prompt is kept (never sent) where it is given: first, or where a fork's
        differs from its origin's.
        """
        base = _Base.of(meta)
        if base is not None:
            self.origin(base, path, (*within, str(meta.get("id"))))
        self.local.name(meta.get("cwd"))
        given = meta.get("base_instructions") or meta.get("instructions")
        given = given.get("text") if isinstance(given, dict) else given
        if isinstance(given, str) and given.strip() and given != self.instructions:
            self.instructions = given
            self.aside("codex instructions", given, self.times[-1] if self.times else 0)
            if len(self.messages) == 1:
                self.floor = 1  # dated once what follows is known

    def origin(self, base: _Base, near: Path | None, within: tuple[str, ...]) -> None:
        """Read the lines of the rollout a fork's history begins in, up to the fork (see :class:`_Base`)."""
        found = None if base.thread in within else find_rollout(base.thread, near, self.elsewhere)
        meta = None
        try:
            opened = found.open("rb") if found is not None else None
        except OSError:  # (not readable here: as if it were not here)
            opened = None
        if found is not None and opened is not None:
            with opened:
                try:
                    meta, _ = self.read(opened, found, base, within)
                except OSError as exc:
                    raise _Bad(f"{found.name}, where its history begins, cannot be read ({exc})") from None
        if found is None or meta is None:
            self.missing = base.thread
        else:
            self.origins.append(found)

    def add(self, msg: Any, t: int) -> None:
        self.messages.append(msg)
        self.times.append(t)

    def aside(self, name: str, text: str, t: int) -> None:
        """Keep ``text`` as an ignorable message; the context Codex injects without the paths named so far.

        Only the lines before it decide what it becomes: a file that grows (a resumed
        session), or whose start a fork goes on from, gives its first messages again as they were.
        """
        if name.endswith(" context"):
            text = self.local.out_of(text)
        self.add({"role": "system", "name": name, "content": text}, t)

    def assistant(self, content: str, t: int) -> dict:
        self.before, self.answered = self.answered, True
        msg: dict[str, Any] = {"role": "assistant", "content": content}
        if self.model:
            msg["model"] = self.model
        self.add(msg, t)
        self.said = msg
        return msg

    def item(self, item: dict, t: int, at: str) -> None:
        """Take one ``response_item`` of the rollout (``at`` names its line, for errors)."""
        kind = item.get("type")
        if kind == "message":
            self.message(item, t, at)
        elif kind in _CALLS:
            self.call(item, t, at)
        elif kind in _OUTPUTS:
            self.reply = None
            self.add({"role": "tool", "tool_call_id": str(item.get("call_id")), "content": _output(item.get("output"))},
                     t)
        elif kind == "reasoning":
            summary = "\n".join(s["text"] for s in item.get("summary") or []
                                if isinstance(s, dict) and isinstance(s.get("text"), str))
            if summary:
                self.aside("codex reasoning", summary, t)
        elif kind == "web_search_call":
            action: dict = item["action"] if isinstance(item.get("action"), dict) else {}
            self.aside("codex web search", str(action.get("query") or action.get("url") or "a web search"), t)
        elif kind in ("compaction_summary", "compaction"):
            self.seal(item, t)
        elif kind != "ghost_snapshot":
            note = f"items of type {kind!r} were skipped"
            if note not in self.notes:
                self.notes.append(note)

    def message(self, item: dict, t: int, at: str) -> None:
        """A message item: a reply, a prompt, or the context Codex gives the model (kept aside)."""
        role, text = item.get("role"), _text(item.get("content"))
        if role == "assistant":
            self.reply = self.assistant(text, t)
        elif role == "user" and not text.lstrip().startswith(_CONTEXT_TAGS):
            self.reply, self.answered, self.complete = None, False, False
            self.add({"role": "user", "content": text}, t)
        elif role in ("user", "developer", "system"):
            self.end_turn(t)  # older Codex writes no turn events: its context opens the next turn
            self.aside(f"codex {role} context", text, t)
        else:
            raise _Bad(f"{at}: message role {role!r} is not user, assistant, developer or system")

    def call(self, item: dict, t: int, at: str) -> None:
        """A tool call item (a function, a custom tool, a shell action): a call of the reply it is part of."""
        kind = item.get("type")
        call_id = item.get("call_id") or item.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise _Bad(f"{at}: a {kind} has no \"call_id\"")
        if kind == "function_call":
            args = item.get("arguments")
            args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        else:  # a custom tool's free text (apply_patch), a shell action: as a JSON object
            args = json.dumps({"input": item.get("input")} if kind == "custom_tool_call"
                              else item.get("action"), ensure_ascii=False)
        name = item.get("name") if isinstance(item.get("name"), str) and item.get("name") else "shell"
        if self.reply is None:
            self.reply = self.assistant("", t)
        self.reply.setdefault("tool_calls", []).append(
            {"id": call_id, "function": {"name": name, "arguments": args}})

    def end_turn(self, t: int) -> None:
        """The turn is over (once its prompt has a reply): what follows is the next turn's."""
        if self.answered:
            self.reply, self.answered = None, False
            self.add(TURN_OVER, t)

    def hold_back(self, over: bool) -> None:
        """Leave out what may still change: all after the last turn's end, and that turn unless ``over``.

        What follows a turn's end (the next turn's context, a compaction) is imported with
        the turn it opens, in its commit; a turn Codex is still writing is imported once
        it is over. Either would otherwise be written where the next import does not put it.
        """
        prompt = max((i for i, m in enumerate(self.messages) if isinstance(m, dict) and m.get("role") == "user"),
                     default=-1)
        ends = [i for i, m in enumerate(self.messages) if m is TURN_OVER]
        after = [i for i in ends if i > prompt]
        if over:
            cut = after[-1] + 1 if after else len(self.messages)
        else:
            before = [i for i in ends if i < prompt]
            cut = before[-1] + 1 if before else max(prompt, 0)
            while not before and cut > self.floor and isinstance(self.messages[cut - 1], dict) and (
                    self.messages[cut - 1].get("role") == "system"):
                cut -= 1  # no end marked (the first turn): back over the context Codex injected for it
            self.notes.append("its last turn is still going on; it is imported once it is over")
        self.messages, self.times = self.messages[:cut], self.times[:cut]

    def kept(self, history: Any, at: str) -> str:
        """The summary's text from a remote compaction's ``replacement_history``.

        Compacted by the model's server (codex-rs ``compact_remote.rs``), a ``compacted``
        line has no ``message``: the items Codex goes on with are the ``replacement_history``,
        what it kept in the clear (prompts, replies, calls) and the summary proper as an
        encrypted ``compaction`` item only that server reads. Injected context is left out:
        each turn brings its own.
        """
        parts = []
        for item in history if isinstance(history, list) else []:
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "message" and item.get("role") in ("user", "assistant"):
                text = _text(item.get("content"))
                if not (item["role"] == "user" and text.lstrip().startswith(_CONTEXT_TAGS)):
                    parts.append(f"{item['role']}: {text}")
            elif kind in _CALLS:
                parts.append(f"assistant called {item.get('name') or 'shell'}: "
                             f"{_output(item.get('arguments', item.get('input', item.get('action'))))}")
            elif kind in _OUTPUTS:
                parts.append(f"tool result: {_output(item.get('output'))}")
            elif kind in ("compaction", "compaction_summary"):
                parts.append("[the rest of the summary is encrypted, for the model's server alone: kept aside, "
                             "not sent]")
                self.notes.append(f"{at}: Codex's summary there is encrypted; what it kept in the clear stands for it")
        return "\n\n".join(parts)

    def compacted(self, payload: dict, t: int, at: str) -> None:
        """A ``compacted`` line: the summary the model goes on from, covering all before it.

        ``/compact`` runs as a task of its own whose one reply is the summary: that reply is
        the summary's (its model and usage), not a turn's. The earlier prompts Codex keeps
        word for word (its ``replacement_history``) are the summary's ``kept``; a remote
        compaction's summary is what that history kept in the clear (:meth:`kept`).
        """
        self.reply = None
        summary, history = payload.get("message"), payload.get("replacement_history")
        msg: dict[str, Any] = {"role": COMPACTION}
        if isinstance(summary, str) and summary.strip():
            if (reply := self.unsaid(summary)) is not None:
                msg.update((k, reply[k]) for k in ("model", "usage") if k in reply)
            msg["kept"] = self.prompts_kept(history)
        else:  # compacted by the model's server
            summary = self.kept(history, at)
        msg.update(content=summary, through=len(self.messages) - 1)
        msg.setdefault("model", self.model)
        self.add(msg, t)
        self.said = msg  # a token count after it is the summary's usage
        for item in history if isinstance(history, list) else []:
            if isinstance(item, dict) and item.get("type") in ("compaction", "compaction_summary"):
                self.seal(item, t)

    def unsaid(self, summary: str) -> dict | None:
        """Take back the reply just given when it is the summary's text (the ``/compact`` task's); return it.

        Codex's ``message`` is that text after a lead of its own (what it tells the model the
        summary is), so nothing of the reply is lost. Asides after it stay; the prompt is
        answered as it was before it.
        """
        at = len(self.messages)
        while at > 0 and isinstance(self.messages[at - 1], dict) and self.messages[at - 1].get("role") == "system":
            at -= 1
        reply = self.said
        said = str(reply.get("content", "")).strip() if reply is not None else ""
        if reply is None or at == 0 or self.messages[at - 1] is not reply or reply.get("tool_calls") or not said or (
                not summary.strip().endswith(said)):
            return None
        del self.messages[at - 1], self.times[at - 1]
        self.answered, self.said = self.before, None
        return reply

    def prompts_kept(self, history: Any) -> list[int]:
        """The indices of the prompts a ``replacement_history`` keeps word for word, matched in order.

        Its injected context and the summary itself (a user message too) match no prompt; a
        prompt Codex cut to fit matches none either, and is left to the summary.
        """
        prompts = [i for i, m in enumerate(self.messages) if isinstance(m, dict) and m.get("role") == "user"]
        out, at = [], 0
        for item in history if isinstance(history, list) else []:
            if not (isinstance(item, dict) and item.get("type") == "message" and item.get("role") == "user"):
                continue
            text = _text(item.get("content"))
            j = next((j for j in range(at, len(prompts)) if self.messages[prompts[j]]["content"] == text), None)
            if j is not None:
                out.append(prompts[j])
                at = j + 1
        return out

    def seal(self, item: dict, t: int) -> None:
        """Keep an encrypted compaction summary as an ignorable message (stored, never sent).

        Only the server that wrote it reads it; kept so that nothing of the rollout is lost
        (the same one in a ``compacted`` line and as an item is kept once).
        """
        sealed = item.get("encrypted_content")
        if isinstance(sealed, str) and sealed and sealed not in self.sealed:
            self.sealed.add(sealed)
            self.aside("codex encrypted compaction", sealed, t)

    def line(self, obj: Any, at: str) -> None:
        if not isinstance(obj, dict):
            raise _Bad(f"{at} is {_kind(obj)}, not an object")
        kind, payload = obj.get("type"), obj.get("payload")
        if not isinstance(payload, dict):
            return  # a line of a kind this reader does not know: newer versions add them
        t = _ms(obj.get("timestamp"), at) if "timestamp" in obj else (self.times[-1] if self.times else 0)
        if kind == "response_item":
            self.item(payload, t, at)
        elif kind == "compacted":
            self.compacted(payload, t, at)
        elif kind == "turn_context" or (kind == "event_msg" and payload.get("type") in _TURN_EVENTS):
            if kind == "event_msg":
                self.tasks = True
                self.complete = payload.get("type") != "task_started"
            self.end_turn(t)  # (older ones write turn_context after the prompt: no end there)
            if kind == "turn_context" and isinstance(payload.get("model"), str):
                self.model = payload["model"]
            if kind == "turn_context":
                self.local.name(payload.get("cwd"))
        elif kind == "event_msg" and payload.get("type") == "token_count" and self.said is not None:
            usage = _usage(payload.get("info"))
            if usage is not None and "usage" not in self.said:
                self.said["usage"] = usage


def read_rollout(raw: Iterable[bytes], path: Path | None = None, *, keep_paths: bool = False,
                 elsewhere: Sequence[Path] = ()) -> ImportedConversation:
    """Convert a rollout into one conversation, each turn a chunk.

    A fork Codex 0.171 wrote names where its history begins (:class:`_Base`): that
    rollout's lines up to the fork are read first (from its file, found by
    :func:`find_rollout`; of a fork of a fork, recursively), so its first turns are its
    origin's, event for event, and the writer forks the origin's session there.

    Args:
        raw: the file's bytes, line by line (a binary file: read a line at a time, never held
            whole); its first line is ``session_meta``.
        path: the file, if read from one (a fork's origin is looked for near it).
        keep_paths: keep the local paths of the context Codex injected (``--keep-paths``);
            else each is :data:`.local_paths.LOCAL_PATH`.
        elsewhere: the folders Codex keeps rollouts in, where a fork's origin is looked for
            when it is not near ``path``.

    Returns:
        The conversation (titled by its first prompt; ``forked_from`` noted; ``awaits`` the
        origin whose rollout was not found).

    Raises:
        _Bad: a line is not JSON or cannot be read (the message names the line).
    """
    return _read(raw, path, keep_paths, elsewhere)[0]


def read_rollouts(raw: Iterable[bytes], path: Path | None = None, *, keep_paths: bool = False,
                  elsewhere: Sequence[Path] = ()) -> list[ImportedConversation]:
    """Convert a rollout into its conversation, after those of the rollouts a fork's history begins in.

    Each origin is read whole from its own file (the first origin first): written before the
    fork, it is what the fork forks, whichever file is imported first; imported on its own
    later, it is found written. An origin whose whole file does not read is left to its own
    import (which says why).

    Args:
        raw: the file's bytes, line by line.
        path: the file, if read from one.
        keep_paths: as :func:`read_rollout`'s.
        elsewhere: as :func:`read_rollout`'s.

    Returns:
        The origins' conversations, then the file's.

    Raises:
        _Bad: a line of the file, or of an origin's up to the fork, cannot be read.
    """
    conv, origins = _read(raw, path, keep_paths, elsewhere)
    out = []
    for origin in origins:
        try:
            with origin.open("rb") as f:
                theirs = _read(f, origin, keep_paths, elsewhere)[0]
        except (OSError, _Bad):
            continue
        theirs.notes.append(f"read with codex session {conv.source_id}, which was forked from it")
        out.append(theirs)
    return [*out, conv]


def _read(raw: Iterable[bytes], path: Path | None, keep_paths: bool,
          elsewhere: Sequence[Path]) -> tuple[ImportedConversation, list[Path]]:
    """:func:`read_rollout`, and the origins' files its history was read from (the first origin first)."""
    rollout = _Rollout(keep_paths=keep_paths, elsewhere=elsewhere)
    meta, torn = rollout.read(raw, path)
    assert meta is not None  # the caller detected the format from the first line
    rollout.hold_back(over=not torn and (rollout.complete or not rollout.tasks))
    if rollout.floor:  # Codex's own prompt is dated as what follows it
        rollout.times[0] = rollout.times[1] if len(rollout.times) > 1 else 0
    sid = meta.get("id")
    if not isinstance(sid, str) or not sid:
        raise _Bad("line 1: session_meta has no \"id\"")
    created = _ms(meta.get("timestamp"), "line 1") if meta.get("timestamp") else (
        rollout.times[0] if rollout.times else 0)
    prompts = [m["content"] for m in rollout.messages if isinstance(m, dict) and m.get("role") == "user"]
    title = prompts[0].strip().split("\n", 1)[0][:_TITLE_MAX] if prompts else ""
    chunks, notes = turns_from_messages(rollout.messages, rollout.times, title=title)
    notes = rollout.notes + notes
    if not prompts:
        notes.append("it holds no prompt yet")
    base = _Base.of(meta)
    forked = base.thread if base is not None else meta.get("forked_from_id")
    forked = forked if isinstance(forked, str) and forked else None
    if rollout.missing is not None:
        notes.append(f"its history begins in codex session {rollout.missing}, whose rollout is not on this "
                     "machine (beside it or in Codex's sessions folder): imported with the turns that follow; "
                     "imported again once that rollout is here, it becomes a fork of that session, as a new "
                     "session (this one stays as it is)")
        forked = None if base is not None and base.thread == rollout.missing else forked
    elif forked:
        notes.append(f"it was forked from codex session {forked}")
    return ImportedConversation(TOOL, sid, title, created, [(sid, chunks)] if len(chunks) > 1 else [], notes,
                                forked_from=forked, awaits=rollout.missing), rollout.origins
