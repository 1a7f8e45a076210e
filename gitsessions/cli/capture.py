"""``gs capture``: Claude Code and Codex hand each finished turn to gs, which imports it.

``install`` puts gs into the tool's settings (Claude Code's hooks, Codex's ``notify``),
``remove`` takes it out again, ``status`` says what is installed and what the last captures
did. ``run`` is what the tool runs: the ``gs import`` of the conversation its notice names,
into the repo named at install time, saying nothing (a line in a log instead) and always
exiting 0, so that it never breaks the tool that ran it. The settings files are edited by
:mod:`gitsessions.transfer.capture`.
"""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import GitSessionsError, SettingsError, TransferError
from ..places import default_state_dir
from ..text import dumps, plural
from ..transfer import capture
from ..transfer.readers import claude_code, codex
from .common import Context
from .help import Group
from .transfer import ImportTally, import_files

app = typer.Typer()
capture_app = typer.Typer(cls=Group, no_args_is_help=True, help="""Import every turn of Claude Code and Codex as it
    ends: their hooks run gs, which adds the turn to the session repo.

    Examples:
        gs capture install claude-code
        gs capture install codex
        gs capture status
    """)
app.add_typer(capture_app, name="capture")

#: How long a capture waits for another import to finish, seconds: a hook must not hold up
#: its tool; the next turn's capture imports what this one gave up on.
CAPTURE_WAIT_S = 5.0


class Tool(str, Enum):
    """The tools ``gs capture`` knows."""

    claude_code = claude_code.TOOL
    codex = codex.TOOL


ToolArg = Annotated[Tool, typer.Argument(metavar="TOOL", help="claude-code or codex.", show_default=False)]
ProjectOption = Annotated[bool, typer.Option(
    "--project", help="Claude Code: this project's .claude/settings.json, not your user settings (it then holds "
    "this machine's paths of gs and of the repo).")]


def _this_gs() -> list[str]:
    """How to start this very gs from anywhere: its script's absolute path, else this Python with -m gitsessions."""
    script = sys.argv[0] if sys.argv else ""
    if Path(script).name in ("gs", "gitsessions") and os.path.isfile(script):
        return [os.path.abspath(script)]
    return [sys.executable, "-m", "gitsessions"]


def _command(c: Context, tool: Tool) -> list[str]:
    """The command line a tool runs: this gs, the repo it uses now (absolute), ``capture run TOOL``."""
    repo = os.path.abspath(c.store_path())
    return [*_this_gs(), "--repo", repo, *capture.run_words(tool.value)]


def _claude_settings(project: bool) -> Path:
    if project:
        return Path.cwd() / ".claude" / "settings.json"
    return claude_code.config_dir(os.environ, Path.home()) / "settings.json"


def _codex_config() -> Path:
    return codex.codex_home(os.environ, Path.home()) / "config.toml"


def _log(tool: Tool) -> capture.CaptureLog:
    return capture.CaptureLog(default_state_dir() / "capture", tool.value)


def _made() -> capture.Made:
    """The notes of what gs's installs made in Claude Code's settings (beside the capture logs)."""
    return capture.Made(default_state_dir() / "capture" / "made.json")


def _no_project(tool: Tool, project: bool) -> None:
    if project and tool is not Tool.claude_code:
        raise typer.BadParameter("--project is for claude-code (Codex has no project settings)", param_hint="--project")


@capture_app.command()
def install(ctx: typer.Context, tool: ToolArg, project: ProjectOption = False) -> None:
    """Make Claude Code or Codex run gs after each turn, importing it into the session repo.

    claude-code: a Stop hook (after each reply) and a SessionEnd hook (at exit) in Claude
    Code's user settings (CLAUDE_CONFIG_DIR, else ~/.claude/settings.json; --project: this
    project's .claude/settings.json). codex: the notify program of $CODEX_HOME/config.toml
    (~/.codex); a notify program already set is kept, and gs runs it after each import.
    Every other setting stays as it is (settings.json is written back indented by two);
    installing again changes nothing. The hooks run this
    gs with the repo it uses now (--repo), from wherever the tool runs; what each capture did
    goes to a log (gs capture status).

    Examples:
        gs capture install claude-code
        gs capture install claude-code --project
        gs capture install codex
    """
    c: Context = ctx.obj
    _no_project(tool, project)
    words = _command(c, tool)
    repo = capture.recorded_repo(words)
    if tool is Tool.claude_code:
        change = capture.install_claude(_claude_settings(project), shlex.join(words), _made())
        what = "gs's Stop and SessionEnd hooks"
    else:
        change = capture.install_codex(_codex_config(), words)
        what = "gs as Codex's notify program"
    if not change.changed:
        print(f"{what} already in {change.path}: nothing changed")
    else:
        print(f"installed {what} in {change.path}")
        for old in change.before:
            print(f"  (in place of another gs's: {old})")
    if change.chained:
        print(f"  your notify program runs after each import, as before: {shlex.join(change.chained)}; "
              f"gs capture remove codex puts it back")
    print(f"  each turn is imported into {repo}; what each capture did: gs capture status")


