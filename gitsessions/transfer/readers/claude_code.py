"""Claude Code transcripts (``<config>/projects/<escaped cwd>/<session>.jsonl``) into conversations.

A transcript is one JSON object per line (see the import formats notes). The lines form a
graph through ``parentUuid``: going back and sending again leaves the abandoned branch in
the file. What becomes what:

- The branch ending at the last message line appended is the session; every other leaf
  (a rewound branch) is a fork where it leaves it, whatever line it leaves from (2.1.197
  hangs a prompt from the turn's ``turn_duration`` line). A ``compact_boundary`` line
  starts a new root whose ``logicalParentUuid`` names the line before it: the branch goes
  on through it, and the summary the tool wrote after it is a ``compaction/summary``
  event; the lines its ``compactMetadata`` keeps word for word (``preservedSegment``,
  ``preservedMessages``) are left out of what it covers (its ``through``), so a continued
  session is sent the summary, then them, then what follows, as Claude Code sends them.
- Lines that are no message (``attachment``, ``file-history-snapshot``, ``queue-operation``,
  ``mode``, ``permission-mode``, ``last-prompt`` and types not known yet) are passed over,
  also inside the chain.
- One reply written as several ``assistant`` lines sharing ``message.id`` is one message;
  its ``tool_use`` blocks are tool calls (the sub-agent tool is ``Agent``), the
  ``tool_result`` blocks of the ``user`` lines after it their results (``is_error`` kept; a
  result's list of text blocks its text). Parallel calls' results hang from their calls'
  lines: they are the branch's, no rewind (:mod:`.claude_code_graph`).
- ``thinking`` blocks, meta lines (``isMeta``), the tool's own notes (slash command echoes
  and their output, without terminal escapes; ``system`` lines; ``role: "system"`` entries
  beside tool results; "[Request interrupted by user]"), and the assistant lines Claude Code
  writes itself (``model: "<synthetic>"``: "No response requested." when a session is
  resumed, an API error) are ignorable events: kept, never sent to a model. Images are
  described in the text. A prompt is a prompt whoever wrote it (``promptSource``,
  ``origin.kind``: a hook's, a task's notification): the model saw it and answered it.
- The local paths in what Claude Code wrote itself (the compaction summary's note of the
  transcript's file, meta lines, system lines and entries, a slash command's output, its
  synthetic replies) are replaced unless the paths are kept (:mod:`.local_paths`); the
  prompts, replies, tool calls and results are as they were said.
- A turn is a commit from its prompt to its own last line (its last reply or result, the
  user's stop, an API error). The tool's lines after that (``turn_duration``, a slash
  command's echo, a compaction, the synthetic reply of a resume) open the next turn's
  commit, and after the last turn wait for the prompt that follows: a turn once committed
  is never changed by lines appended to it later, so a resumed session grows, never forks.
  A last turn still under way is left for the next import; a branch with no prompt gives
  nothing.
- Sidechain lines (``isSidechain``: a sub-agent, in the same file or in
  ``<session>/subagents/agent-*.jsonl``) are their own conversation, spawned by the session
  at the time the sub-agent began (its lineage); a sub-agent's ``.meta.json`` beside its
  file gives its title (``description``, ``agentType``) and the call that ran it
  (``toolUseId``: the lineage is that call's commit).
- A session made with ``--resume ID --fork-session`` repeats the origin's lines: when they
  keep the origin's ``sessionId`` (older versions) it is spawned by the origin where they
  end; 2.1 gives them the new id, and names no origin: the transcripts beside it that begin
  with the same line (its ``uuid``) and were begun before it are its origins (:func:`.family`):
  it forks them where they part, sharing the commits of the lines they share. An origin
  imported after its copy (its file missing then) is a session of its own.
- The title: the last ``custom-title`` (a rename), else the last ``ai-title``, else a
  ``summary`` of the session's branch, else its first prompt.

Not read: ``toolUseResult`` (the tool's own copy of a result), file snapshots, what the
attachments held (listings, a re-attached file), usage beyond each reply's counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ...log.events import Event
from ...text import without_escapes
from . import anthropic, stream
from .claude_code_family import begun, family
from .claude_code_graph import _Node, _Transcript, is_system_entry
from .conversation import ImportedConversation
from .local_paths import LocalPaths
from .messages import COMPACTION, TURN_OVER, _Bad, turns_from_messages

#: The source tool's name (headers, trailers, ids, ``gs import --from``).
TOOL = "claude-code"
#: Line types of Claude Code's own (beyond messages) that tell a file is one of its transcripts.
_OWN_TYPES = frozenset({"summary", "file-history-snapshot", "queue-operation", "custom-title", "ai-title",
                        "last-prompt", "attachment", "mode", "permission-mode"})
#: The tool's own text in a user line: a slash command's echo and output, a cancel notice.
_TOOL_NOTE = re.compile(r"\s*(<(command-name|command-message|local-command-stdout|local-command-caveat|"
                        r"local-command-stderr|bash-input|bash-stdout|bash-stderr)>|\[Request interrupted by user)")
#: A note that is the tool's own words (a slash command's output): its local paths are the machine's.
_OWN_OUTPUT = re.compile(r"\s*<local-command-")


def default_paths(env: Mapping[str, str], home: Path) -> list[Path]:
    """Every Claude Code transcript on this machine: sessions first, each group oldest first, then sub-agents.

    Claude Code keeps its files in ``CLAUDE_CONFIG_DIR`` when that is set, else ``~/.claude``;
    transcripts are ``projects/<escaped cwd>/<session>.jsonl`` and a session's sub-agents
    ``projects/<dir>/<session>/subagents/agent-*.jsonl`` (older versions put them beside the
    sessions as ``agent-*.jsonl``).

    Args:
        env: the environment (the face reads it).
        home: the user's home directory.

    Returns:
        The transcript files, in the order :func:`_transcripts` says (empty when the folder
        is missing).
    """
    return _transcripts(projects_dir(env, home), "*/")


def folder_paths(folder: Path) -> list[Path]:
    """The transcripts of a folder of Claude Code's, in the order :func:`default_paths` gives them.

    Args:
        folder: its config folder (holding ``projects``), its ``projects`` folder (a folder
            per working directory), or one working directory's folder (its sessions'
            ``*.jsonl`` and their ``<session>/subagents/``).

    Returns:
        The transcript files (empty when it holds none).
    """
    if (folder / "projects").is_dir():
        return _transcripts(folder / "projects", "*/")
    return _transcripts(folder, "" if any(p.is_file() for p in folder.glob("*.jsonl")) else "*/")


def _transcripts(folder: Path, within: str) -> list[Path]:
    """The transcripts ``within`` (a glob: ``*/`` for each project's, ``""`` for one's) ``folder``.

    Sessions come before sub-agents (a sub-agent's lineage names its session, which must be
    imported first); sessions in the order they were begun (a ``--fork-session`` copy after
    its origin, which it then forks: :func:`.begun`), sub-agents by name.
    """
    if not folder.is_dir():
        return []
    files = sorted((p for p in folder.glob(f"{within}*.jsonl") if p.is_file()), key=lambda p: (begun(p), p))
    agents = sorted(p for p in folder.glob(f"{within}*/subagents/*.jsonl") if p.is_file())
    return ([p for p in files if not p.name.startswith("agent-")] + [p for p in files if p.name.startswith("agent-")]
            + agents)


def config_dir(env: Mapping[str, str], home: Path) -> Path:
    """The folder of Claude Code's files (user settings, transcripts): ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    config = env.get("CLAUDE_CONFIG_DIR")
    return Path(config).expanduser() if config else home / ".claude"


