"""The chat's opt-in tools, as the user meets them: which are on, the approval question, a cut call.

``--tools`` and ``--yes`` (or ``tools:`` and ``permissions:`` in the config) choose what
:class:`~gitsessions.chat.tools.toolset.Toolset` offers and what runs without asking; the
question asked before a write or a command is :func:`approver`'s, the same behind a pipe
(the next line is the answer) and on a terminal (a one-line prompt of its own). What is
shown of a call is redacted as the session's events are (the same redactor).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ...errors import ConfigError
from ..display.render import terminal_safe

if TYPE_CHECKING:
    from ...chat.tools.toolset import Answer, Prepared, Toolset
    from ...log.events import Event
    from ...secrets.redact import Redactor
    from ..common import Context

#: The question after a call's summary and preview; the answers it takes, and what they mean.
QUESTION = "allow? [y] once · [a] for this session · [n] no › "
ANSWERS = {"y": "once", "yes": "once", "once": "once", "a": "session", "always": "session",
           "session": "session", "n": "deny", "no": "deny", "deny": "deny", "": "deny"}
#: Longest preview (a diff, a command) shown before the question, lines; the rest is counted.
PREVIEW_LINES = 40

#: ``--tools`` and ``--yes`` of the one-turn commands (``gs ask``, ``gs retry``): no one is asked there.
OneTurnTools = Annotated[str | None, typer.Option("--tools", metavar="LIST", show_default=False, help=(
    "Tools the model may use: read, write, shell, time (or all; also config tools:). A write or a command "
    "runs only with --yes or config permissions: {allow: [...]}."))]
OneTurnYes = Annotated[bool, typer.Option("--yes", help="Run every write and command the model asks for.")]


def toolset_for(c: Context, tools: str | None, yes: bool) -> Toolset | None:
    """The tools of this chat: ``--tools`` (else ``tools:`` in the config), ``--yes``, ``permissions:``.

    Args:
        c: the invocation (its config, its repo: backups go to ``<repo>/gs/backups``).
        tools: ``--tools``' value (comma-separated groups or tools; None: the config's).
        yes: ``--yes``: every write and command runs without asking.

    A command gets gs's environment without the variables redaction treats as secret.

    Returns:
        The toolset, or None when no tool is on (a request offers none).

    Raises:
        typer.BadParameter: ``--tools`` names an unknown tool (exit 2).
        ConfigError: ``tools:`` or ``permissions.allow`` does (exit 1).
    """
    names = tuple(tools.split(",")) if tools is not None else c.config.tools
    if not any(name.strip() for name in names):
        return None  # a plain chat imports none of the tools' modules
    from ...chat.tools.files import Workspace
    from ...chat.tools.toolset import Toolset, expand

    try:
        enabled = expand(names, "--tools" if tools is not None else "tools")
    except ValueError as exc:
        if tools is not None:
            raise typer.BadParameter(str(exc).removeprefix("--tools: ")) from None
        raise ConfigError(str(c.config.path), str(exc)) from None
    if not enabled:
        return None
    try:
        allow = expand(c.config.allow_tools, "permissions.allow")
    except ValueError as exc:
        raise ConfigError(str(c.config.path), str(exc)) from None
    from ...secrets.secret_names import is_secret_name

    workspace = Workspace(Path.cwd(), c.config.tool_paths, backups=c.repo_path() / "gs" / "backups")
    env = {name: value for name, value in os.environ.items() if not is_secret_name(name)}  # no API key
    return Toolset(enabled, workspace, allow=allow, yes=yes, env=env)


def tools_line(toolset: Toolset) -> str:
    """The line a chat with tools starts with: which are on and what asks first."""
    from ...chat.tools.toolset import ASKING, GROUPS

    if toolset.yes:
        rule = "--yes: every call runs without asking"
    elif ASKING.intersection(toolset.enabled):
        rule = "writes and commands ask first"
    elif set(GROUPS["read"]).intersection(toolset.enabled):
        rule = "reads run inside the working directory"
    else:
        rule = "it runs without asking"  # the clock alone
    return f"(tools: {', '.join(toolset.enabled)} · {rule} · in {toolset.workspace.root})\n"


def approver(write: Callable[[str], None], read_answer: Callable[[str], str | None],
             redactor: Redactor) -> Callable[[Prepared], Answer]:
    """The question asked before a call that needs approval: its summary and preview, then :data:`QUESTION`.

    Args:
        write: writes text to the user.
        read_answer: reads one answer line (None: end of input, which denies).
        redactor: what the session redacts; the preview is shown redacted.

    Returns:
        ``permit(call) -> answer`` for :func:`gitsessions.chat.loop.run_turn`. An answer it
        does not know is asked again, twice, then denied. Ctrl+C propagates (it cancels the reply).
    """
    def redact(text: str) -> str:
        return redactor.text(text)

    def permit(call: Prepared) -> Answer:
        lines = redact(call.preview).splitlines()
        shown = lines[:PREVIEW_LINES]
        more = f"  … {len(lines) - PREVIEW_LINES} more lines\n" if len(lines) > PREVIEW_LINES else ""
        body = "".join(f"  {terminal_safe(line)}\n" for line in shown) + more
        write(f"⚙ {terminal_safe(redact(call.summary))}\n{body}")
        for _ in range(3):
            answer = read_answer(QUESTION)
            if answer is None:
                return "deny"
            meaning = ANSWERS.get(answer.strip().lower())
            if meaning is not None:
                return meaning
            write("(answer y to allow it once, a to allow it for this session, n to refuse)\n")
        return "deny"

    return permit


def terminal_answers(keys: Any) -> Callable[[str], str | None]:
    """One-line answers on a terminal: a prompt of its own (no history, no completion).

    Args:
        keys: the chat's :class:`.terminal.ReplyKeys`, told when the prompt starts and ends
            (a Ctrl+C there cancels the reply, as at any point of a turn).
    """
    import sys

    from prompt_toolkit import PromptSession

    sessions: list[PromptSession[str]] = []

    def read(question: str) -> str | None:
        if not sessions:
            sessions.append(PromptSession())
        keys.prompt_starts()
        try:
            line = sessions[0].prompt(question)
        except EOFError:
            return None
        keys.prompt_ended(sessions[0].input, sys.stdin.fileno())
        return line

    return read


def cut_calls(events: Sequence[Event]) -> list[str]:
    """Lines saying which tool calls of the session's last turn were cut while they ran (outcome unknown).

    A kill during a tool is closed as ``outcome_unknown`` (:mod:`gitsessions.log.transcript`);
    the user is told what each such call was doing, from the call's own arguments.
    """
    from ...log.transcript import OUTCOME_UNKNOWN
    from ...log.turns import last_turn_start
    from ...log.view import Message, ShownResult, items

    start = last_turn_start(events)
    if start is None or not any(e.type == "tool/result" and e.data.get("error_code") == OUTCOME_UNKNOWN
                                for e in events[start:]):
        return []
    last = items(events[start:])  # its calls and results; the turn numbers are not read
    calls = {call.id: call for it in last if isinstance(it, Message) for call in it.tool_calls}
    out = []
    for it in last:
        if isinstance(it, ShownResult) and it.error_code == OUTCOME_UNKNOWN:
            call = calls.get(it.call_id)
            args = call.arguments if call is not None and call.arguments else ""
            out.append(terminal_safe(f"(the tool call {it.name}({args}) was cut while it ran: whether it "
                                     "took effect is unknown; check before asking for it again)"))
    return out