@capture_app.command()
def remove(ctx: typer.Context, tool: ToolArg, project: ProjectOption = False) -> None:
    """Take gs's hooks out of Claude Code's settings, or its notify out of Codex's config.

    Only gs's own entries go (whichever gs wrote them), and what the install made for them:
    an empty hooks object or list that was there stays, a settings file the install made
    goes when it holds nothing else. Codex's config gets back the notify it had, as it was
    written (none if none). Claude Code's settings.json is written back indented by two.
    The sessions captured stay in the repo.

    Examples:
        gs capture remove claude-code
        gs capture remove codex
    """
    _no_project(tool, project)
    if tool is Tool.claude_code:
        change = capture.remove_claude(_claude_settings(project), _made())
    else:
        change = capture.remove_codex(_codex_config())
    if not change.changed:
        print(f"no capture of gs's in {change.path}: nothing to remove")
        return
    print(f"removed gs's capture from {change.path} (it ran: {'; '.join(change.before)})")
    if change.deleted:
        print(f"  {change.path} held nothing else: gs had made it, and it is gone")
    if change.chained:
        print(f"  notify is again: {shlex.join(change.chained)}")


def _installed(tool: Tool) -> tuple[list[dict[str, Any]], list[str]]:
    """Where gs's capture of ``tool`` is installed (one dict per place) and the files it could not read."""
    places, unread = [], []
    paths = [_claude_settings(False), _claude_settings(True)] if tool is Tool.claude_code else [_codex_config()]
    for path in dict.fromkeys(paths):
        try:
            if tool is Tool.claude_code:
                hooks = capture.claude_hooks(path)
                command = next((cmds[0] for cmds in hooks.values()), None)
                found = {"path": str(path), "events": list(hooks), "command": command}
            else:
                notify = capture.codex_notify(path)
                command = shlex.join(notify[0]) if notify else None
                found = {"path": str(path), "command": command,
                         "chained": shlex.join(notify[1]) if notify and notify[1] else None}
        except SettingsError as exc:
            unread.append(f"{path} cannot be read: {exc.reason}")
            continue
        if command is not None:
            found["repo"] = capture.recorded_repo(command)
            places.append(found)
    return places, unread


def _run_dict(run: capture.Run | None) -> dict[str, Any] | None:
    return None if run is None else {"time": run.time, "event": run.event, "failed": run.failed, "said": run.said}


def _tool_status(tool: Tool) -> dict[str, Any]:
    places, unread = _installed(tool)
    log = _log(tool)
    runs = log.runs()
    captured = next((r for r in reversed(runs) if not r.failed and r.said.startswith("captured")), None)
    return {"tool": tool.value, "installed": bool(places), "places": places, "unreadable": unread,
            "last_run": _run_dict(runs[-1] if runs else None), "last_capture": _run_dict(captured),
            "log": str(log.path)}


def _status_lines(row: dict[str, Any], repo: str) -> list[str]:
    lines = []
    if not row["places"]:
        lines.append(f"{row['tool']}: not installed (gs capture install {row['tool']})")
    for place in row["places"]:
        events = f" ({', '.join(place['events'])})" if place.get("events") else ""
        elsewhere = f" (not the repo gs uses here, {repo})" if place["repo"] and place["repo"] != repo else ""
        lines.append(f"{row['tool']}: installed in {place['path']}{events}, importing into {place['repo']}{elsewhere}")
        if place.get("chained"):
            lines.append(f"  then runs your notify program: {place['chained']}")
    lines += [f"  warning: {why}" for why in row["unreadable"]]
    last, captured = row["last_run"], row["last_capture"]
    if last is None:
        lines.append("  no capture ran yet")
    else:
        failed = "FAILED: " if last["failed"] else ""
        lines.append(f"  last run {last['time']} ({last['event']}): {failed}{last['said']}")
        if captured is not None and captured != last:
            lines.append(f"  last capture {captured['time']} ({captured['event']}): {captured['said']}")
        lines.append(f"  log: {row['log']}")
    return lines


@capture_app.command()
def status(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array, stable keys.")] = False,
) -> None:
    """Show whether each tool's capture is installed (where, into which repo) and what its last runs did.

    Claude Code's capture is looked for in your user settings and in this folder's
    .claude/settings.json. A run that failed (another import held the repo, a file that
    could not be read) says why; the whole log is the file shown.

    Examples:
        gs capture status
        gs capture status --json
    """
    c: Context = ctx.obj
    rows = [_tool_status(tool) for tool in Tool]
    if as_json:
        print(dumps(rows))
        return
    repo = os.path.abspath(c.repo_path())
    for row in rows:
        for line in _status_lines(row, repo):
            print(line)


def _hook_input() -> bytes:
    """What Claude Code wrote on the hook's stdin (never waiting on a terminal)."""
    stdin = sys.stdin
    if stdin is None or stdin.isatty():
        raise TransferError("Claude Code's hook notice", "stdin is a terminal",
                            "gs capture run is run by Claude Code's hooks, with their notice on stdin")
    return stdin.buffer.read(capture.MAX_NOTICE)