def projects_dir(env: Mapping[str, str], home: Path) -> Path:
    """The folder holding Claude Code's transcripts (``projects`` in :func:`config_dir`)."""
    return config_dir(env, home) / "projects"


def is_transcript(obj: Any) -> bool:
    """True when ``obj`` (a file's first line, parsed) begins a Claude Code transcript."""
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str) or "seq" in obj or "payload" in obj:
        return False
    return obj["type"] in _OWN_TYPES or ("sessionId" in obj and ("uuid" in obj or "parentUuid" in obj))


def _aside(name: str, text: str) -> dict:
    return {"role": "system", "name": name, "content": text}


def _preserved(meta: Any) -> tuple[str, ...]:
    """The uuids of the lines a compaction keeps word for word (sent after its summary), from its metadata.

    ``preservedSegment`` names the first (``headUuid``) and last kept line, ``preservedMessages``
    each of them (``uuids``); either may be missing.
    """
    if not isinstance(meta, dict):
        return ()
    segment, kept = meta.get("preservedSegment"), meta.get("preservedMessages")
    heads = [segment.get("headUuid")] if isinstance(segment, dict) else []
    uuids = kept.get("uuids") if isinstance(kept, dict) else kept
    return tuple(u for u in [*heads, *(uuids if isinstance(uuids, list) else [])] if isinstance(u, str))


