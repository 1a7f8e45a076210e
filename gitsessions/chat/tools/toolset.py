"""The tools a chat offers, and which of their calls may run without asking.

Opt-in: ``--tools read,write,shell`` or ``tools: [...]`` in the config names
groups of :data:`GROUPS`; with none, a request offers no tools at all. A call is first
*prepared* (its arguments checked, a write's diff worked out, nothing done), then *decided*
(:meth:`Toolset.decide`: reads run; every write and every command is asked of the user
through the loop's callback, unless ``--yes``, the config's ``permissions: {allow: [...]}``
or an earlier "for this session" answer approves it), then *run*. No tool raises: a failure
is a result the model reads.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...log.calls import ToolCall, ToolResult
from . import files, shell
from .clock import TOOL_SCHEMAS as CLOCK_SCHEMAS
from .clock import get_current_time
from .files import ToolFailed, ToolInterrupted, Workspace

#: The groups ``--tools`` names, and their tools.
GROUPS: dict[str, tuple[str, ...]] = {
    "read": ("read_file", "list_files", "search_files"),
    "write": ("write_file", "edit_file"),
    "shell": ("run_command",),
    "time": ("get_current_time",),
}
#: The tools whose every call is asked of the user (unless approved beforehand).
ASKING = frozenset({"write_file", "edit_file", "run_command"})
#: ``tool/result.error_code`` of a call the user (or no one, behind a pipe) did not allow.
DENIED = "denied"
#: ``tool/result.error_code`` of a call Ctrl+C stopped while it ran (its content says what it did by then).
STOPPED = "stopped"

#: An answer to an approval request: ``once``, ``session`` (this tool, for the rest of the
#: session) or ``deny``.
Answer = str
ANSWERS = ("once", "session", "deny")


def _fn(name: str, description: str, properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": list(required)}}}


_PATH = {"type": "string", "description": "A path relative to the working directory."}
#: Schemas of the opt-in tools, in the chat-completions ``tools`` shape.
SCHEMAS: dict[str, dict[str, Any]] = {
    "read_file": _fn("read_file", f"Read a text file: lines from offset, at most limit of them, and at most "
                     f"{files.READ_CHARS:,} characters; a note at the end says which offset reads on.", {
                         "path": _PATH,
                         "offset": {"type": "integer", "description": "The first line read, from 1 (default 1)."},
                         "limit": {"type": "integer", "description": "Most lines read (default: as many as fit)."}},
                     ["path"]),
    "list_files": _fn("list_files", f"List a folder's files (folders end with /), skipping what .gitignore ignores; "
                      f"at most {files.LIST_ENTRIES:,} entries, recursive at most {files.WALK_DEPTH} levels deep.", {
                          "path": _PATH, "recursive": {"type": "boolean"}}, []),
    "search_files": _fn("search_files", "Search text files for a regular expression (Python syntax), skipping "
                        "what .gitignore ignores. Returns file:line: text, at most "
                        f"{files.SEARCH_MATCHES} matches; a note at the end says what was not searched.", {
                            "pattern": {"type": "string"}, "path": _PATH, "ignore_case": {"type": "boolean"}},
                        ["pattern"]),
    "write_file": _fn("write_file", "Write a whole text file (created, or replaced; the user approves a diff).", {
        "path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
    "edit_file": _fn("edit_file", "Replace an exact string in a text file: old_string must occur once, unless "
                     "replace_all (the user approves a diff).", {
                         "path": _PATH, "old_string": {"type": "string"}, "new_string": {"type": "string"},
                         "replace_all": {"type": "boolean"}}, ["path", "old_string", "new_string"]),
    "run_command": _fn("run_command", "Run a shell command in the working directory (the user approves it); "
                       f"returns its exit status and output (its first and last {shell.OUTPUT_CHARS // 2:,} "
                       "characters). On a timeout every process it started is killed.", {
                           "command": {"type": "string"},
                           "timeout": {"type": "number", "description": "Seconds (default 30, at most 600)."}},
                       ["command"]),
    "get_current_time": CLOCK_SCHEMAS[0],
}


def expand(names: Iterable[str], what: str = "--tools") -> tuple[str, ...]:
    """The tool names that groups (or tool names) stand for, in :data:`GROUPS` order.

    Args:
        names: group or tool names (``read``, ``write_file``, ...; ``all`` is every group).
        what: where they were given, for the error message.

    Raises:
        ValueError: an unknown name (the message lists the known ones).
    """
    wanted: set[str] = set()
    for name in names:
        name = name.strip()
        if name == "all":
            wanted.update(SCHEMAS)
        elif name in GROUPS:
            wanted.update(GROUPS[name])
        elif name in SCHEMAS:
            wanted.add(name)
        elif name:
            raise ValueError(f"{what}: no tool or group {name!r}; the groups are {', '.join(GROUPS)} "
                             f"(or all), the tools {', '.join(SCHEMAS)}")
    return tuple(t for t in SCHEMAS if t in wanted)


@dataclass(frozen=True)
class Prepared:
    """A tool call checked and worked out, not yet run.

    Attributes:
        call: the call as the model asked for it.
        arguments: its arguments, read (a JSON object).
        error: why it cannot run at all (bad arguments, a path outside, ...); None: it can.
        asks: its running is asked of the user (a write or a command).
        summary: one line saying what it does (``edit_file notes.md``, ``run_command: make test``).
        preview: what the user approves: a write's diff, a command's text ("" for the others).
        run: does it and returns what the model is told (None when ``error``); see :meth:`Toolset.run`.
    """

    call: ToolCall
    arguments: dict[str, Any]
    error: str | None = None
    asks: bool = False
    summary: str = ""
    preview: str = ""
    run: Callable[[], str] | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Decision:
    """Whether a call that asks may run, and who said so (stored as a ``tool/permission`` event).

    Attributes:
        answer: ``once``, ``session`` or ``deny``.
        by: ``user`` (asked now), ``session`` (an earlier "for this session"), ``config``
            (``permissions.allow``), ``--yes``, or ``nobody`` (no one to ask: behind a pipe).
    """

    answer: Answer
    by: str

    @property
    def allowed(self) -> bool:
        """True unless denied."""
        return self.answer != "deny"

    def refusal(self, name: str) -> str:
        """What the model is told of a denied call."""
        if self.by == "nobody":
            return (f"error: {name} was not run: it needs the user's approval and there was no one to ask "
                    "(the user can pass --yes or set permissions.allow in the config)")
        return f"error: the user denied this {name} call; do not try it again unless the user asks"


class Toolset:
    """The tools one chat offers and the approvals given so far.

    Args:
        enabled: the tools offered (names from :func:`expand`; none: a request offers no tools).
        workspace: where the file tools reach (default: the current working directory).
        allow: tools approved beforehand (config ``permissions.allow``, expanded).
        yes: ``--yes``: every call is approved beforehand.
        env: the environment a command gets (the face passes gs's own without its secret-named
            variables, :func:`gitsessions.secrets.secret_names.is_secret_name`; default: none).

    Attributes:
        running: what each call runs inside (the face's: on a terminal, Ctrl+C stops a
            command that runs, as it cancels a reply; default: nothing).
    """

    def __init__(self, enabled: Sequence[str] = (), workspace: Workspace | None = None,
                 allow: Iterable[str] = (), yes: bool = False, env: Mapping[str, str] | None = None):
        self.running: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext
        self.enabled = tuple(enabled)
        self.workspace = workspace or Workspace(Path.cwd())
        self.allow = frozenset(allow)
        self.yes = yes
        self.env = dict(env or {})
        self._session_approved: set[str] = set()

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The ``tools`` of a request: the tools enabled, in :data:`GROUPS` order."""
        return [SCHEMAS[name] for name in self.enabled]

    def forget(self) -> None:
        """Drop the "for this session" approvals (another session was opened)."""
        self._session_approved.clear()

    def prepare(self, call: ToolCall) -> Prepared:
        """Check a call and work out what it would do; nothing is run or written. Never raises.

        Args:
            call: the call the model asked for.

        Returns:
            The prepared call; its :attr:`~Prepared.error` says why it cannot run (bad
            arguments, a tool not enabled, a path outside the workspace), else None.
        """
        name, arguments = call.name, call.arguments
        try:
            args = json.loads(arguments) if arguments and arguments.strip() else {}
            if not isinstance(args, dict):
                raise ValueError("arguments must be a JSON object")
        except ValueError as exc:
            return Prepared(call, {}, error=f"error: bad arguments for {name}: {exc}")
        if name not in self.enabled:
            return Prepared(call, args, error=f"error: unknown tool {name!r}")
        try:
            return self._prepared(call, args)
        except ToolFailed as exc:
            return Prepared(call, args, error=f"error: {exc}")
        except (TypeError, ValueError, KeyError) as exc:
            return Prepared(call, args, error=f"error: bad arguments for {name}: {exc}")

    def _prepared(self, call: ToolCall, args: dict[str, Any]) -> Prepared:
        ws, name = self.workspace, call.name
        if name == "get_current_time":
            return Prepared(call, args, run=lambda: get_current_time(args.get("timezone")))
        known = set(SCHEMAS[name]["function"]["parameters"]["properties"])
        unknown = sorted(set(args) - known)
        if unknown:
            raise ValueError(f"no argument {unknown[0]!r} (it takes {', '.join(sorted(known))})")
        if name == "read_file":
            return Prepared(call, args, summary=f"read_file {args['path']}",
                            run=lambda: files.read_file(ws, args["path"], args.get("offset", 1), args.get("limit")))
        if name == "list_files":
            path = args.get("path", ".")
            return Prepared(call, args, summary=f"list_files {path}",
                            run=lambda: files.list_files(ws, path, bool(args.get("recursive"))))
        if name == "search_files":
            path = args.get("path", ".")
            return Prepared(call, args, summary=f"search_files {args['pattern']!r} in {path}",
                            run=lambda: files.search_files(ws, args["pattern"], path, bool(args.get("ignore_case"))))
        if name in ("write_file", "edit_file"):
            change = (files.write_change(ws, args["path"], args["content"]) if name == "write_file" else
                      files.edit_change(ws, args["path"], str(args["old_string"]), str(args["new_string"]),
                                        bool(args.get("replace_all"))))
            return Prepared(call, args, asks=True, summary=f"{name} {change.shown}", preview=change.diff(),
                            run=lambda: files.apply(ws, change))
        command = args["command"]
        if not isinstance(command, str):
            raise ValueError("command must be a string")
        return Prepared(call, args, asks=True, summary="run_command", preview=command,
                        run=lambda: shell.run_command(ws.root, command, args.get("timeout"), self.env))

    def decide(self, prepared: Prepared, ask: Callable[[Prepared], Answer] | None) -> Decision:
        """Whether a call that :attr:`~Prepared.asks` may run; asks through ``ask`` when nothing approved it.

        Args:
            prepared: the prepared call.
            ask: asks the user and returns an answer of :data:`ANSWERS` (None: there is no
                one to ask, and the call is denied).
        """
        name = prepared.call.name
        if self.yes:
            return Decision("once", "--yes")
        if name in self.allow:
            return Decision("once", "config")
        if name in self._session_approved:
            return Decision("once", "session")
        if ask is None:
            return Decision("deny", "nobody")
        answer = ask(prepared)
        answer = answer if answer in ANSWERS else "deny"
        if answer == "session":
            self._session_approved.add(name)
        return Decision(answer, "user")

    def run(self, prepared: Prepared) -> ToolResult:
        """Run a prepared call (inside :attr:`running`).

        Args:
            prepared: the call, as :meth:`prepare` made it.

        Returns:
            What the model is told: the tool's output, or its error (``is_error``) when it
            could not run or failed.

        Raises:
            ToolInterrupted: Ctrl+C stopped the call while it ran (a command, with what it had
                started); its :attr:`~.files.ToolInterrupted.result` is what the model is told.
            KeyboardInterrupt: Ctrl+C otherwise; nothing else.
        """
        call = prepared.call
        if prepared.error is not None or prepared.run is None:
            return ToolResult(call.id, call.name, prepared.error or f"error: {call.name} cannot run", True)
        try:
            with self.running():
                return ToolResult(call.id, call.name, prepared.run())
        except ToolInterrupted as exc:
            exc.result = ToolResult(call.id, call.name, f"error: {exc}", True, STOPPED)
            raise
        except ToolFailed as exc:
            return ToolResult(call.id, call.name, f"error: {exc}", True)
        except (TypeError, ValueError) as exc:
            return ToolResult(call.id, call.name, f"error: {exc}", True)