def _outcome(tally: ImportTally, files: list[Path]) -> tuple[str, bool]:
    """What a capture's log line says of its import, and whether it failed.

    The log is outside the session repo and its redaction: it names what the tool calls its
    conversations (a Claude Code session's uuid, a Codex thread's id, a file's name) and
    counts, never a session of gs's, whose id is made of its first prompt's words.
    """
    done = ""
    if tally.written:
        done = (f"captured {plural(len(tally.written), 'session')} ({plural(tally.turns, 'turn')}) from "
                + ", ".join(dict.fromkeys(tally.sources)))
    if not tally.failed:
        return done or f"nothing new in {', '.join(p.name for p in files)}", False
    return "; ".join(filter(None, [done, " | ".join(tally.failures) or "the import failed"])), True


def _by_source(text: str, sources: dict[str, str]) -> str:
    """``text`` with each session of ``sources`` (id -> what it came from) named by its source instead."""
    for sid in sorted(sources, key=len, reverse=True):
        text = text.replace(sid, sources[sid])
    return text


def _capture(c: Context, tool: Tool, notice_arg: str | None, wait: float) -> tuple[str, str, bool, dict[str, str]]:
    """Import what the tool's notice names: ``(event, what the log says, failed, the sessions written)``.

    The sessions written are by id, each with what it came from (:attr:`ImportTally.sources`).

    Raises:
        GitSessionsError: the notice names nothing that can be imported.
    """
    if tool is Tool.claude_code:
        notice = capture.claude_notice(_hook_input())
    else:
        notice = capture.codex_notice(notice_arg or "", codex.sessions_dir(os.environ, Path.home()))
    if not notice.files:
        return notice.event, f"no turn in a notice of type {notice.event}: nothing to capture", False, {}
    said = io.StringIO()
    try:
        with redirect_stderr(said):
            tally = import_files(c, [str(p) for p in notice.files], tool.value, found=True, wait=wait)
    except typer.Exit:  # another import held the repo past the wait: its one line on stderr says who
        lock = [line.removeprefix("gs: ").strip() for line in said.getvalue().splitlines() if line.startswith("gs: ")]
        tally = ImportTally(failed=1, failures=lock)
    text, failed = _outcome(tally, notice.files)
    return notice.event, text, failed, dict(zip(tally.written, tally.sources, strict=True))


def _chain(previous: list[str], notice_arg: str) -> str | None:
    """Run the notify program gs took the place of, with Codex's notice; what went wrong, else None."""
    try:
        status = subprocess.run([*previous, notice_arg], stdin=subprocess.DEVNULL, check=False).returncode
    except OSError as exc:
        return f"your notify program {shlex.join(previous)} could not be run: {exc.strerror or exc}"
    return None if status == 0 else f"your notify program {shlex.join(previous)} exited with status {status}"


@capture_app.command()
def run(
    ctx: typer.Context,
    tool: ToolArg,
    words: Annotated[list[str] | None, typer.Argument(
        metavar="NOTICE", help="codex: its notice (the last word), after the notify program gs chains, if "
        "any. claude-code: none (the notice comes on stdin).", show_default=False)] = None,
    wait: Annotated[float, typer.Option(
        "--wait", metavar="SECONDS", min=0, help=f"How long to wait for another import to finish before giving "
        f"up (default {CAPTURE_WAIT_S:g}).", show_default=False)] = CAPTURE_WAIT_S,
) -> None:
    """Import the turn a tool's notice names (what the hooks of gs capture install run).

    Quiet and always exit status 0, so that the tool that ran it goes on whatever happens:
    what it did, or why it failed, is a line in the log (gs capture status shows it).
    claude-code reads its hook's JSON on stdin and imports the transcript (with its
    sub-agents); codex takes its notice as the last argument, imports the thread's rollout,
    then runs the notify program it chains with the same notice.

    Examples:
        gs capture run claude-code < hook.json
        gs capture run codex '{"type": "agent-turn-complete", "thread-id": "..."}'
    """
    c: Context = ctx.obj
    words = list(words or [])
    notice_arg = words[-1] if words else None
    event, failed = "-", True
    sources: dict[str, str] = {}
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):  # a hook's output reaches no one
            event, said, failed, sources = _capture(c, tool, notice_arg, wait)
    except GitSessionsError as exc:
        said = str(exc)
    except (Exception, KeyboardInterrupt, SystemExit) as exc:  # never a traceback or a status for the tool
        said = f"unexpected error: {exc.__class__.__name__}: {exc}"
    for warning in c.take_warnings():  # a failed post-commit hook, say: else printed when the command ends
        said += f"; warning: {_by_source(warning, sources)}"  # (it names the session saved)
    if tool is Tool.codex and len(words) > 1 and notice_arg is not None:
        why = _chain(words[:-1], notice_arg)
        if why is not None:
            said, failed = f"{said}; {why}", True
    try:
        _log(tool).append(event, said, failed=failed)
    except OSError:
        pass  # nowhere left to say it: the tool must not see it either