class _Messages:
    """The chat messages of one branch (its lines, root first) and when each was said.

    Attributes:
        ending: the indices of the asides that are their turn's own last line (the user's
            stop, an API error): what the turn ended with, not what the tool added after it.
        firsts: the index of the first message each line gave (a line of a reply: the reply's).
    """

    def __init__(self, start: int, keep_paths: bool = False):
        self.messages: list[dict] = []
        self.times: list[int] = []
        self.ending: set[int] = set()
        self.firsts: dict[str, int] = {}
        self.t = start
        self.reply: dict | None = None  # the assistant message being gathered from its lines
        self.reply_id: Any = None
        self.reply_at = 0  # where the reply gathered goes (after the thinking asides its lines give first)
        self.reply_t = start  # the time of the reply's last line: what follows it must not date it
        self.preserved: tuple[str, ...] = ()  # the lines the compaction under way keeps word for word
        self.local = LocalPaths(keep_paths)  # the working directories the lines so far name

    def add(self, msg: dict, t: int | None = None) -> None:
        self.messages.append(msg)
        self.times.append(self.t if t is None else t)

    def flush(self) -> None:
        if self.reply is not None and (self.reply["content"] or self.reply.get("tool_calls")):
            self.add(self.reply, self.reply_t)
        self.reply, self.reply_id = None, None

    def line(self, node: _Node) -> None:
        obj = node.obj
        self.t = node.time if node.time is not None else self.t
        self.local.name(obj.get("cwd"))
        if obj.get("type") == "assistant" and node.message and obj["message"].get("model") != "<synthetic>":
            self.assistant(node, obj["message"], anthropic.blocks(obj["message"].get("content"), f"line {node.line}"))
            return
        self.flush()
        self.firsts[node.uuid] = len(self.messages)
        if node.message:
            self.user(node)
        elif obj.get("type") == "system":
            self.system(obj)
        # attachments and lines of types not known yet give nothing

    def system(self, obj: dict) -> None:
        """A ``system`` line: the tool's note (kept aside), or a compaction's boundary."""
        subtype = obj.get("subtype")
        if subtype == "compact_boundary":
            self.preserved = _preserved(obj.get("compactMetadata"))
            return
        text = obj.get("content")
        if isinstance(text, str) and text.strip():
            self.add(_aside(f"claude-code system {subtype}" if isinstance(subtype, str) else "claude-code system",
                            self.local.out_of(without_escapes(text))))

    def user(self, node: _Node) -> None:
        """A user line (or an assistant line the tool wrote itself): a prompt, tool results, a summary, a note."""
        obj, at = node.obj, f"line {node.line}"
        blocks = anthropic.blocks(obj["message"].get("content"), at)
        texts = []
        for block in blocks:
            if block.get("type") == "tool_result":
                call = block.get("tool_use_id")
                if not isinstance(call, str):
                    raise _Bad(f"{at}: a tool_result block without a string \"tool_use_id\"")
                self.add({"role": "tool", "tool_call_id": call, "content": anthropic.result_text(block.get("content")),
                          "is_error": block.get("is_error") is True})
            elif is_system_entry(block):  # what the tool told the model beside the results
                self.add(_aside("claude-code system", self.local.out_of(anthropic.result_text(block.get("content")))))
            else:
                texts.append(anthropic.block_text(block))
        text = "\n".join(t for t in texts if t)
        if not text and any(b.get("type") == "tool_result" or is_system_entry(b) for b in blocks):
            return
        if obj.get("type") == "assistant":  # "<synthetic>": the tool's words in the model's place
            error = obj.get("isApiErrorMessage") is True
            self.add(_aside("claude-code error" if error else "claude-code synthetic reply", self.local.out_of(text)))
            if error:
                self.ending.add(len(self.messages) - 1)
        elif obj.get("isCompactSummary"):
            kept = [self.firsts[u] for u in self.preserved if u in self.firsts]
            first = min(kept, default=0)  # it covers what comes before the first line it keeps: sent after it
            self.add({"role": COMPACTION, "content": self.local.out_of(text),
                      **({"through": first - 1} if first else {})})
            self.preserved = ()
        elif obj.get("isMeta"):
            self.add(_aside("claude-code meta", self.local.out_of(without_escapes(text))))
        elif _TOOL_NOTE.match(text):  # a slash command's output is the tool's; the command and a shell's, the user's
            note = without_escapes(text)
            self.add(_aside("claude-code note", self.local.out_of(note) if _OWN_OUTPUT.match(note) else note))
            if "[Request interrupted" in text[:40]:
                self.ending.add(len(self.messages) - 1)
        else:
            self.add({"role": "user", "content": text})

    def assistant(self, node: _Node, message: dict, blocks: list[dict]) -> None:
        mid = message.get("id")
        if self.reply is None or mid is None or mid != self.reply_id:
            self.flush()
            self.reply, self.reply_id, self.reply_at = {"role": "assistant", "content": ""}, mid, len(self.messages)
            if isinstance(message.get("model"), str):
                self.reply["model"] = message["model"]
        self.firsts[node.uuid] = self.reply_at
        reply, self.reply_t = self.reply, self.t
        if isinstance(message.get("usage"), dict):  # each line of a reply repeats it: the last one holds
            reply["usage"] = anthropic.usage(message["usage"])
        for block in blocks:
            kind = block.get("type")
            if kind in ("thinking", "redacted_thinking"):
                text = block.get("thinking") if kind == "thinking" else "[redacted thinking]"
                self.add(_aside("assistant thinking", str(text or "")))
            elif kind == "tool_use":
                call_id, name = block.get("id"), block.get("name")
                if not isinstance(call_id, str) or not isinstance(name, str):
                    raise _Bad(f"line {node.line}: a tool_use block without a string \"id\" and \"name\"")
                arguments = json.dumps(block.get("input", {}), ensure_ascii=False)
                reply.setdefault("tool_calls", []).append({"id": call_id, "function": {"name": name,
                                                                                       "arguments": arguments}})
            else:
                text = anthropic.block_text(block)
                reply["content"] = "\n\n".join(t for t in (reply["content"], text) if t)


def _turns(gathered: _Messages, active: bool, notes: list[str], where: str) -> tuple[list[object], list[int]]:
    """A branch's messages with each turn's end marked (:data:`TURN_OVER`), less what a later import places otherwise.

    A turn ends at its own last line: its last reply or tool result, the user's stop, an API
    error. What follows it up to the next prompt is no part of it: the tool's notes it appends
    then (``turn_duration``, a slash command's echo, the "No response requested." it writes
    when a session is resumed, a meta line) and a compaction are the next turn's, in its
    commit. After the last turn they are left for the import that finds the prompt after
    them: written with that turn, they would change a turn already committed, which the next
    import could only fork. A last turn still under way on the active branch (a prompt
    without its answer yet, a call without its result) is left for the next import too; on
    another branch it is over (closed as interrupted). A branch without a prompt gives
    nothing.

    Returns:
        The messages and their times, for :func:`.turns_from_messages`.
    """
    messages, times = gathered.messages, gathered.times
    prompts = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if not prompts:  # no turn yet (a reply written before its prompt: the TUI writes them so, at once)
        return [], []
    own = [i for i, m in enumerate(messages) if m["role"] in ("user", "assistant", "tool") or i in gathered.ending]
    ends = [max(i for i in own if p <= i < q) for p, q in zip(prompts, [*prompts[1:], len(messages)], strict=True)]
    last = messages[ends[-1]]
    if ends[-1] in gathered.ending or (last["role"] == "assistant" and not last.get("tool_calls")):
        cut = ends[-1] + 1
        if active and any(m["role"] == COMPACTION for m in messages[cut:]):
            notes.append(f"{where}its compaction after the last turn is imported with the turn that follows it")
    elif active:
        cut = ends[-2] + 1 if len(ends) > 1 else prompts[-1]
        notes.append(f"{where}its last turn is still under way; the next import takes it")
    else:
        cut = len(messages)
    marked = {e for e in ends if e < cut}
    out: list[object] = []
    out_times, moved = [], []  # moved: where each message went
    for i, msg in enumerate(messages[:cut]):
        moved.append(len(out))
        out.append(msg)
        out_times.append(times[i])
        if i in marked:
            out.append(TURN_OVER)
            out_times.append(times[i])
    for msg in messages[:cut]:
        if "through" in msg:
            msg["through"] = moved[msg["through"]]
    return out, out_times


def _first_prompt(messages: list[dict]) -> str:
    return next((str(m["content"]).strip().split("\n", 1)[0] for m in messages if m["role"] == "user"
                 and str(m["content"]).strip()), "")


class _Reader:
    """One transcript file into its conversations: the session, then each sub-agent's."""

    def __init__(self, raw: Iterable[bytes], path: Path | None = None, keep_paths: bool = False):
        self.file = _Transcript(stream.lines(raw))
        self.keep_paths = keep_paths
        self.start = next((n.time for n in self.file.order if n.time is not None), None)
        self.path = path
        self.first: str | None = None  # the uuid of the session's first message line

    def branches(self, nodes: list[_Node], title: str, where: str,
                 notes: list[str]) -> tuple[list[tuple[str, list[list[Event]]]], str, int]:
        """Each leaf's branch split per turn (the newest first); the title; when it began (ms)."""
        out: list[tuple[str, list[list[Event]]]] = []
        title_out, created = title, 0
        for i, (leaf, path) in enumerate(self.file.branches(nodes)):
            begun = next((n.time for n in path if n.time is not None), self.start or 0)
            gathered = _Messages(begun, self.keep_paths)
            for node in path:
                gathered.line(node)
            gathered.flush()
            if i == 0:
                self.first = next((n.uuid for n in path if n.message), None)
                summaries = self.file.summaries
                summary = next((summaries[n.uuid] for n in reversed(path) if n.uuid in summaries), "")
                title_out = title or summary or _first_prompt(gathered.messages) or "Claude Code session"
                created = begun
            messages, times = _turns(gathered, i == 0, notes, where)
            chunks, more = turns_from_messages(messages, times, title=title_out, where=where)
            notes.extend(n for n in more if n not in notes)
            if len(chunks) > 1 and chunks not in [c for _, c in out]:  # a branch without prompts adds nothing
                out.append((leaf.uuid, chunks))
        return out, title_out, created

    def conversations(self) -> list[ImportedConversation]:
        main = [n for n in self.file.order if n.obj.get("isSidechain") is not True]
        side = [n for n in self.file.order if n.obj.get("isSidechain") is True]
        session = next((n.obj["sessionId"] for n in reversed(main or side) if isinstance(n.obj.get("sessionId"), str)),
                       None)
        if session is None:
            if any(n.message for n in self.file.order):
                raise _Bad("no line names its \"sessionId\": not a Claude Code transcript")
            return []
        out = []
        title = self.file.titles.get("custom-title") or self.file.titles.get("ai-title") or ""
        notes = list(self.file.notes)
        branches, title, created = self.branches(main, title, "", notes)
        if branches:
            origin = next((n.obj["sessionId"] for n in main if isinstance(n.obj.get("sessionId"), str)), session)
            spawned: tuple[str, int] | None = None
            kin: tuple[str, ...] = ()
            if origin != session:  # made with --fork-session: the origin's lines come first, theirs unchanged
                shared = [n.time for n in main if n.obj.get("sessionId") == origin and n.time is not None]
                spawned = (origin, shared[-1]) if shared else None
            elif self.path is not None and self.first is not None:  # 2.1's copies: told by their first line
                kin = family(self.path, self.first, session)
            out.append(ImportedConversation(TOOL, session, title, created, branches, notes, spawned=spawned,
                                            family=kin))
        agents: dict[str, list[_Node]] = {}
        for node in side:  # grouped by agent (newer versions name it), else by the root each line leads to
            agent = node.obj.get("agentId")
            key = f"agent-{agent}" if isinstance(agent, str) and agent else self.file.path(node)[0].uuid
            agents.setdefault(key, []).append(node)
        for key, nodes in agents.items():
            notes = []
            meta = self.agent_meta(key, notes)
            told, kind, call = (meta.get(k) if isinstance(meta.get(k), str) and meta[k].strip() else None
                                for k in ("description", "agentType", "toolUseId"))
            told = told and told.strip() + (f" ({kind.strip()})" if kind else "")
            branches, title, created = self.branches(nodes, told or "", f"sub-agent {key}, ", notes)
            if branches:
                out.append(ImportedConversation(TOOL, f"{session}/{key}", f"sub-agent: {title}", created, branches,
                                                notes, spawned=(session, created), spawned_call=call))
        return out

    def agent_meta(self, key: str, notes: list[str]) -> dict:
        """What Claude Code keeps beside a sub-agent's own file (``agent-<id>.meta.json``; ``{}``: none).

        ``description`` (what the parent asked it, in a few words), ``agentType``,
        ``toolUseId`` (the parent's ``Agent`` call that ran it).
        """
        if self.path is None or self.path.stem != key:  # sub-agents in the session's file have none
            return {}
        there = self.path.with_name(f"{key}.meta.json")
        try:
            meta = json.loads(there.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            notes.append(f"{there.name} cannot be read ({exc}): its title is its first prompt")
            return {}
        return meta if isinstance(meta, dict) else {}


def read_transcript(raw: Iterable[bytes], path: Path | None = None, *, origins: bool = True,
                    keep_paths: bool = False) -> list[ImportedConversation]:
    """Convert a Claude Code transcript into conversations: the session's, then each sub-agent's.

    A ``--fork-session`` copy comes after the session of each transcript of its family begun
    before it (its origin, read from its file): written first, it is what the copy forks,
    whichever file is imported first (:func:`.begun`).

    Args:
        raw: the file's bytes, line by line (a binary file: read a line at a time, never
            held whole).
        path: where it was read from, if from a file: the transcripts beside it that begin
            as it does are its ``family`` (``--fork-session`` copies and their origin).
        origins: read the family begun before it too (False: this file's alone).
        keep_paths: keep the local paths in what Claude Code wrote itself (a compaction's
            summary, its notes: ``--keep-paths``); else each is :data:`.local_paths.LOCAL_PATH`.

    Returns:
        The conversations, each branch split per turn (a file of titles and snapshots alone
        holds none).

    Raises:
        _Bad: something cannot be read (the message names the line).
    """
    convs = _Reader(raw, path, keep_paths).conversations()
    if path is None or not origins or not convs or not convs[0].family:
        return convs
    before = []
    for other in convs[0].family:  # begun before it
        there = path.with_name(f"{other}.jsonl")
        try:
            with there.open("rb") as f:
                theirs = read_transcript(f, there, origins=False, keep_paths=keep_paths)
        except (OSError, _Bad):
            continue  # its own import says what is wrong with it
        for conv in theirs[:1]:
            if conv.source_id == other:
                conv.notes.append(f"read with {convs[0].source_id}, its --fork-session copy, which forks it")
                before.append(conv)
    return before + convs
