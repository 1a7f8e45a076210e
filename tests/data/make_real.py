"""Make the real Claude Code and Codex fixtures again, by running the CLIs against tests/fakeagents.py.

    python tests/data/make_real.py claude [--bin DIR] [--keep]
    python tests/data/make_real.py codex [--bin DIR] [--keep]

Each run starts in a throwaway HOME (the CLIs' config and the working directory inside it),
drives the CLI (``-p`` / ``exec`` for plain turns, tmux for what only the TUI does: Esc Esc,
``/exit``, ``/fork``), then copies the files it wrote into ``tests/data/claude_code/real2/`` or
``tests/data/codex/real/`` (replacing what is there), scrubbed: the throwaway paths become
``/home/user`` and ``/home/user/proj``, and a ``README.md`` says file by file what was run and
what the file holds. ``--keep`` leaves the throwaway HOME (and the recorded requests) behind.

It needs ``claude`` and ``codex`` from npm (``@anthropic-ai/claude-code``,
``@openai/codex``) in ``--bin`` and ``tmux`` on the PATH; the tests never run it. Every run
makes new session ids (and file names): tests/test_import_real.py names them, update it too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from fakeagents import AnthropicServer, ResponsesServer, text, tool_call  # noqa: E402

NEUTRAL_HOME = "/home/user"
NEUTRAL_PROJ = "/home/user/proj"
KEY = "test-key"  # no secret: detect-secrets lets it be


def escaped(path: str) -> str:
    """A folder name as Claude Code makes it of a path: every character not a letter or digit a ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


class Sandbox:
    """A throwaway HOME with the working directory ``proj`` inside it, and the paths to scrub."""

    def __init__(self, bin_dir: Path) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="realfix"))
        self.proj = self.home / "proj"
        self.proj.mkdir()
        self.bin = bin_dir
        #: What was run, scenario by scenario (for the README), the paths scrubbed.
        self.runbook: dict[str, list[str]] = {}
        self.scenario = ""

    def note(self, what: str) -> None:
        """Write down a step of the current scenario."""
        self.runbook.setdefault(self.scenario, []).append(self.scrub(what))

    def scrub(self, value: str) -> str:
        """``value`` with the throwaway paths (and the CLIs' install folder) made neutral."""
        for local, neutral in ((str(self.proj), NEUTRAL_PROJ), (escaped(str(self.proj)), escaped(NEUTRAL_PROJ)),
                               (str(self.home), NEUTRAL_HOME), (str(self.bin.parent.parent), "/usr/lib")):
            value = value.replace(local, neutral)
        host = os.uname().nodename
        return re.sub(rf"\b{re.escape(host)}\b", "host", value) if len(host) > 3 else value


class Tmux:
    """A CLI's TUI in a detached tmux session: keys sent, the screen read."""

    def __init__(self, name: str, command: list[str], cwd: Path, env: dict[str, str],
                 note: Callable[[str], None] = lambda what: None) -> None:
        self.name = name
        self.note = note
        script = cwd.parent / f"{name}.sh"
        exports = " ".join(f"{k}={_quote(v)}" for k, v in env.items())
        line = " ".join(map(_quote, command))
        script.write_text(f"#!/bin/sh\nexport {exports}\ncd {_quote(str(cwd))}\nexec {line}\n")
        script.chmod(0o755)
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "200", "-y", "50", str(script)], check=True)

    def screen(self) -> str:
        """The pane's text now ("" once the CLI has exited)."""
        done = subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else ""

    def alive(self) -> bool:
        """Whether the CLI still runs."""
        return subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True).returncode == 0

    def keys(self, *keys: str, pause: float = 0.6) -> None:
        """Send tmux key names (``Enter``, ``Escape``, ``Up``, ``C-u``) one by one."""
        self.note("  keys: " + " ".join(keys))
        for key in keys:
            subprocess.run(["tmux", "send-keys", "-t", self.name, key], check=True)
            time.sleep(pause)

    def type(self, line: str, pause: float = 0.8) -> None:
        """Type ``line`` literally, then Enter."""
        self.note(f"  typed {line!r}, Enter")
        subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", line], check=True)
        time.sleep(pause)
        subprocess.run(["tmux", "send-keys", "-t", self.name, "Enter"], check=True)

    def slash(self, command: str, expect: str | Callable[[str], bool], timeout: float = 60) -> str:
        """Run a slash command, pressing Enter again if the first only took the completion menu's pick."""
        self.type(command)
        try:
            return self.wait_for(expect, timeout=5)
        except TimeoutError:  # the first Enter picked the completion
            subprocess.run(["tmux", "send-keys", "-t", self.name, "Enter"], check=True)
            return self.wait_for(expect, timeout=timeout)

    def wait_for(self, what: str | Callable[[str], bool], timeout: float = 60) -> str:
        """Wait until the screen shows ``what`` (a text, or a test of the screen); return the screen."""
        test = what if callable(what) else (lambda screen: what in screen)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if test(screen):
                return screen
            time.sleep(0.3)
        raise TimeoutError(f"{self.name}: no {what!r} on the screen:\n{self.screen()}")

    def wait_gone(self, timeout: float = 30) -> None:
        """Wait until the CLI has exited."""
        deadline = time.monotonic() + timeout
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.3)
        self.kill()

    def kill(self) -> None:
        """End the tmux session (and the CLI in it)."""
        subprocess.run(["tmux", "kill-session", "-t", self.name], capture_output=True)


def _shell(words: list[str]) -> str:
    return " ".join(w if re.fullmatch(r"[\w./=-]+", w) else _quote(w) for w in words)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    """Run a CLI to its end (its output shown when it fails)."""
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


def jsonl(path: Path) -> list[dict]:
    """The JSON objects of a JSONL file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --------------------------------------------------------------------------- Claude Code


class Claude:
    """Claude Code in a sandbox, talking to an ``AnthropicServer``."""

    def __init__(self, box: Sandbox, server: AnthropicServer) -> None:
        self.box = box
        self.server = server
        self.config = box.home / ".claude"
        self.config.mkdir()
        # The first-run screens skipped: onboarding, the API key's approval, the folder's trust,
        # the bypass-permissions warning.
        (self.config / ".claude.json").write_text(json.dumps({
            "hasCompletedOnboarding": True, "customApiKeyResponses": {"approved": [KEY], "rejected": []},
            "projects": {str(box.proj): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
        }))
        (self.config / "settings.json").write_text(json.dumps({"skipDangerousModePermissionPrompt": True}))
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(box.home), "TERM": "xterm-256color",
            "CLAUDE_CONFIG_DIR": str(self.config), "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",  # root may skip permissions only in a sandbox
        }
        self.folder = self.config / "projects" / escaped(str(box.proj))
        self.tuis = 0

    def command(self, *args: str) -> list[str]:
        """The ``claude`` command line with ``args``, permissions never asked."""
        return [str(self.box.bin / "claude"), "--dangerously-skip-permissions", *args]

    def p(self, prompt: str, *args: str) -> str:
        """One turn with ``claude -p``; the session id."""
        self.box.note(_shell(["claude", "-p", prompt, "--output-format", "json", *args]))
        done = run(self.command("-p", prompt, "--output-format", "json", *args), self.box.proj, self.env)
        return json.loads(done.stdout)["session_id"]

    @contextmanager
    def tui(self, *args: str) -> Iterator[Tmux]:
        """The TUI in tmux, its prompt ready."""
        self.tuis += 1
        self.box.note(_shell(["claude", *args]) + "  (the TUI, in tmux)")
        tmux = Tmux(f"claude{os.getpid()}-{self.tuis}", self.command(*args), self.box.proj, self.env, self.box.note)
        try:
            tmux.wait_for("bypass permissions on")
            yield tmux
        finally:
            tmux.kill()

    def tui_turn(self, tmux: Tmux, prompt: str, reply: str | None = None) -> None:
        """Send ``prompt`` in the TUI and wait for the reply (its default text unless ``reply``)."""
        before = self.server.answered
        tmux.type(prompt)
        tmux.wait_for(lambda s: self.server.answered > before and (reply or f"to: {prompt}") in s)
        tmux.wait_for(lambda s: "esc to interrupt" not in s)
        time.sleep(1)  # the transcript's last lines (turn_duration) written

    def session_file(self, sid: str) -> Path:
        """A session's transcript."""
        return self.folder / f"{sid}.jsonl"


def make_claude(box: Sandbox, out: Path) -> dict[str, str]:
    """Run the Claude Code scenarios; their session ids by name."""
    ids: dict[str, str] = {}
    with AnthropicServer(model="claude-opus-4-8") as server:
        cc = Claude(box, server)
        server.script(
            tool_call("Bash", {"command": "echo hi", "description": "Print hi"}, when=r"^Please run echo hi"),
            text("<analysis>The user ran echo hi and asked about it.</analysis>\n<summary>1. The user asked to run "
                 "`echo hi`; it printed hi.\n2. The user asked what it printed: hi.</summary>",
                 when=r"^CRITICAL: Respond with TEXT ONLY"),
            tool_call("Agent", {"description": "Find the README", "prompt": "Find the README file and say its path.",
                                "subagent_type": "general-purpose"}, when=r"^Use an agent"),
            tool_call("Bash", {"command": "ls -a", "description": "List files"}, when=r"^Find the README file"),
            text("There is no README: the folder is empty.", when=r"^\.\n\.\.$"),
            text("The agent found no README in the project.", when=r"^There is no README"),
        )
        box.scenario = "compact"  # (a) turns, a Bash call, /compact, more turns
        sid = ids["compact"] = cc.p("Please run echo hi")
        cc.p("What did it print?", "--resume", sid)
        cc.p("/compact", "--resume", sid)
        cc.p("What do you remember after the compaction?", "--resume", sid)
        cc.p("And one more turn", "--resume", sid)
        box.scenario = "rewind"  # (b) a rewind in the TUI, then continued
        sid = ids["rewind"] = cc.p("First question")
        cc.p("Second question", "--resume", sid)
        with cc.tui("--resume", sid) as tmux:
            tmux.keys("Escape", "Escape")
            tmux.wait_for("Restore the code and/or conversation")
            tmux.keys("Up")  # the last prompt, "Second question"
            tmux.keys("Enter")
            tmux.wait_for("Restore conversation")
            tmux.keys("Enter")  # 1. Restore conversation
            tmux.wait_for(lambda s: "Restore conversation" not in s)
            tmux.keys("C-u")  # the rewound prompt comes back in the input: cleared
            cc.tui_turn(tmux, "A different second question")
            cc.tui_turn(tmux, "Third question after the rewind")
            tmux.type("/exit")
            tmux.wait_gone()
        box.scenario = "agent"  # (c) a sub-agent
        ids["agent"] = cc.p("Use an agent to find the README")
        box.scenario = "fork"  # (d) --fork-session, both sides continued
        sid = ids["origin"] = cc.p("A question before the fork")
        copy = ids["copy"] = cc.p("The copy's first question", "--resume", sid, "--fork-session")
        cc.p("The origin goes on", "--resume", sid)
        cc.p("The copy goes on", "--resume", copy)
        box.scenario = "exit"  # (e) a session ended with a local command and /exit in the TUI, then resumed
        # /exit alone writes nothing, /cost only system lines: after either the resumed session's leaf is no
        # user line, and Claude Code adds no synthetic reply.
        with cc.tui() as tmux:
            cc.tui_turn(tmux, "Hello from the TUI")
            tmux.slash("/context", "Context Usage")  # written as system lines and a user line: the leaf a user's
            time.sleep(2)
            tmux.keys("Escape")
            tmux.type("/exit")
            tmux.wait_gone()
        ids["exit"] = exited = _newest_session(cc.folder, ids.values())
        cc.p("Back after the exit", "--resume", exited)
        _keep_requests(server, box.home / "claude-requests.json")
    _copy_claude(box, cc.folder, out, ids)
    target = out / "projects" / escaped(NEUTRAL_PROJ)
    (out / "README.md").write_text(claude_readme(target, ids, box.runbook), encoding="utf-8")
    return ids


def _newest_session(folder: Path, known) -> str:
    files = [f for f in folder.glob("*.jsonl") if f.stem not in set(known)]
    return max(files, key=lambda f: f.stat().st_mtime).stem


def _keep_requests(server, path: Path) -> None:
    path.write_text(json.dumps([{"method": r.method, "path": r.path, "body": r.body} for r in server.requests],
                               indent=1))


def _copy_claude(box: Sandbox, folder: Path, out: Path, ids: dict[str, str]) -> None:
    target = out / "projects" / escaped(NEUTRAL_PROJ)
    if out.exists():
        shutil.rmtree(out)
    for sid in ids.values():
        for path in [folder / f"{sid}.jsonl", *sorted((folder / sid).rglob("*"))]:
            if path.is_file():
                dest = target / path.relative_to(folder)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(box.scrub(path.read_text(encoding="utf-8")), encoding="utf-8")



# --------------------------------------------------------------------------- READMEs: Claude Code

CLAUDE_SCENARIOS = {
    "compact": "a few turns (one a Bash call), `/compact` sent with `-p`, then more turns",
    "rewind": "two turns, then in the TUI a rewind (Esc Esc, the last prompt picked, \"Restore conversation\") "
              "and a different prompt, continued",
    "agent": "a turn whose reply calls the `Agent` tool; the sub-agent runs `ls -a` and answers",
    "fork": "a session, its copy made with `--resume ID --fork-session`, then one more turn on each side",
    "exit": "a TUI turn, `/context`, `/exit`, then `claude -p --resume ID` with a new prompt",
}
TOOL_MADE = ("queue-operation", "last-prompt", "mode", "permission-mode", "file-history-snapshot", "ai-title",
             "attachment", "system")


def _ranges(numbers: list[int]) -> str:
    """1, 2, 3, 7 as "1-3, 7"."""
    spans: list[list[int]] = []
    for n in sorted(numbers):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans) or "none"


def _content_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _claude_kind(line: dict) -> str:
    """What a transcript line is, in a few words."""
    kind, message = line.get("type"), line.get("message") or {}
    if kind == "system":
        return f"system {line.get('subtype')}"
    if kind == "attachment":
        return f"attachment {line['attachment'].get('type')}"
    if kind == "assistant":
        if message.get("model") == "<synthetic>":
            return "assistant <synthetic>"
        blocks = [b.get("type") for b in message.get("content") or []]
        calls = [b.get("name") for b in message.get("content") or [] if b.get("type") == "tool_use"]
        return "assistant " + "+".join(blocks) + (f" ({', '.join(calls)})" if calls else "")
    if kind == "user":
        said = _content_text(message)
        if line.get("isCompactSummary"):
            return "user compact summary"
        if any(b.get("type") == "tool_result" for b in message.get("content") or [] if isinstance(b, dict)):
            return "user tool_result"
        if said.lstrip().startswith("<") or line.get("isMeta"):
            return "user tool note" + (" (isMeta)" if line.get("isMeta") else "")
        return "user prompt"
    return kind


def _quoted(value: str, limit: int = 60) -> str:
    flat = " ".join(value.split())
    return json.dumps(flat if len(flat) <= limit else flat[: limit - 1] + "…", ensure_ascii=False)


def _claude_file_facts(path: Path, lines: list[dict], others: dict[str, dict[str, int]]) -> list[str]:
    """What a transcript holds, line by line where it matters."""
    where = {line["uuid"]: n for n, line in enumerate(lines, 1) if line.get("uuid")}
    facts = []
    prompts = [(n, _content_text(line["message"])) for n, line in enumerate(lines, 1)
               if _claude_kind(line) == "user prompt"]
    facts.append("Prompts: " + "; ".join(f"line {n} {_quoted(t)}" for n, t in prompts) + ".")
    for n, line in enumerate(lines, 1):
        kind = _claude_kind(line)
        if kind.startswith("assistant") and "tool_use" in kind:
            facts.append(f"Line {n}: {kind}; its result is line "
                         + _ranges([m for m, other in enumerate(lines, 1) if _claude_kind(other) == "user tool_result"
                                    and other.get("parentUuid") == line.get("uuid")]) + ".")
        if kind == "system compact_boundary":
            meta = line.get("compactMetadata") or {}
            kept = _ranges([where[u] for u in (meta.get("preservedMessages") or {}).get("uuids") or [] if u in where])
            segment = {k: where.get(v, "?") for k, v in (meta.get("preservedSegment") or {}).items()}
            facts.append(f"Line {n}: the compaction (`compact_boundary`, `parentUuid` null, `logicalParentUuid` "
                         f"line {where.get(line.get('logicalParentUuid'), '?')}, trigger {meta.get('trigger')}); "
                         f"kept verbatim after the summary (`preservedMessages`): line {kept}; `preservedSegment` "
                         + ", ".join(f"{k} line {v}" for k, v in segment.items()) + ".")
        if kind == "user compact summary":
            facts.append(f"Line {n}: the summary (`isCompactSummary`, `isVisibleInTranscriptOnly`), "
                         f"{_quoted(_content_text(line['message']), 90)}.")
        if kind.startswith("user tool note"):
            meta_flag = " (`isMeta`)" if line.get("isMeta") else ""
            facts.append(f"Line {n}: a note Claude Code wrote as a user line{meta_flag}: "
                         f"{_quoted(_content_text(line['message']), 70)}.")
        if kind == "assistant <synthetic>":
            facts.append(f"Line {n}: `model: \"<synthetic>\"` {_quoted(_content_text(line['message']))}, written by "
                         f"Claude Code on resuming (parent: line {where.get(line.get('parentUuid'), '?')}, "
                         f"a {_claude_kind(lines[where[line['parentUuid']] - 1])}), not by the model.")
    children: dict[str, list[int]] = {}
    for n, line in enumerate(lines, 1):
        if line.get("parentUuid"):
            children.setdefault(line["parentUuid"], []).append(n)
    for parent, kids in children.items():
        if len(kids) > 1 and parent in where:
            facts.append(f"Branch point: line {where[parent]} ({_claude_kind(lines[where[parent] - 1])}) has children "
                         + " and ".join(f"line {k} ({_claude_kind(lines[k - 1])})" for k in kids)
                         + f"; the branch from line {kids[0]} (lines {_ranges(_branch(lines, kids[0], kids[1:]))}) was "
                         f"left by the rewind, line {kids[-1]}'s goes on.")
    for other, their in others.items():
        shared = [n for n, line in enumerate(lines, 1) if line.get("uuid") in their]
        if shared:
            theirs = _ranges([their[lines[n - 1]["uuid"]] for n in shared])
            facts.append(f"Lines {_ranges(shared)} repeat lines {theirs} of {other}.jsonl: same uuids and timestamps, "
                         "this file's `sessionId`.")
    made = {}
    for n, line in enumerate(lines, 1):
        kind = _claude_kind(line)
        if line.get("type") in TOOL_MADE or "note" in kind or "<synthetic>" in kind or "summary" in kind:
            made.setdefault(kind, []).append(n)
    facts.append("Tool-made lines (no one's words): " + "; ".join(f"{k} {_ranges(v)}" for k, v in made.items()) + ".")
    return facts


def _branch(lines: list[dict], start: int, stops: list[int]) -> list[int]:
    """The line numbers of the chain that starts at ``start`` (its descendants, up to ``stops``)."""
    chain, uuids = [start], {lines[start - 1].get("uuid")}
    for n in range(start + 1, len(lines) + 1):
        if n in stops:
            break
        if lines[n - 1].get("parentUuid") in uuids:
            chain.append(n)
            uuids.add(lines[n - 1].get("uuid"))
    return chain


def claude_readme(target: Path, ids: dict[str, str], runbook: dict[str, list[str]]) -> str:
    """The README of the Claude Code fixtures, from what was run and what the files hold."""
    files = {role: target / f"{sid}.jsonl" for role, sid in ids.items()}
    parsed = {role: jsonl(path) for role, path in files.items()}
    uuids = {ids[role]: {line["uuid"]: n for n, line in enumerate(lines, 1) if line.get("uuid")}
             for role, lines in parsed.items()}
    version = next(line["version"] for line in parsed["compact"] if line.get("version"))
    out = [f"# Claude Code {version}: real transcripts", "",
           "Written by Claude Code itself (npm `@anthropic-ai/claude-code`), run against `tests/fakeagents.py`'s "
           "`AnthropicServer` by `tests/data/make_real.py claude` in a throwaway HOME "
           "(`CLAUDE_CONFIG_DIR=$HOME/.claude`, working directory `$HOME/proj`). The paths are scrubbed: the "
           "throwaway HOME is `/home/user`, the working directory `/home/user/proj` (and its folder name "
           "`-home-user-proj`); nothing else was changed. The fake model answers `Reply N to: <the user's words>` "
           "unless the script gave it a reply; its ids are `msg_fake…` / `toolu_fake…`.", "",
           "## What was run", ""]
    for scenario, steps in runbook.items():
        out += [f"### {scenario}: {CLAUDE_SCENARIOS[scenario]}", "", "```", *steps, "```", ""]
    out += ["## Seen while making them", "",
            "- The first-run screens are skipped by `$CLAUDE_CONFIG_DIR/.claude.json` (`hasCompletedOnboarding`, "
            "`customApiKeyResponses.approved: [KEY]`, `projects.<cwd>.hasTrustDialogAccepted`) and `settings.json` "
            "(`skipDangerousModePermissionPrompt`); as root `--dangerously-skip-permissions` needs `IS_SANDBOX=1`.",
            "- `-p` turns write no `turn_duration` line, TUI turns do; `-p` does not ask for a title, the TUI does "
            "(a request with `output_config.format` JSON schema `{title}`), hence the `ai-title` line of TUI sessions.",
            "- `claude -p /compact` compacts. Resuming afterwards writes an `isMeta` user line \"Continue from where "
            "you left off.\" and a `<synthetic>` \"No response requested.\" before the next prompt.",
            "- `/exit` in the TUI writes no line at all, `/cost` only `system` `local_command` lines: resuming after "
            "either adds nothing. `/context` ends with an `isMeta` user line holding its output, and resuming after "
            "it adds the `<synthetic>` reply (without the \"Continue\" line).",
            "- Esc Esc leaves no marker: the new prompt's `parentUuid` is the turn before the rewound prompt, and "
            "the rewound prompt comes back in the input box (cleared with Ctrl-U here).",
            "- The `--fork-session` copy names no origin: only the shared uuids tell.",
            "- The sub-agent's first user line is the `Agent` call's `prompt`, not the user's words.", ""]
    out += ["## The files", "", "Line numbers count from 1.", ""]
    for role, path in files.items():
        scenario = "fork" if role in ("origin", "copy") else role
        others = {ids[o]: uuids[ids[o]] for o in ids if o != role and scenario == "fork" and o in ("origin", "copy")}
        out += [f"### `{path.name}` ({role}; made by {scenario})", ""]
        out += [f"- {fact}" for fact in _claude_file_facts(path, parsed[role], others if role == "copy" else {})]
        for agent in sorted((target / ids[role] / "subagents").glob("agent-*.jsonl")):
            lines = jsonl(agent)
            meta = json.loads(agent.with_suffix(".meta.json").read_text())
            out += [f"- Its sub-agent `{agent.relative_to(target)}`: {len(lines)} lines, `sessionId` the parent's, "
                    f"`agentId` {lines[0].get('agentId')}, `isSidechain` {lines[0].get('isSidechain')}; kinds: "
                    + ", ".join(_claude_kind(line) for line in lines) + f". Beside it `{agent.stem}.meta.json`: "
                    f"`{json.dumps(meta)}` (`toolUseId` the parent's Agent call)."]
        out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------- Codex


class Codex:
    """Codex in a sandbox, its model provider a ``ResponsesServer``."""

    def __init__(self, box: Sandbox, server: ResponsesServer) -> None:
        self.box = box
        self.server = server
        self.home = box.home / ".codex"
        self.home.mkdir()
        (self.home / "config.toml").write_text(
            f'model = "{server.model}"\nmodel_provider = "fake"\ncheck_for_update_on_startup = false\n\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{server.base_url}"\nwire_api = "responses"\n'
            f'env_key = "FAKE_API_KEY"\n\n[projects."{box.proj}"]\ntrust_level = "trusted"\n')
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(box.home), "TERM": "xterm-256color",
                    "CODEX_HOME": str(self.home), "FAKE_API_KEY": KEY}
        self.tuis = 0

    def exec(self, *args: str) -> str:
        """``codex exec ARGS`` (outside a git repository); the session id it prints."""
        self.box.note(_shell(["codex", "exec", "--skip-git-repo-check", *args]))
        done = run([str(self.box.bin / "codex"), "exec", "--skip-git-repo-check", *args], self.box.proj, self.env)
        return re.search(r"session id: (\S+)", done.stderr).group(1)

    def rollouts(self) -> dict[str, Path]:
        """The rollout files by session id."""
        return {json.loads(path.open().readline())["payload"]["id"]: path
                for path in sorted((self.home / "sessions").rglob("rollout-*.jsonl"))}

    @contextmanager
    def tui(self, *args: str) -> Iterator[Tmux]:
        """The TUI in tmux, its prompt ready; ``/quit`` on leaving, then its app-server daemon stopped."""
        self.tuis += 1
        self.box.note(_shell(["codex", *args]) + "  (the TUI, in tmux)")
        tmux = Tmux(f"codex{os.getpid()}-{self.tuis}", [str(self.box.bin / "codex"), *args], self.box.proj, self.env,
                    self.box.note)
        try:
            tmux.wait_for("? for shortcuts")
            time.sleep(2)  # a resumed thread still loading takes the first keys for the completion menu only
            yield tmux
            tmux.type("/quit")
            tmux.wait_gone()
        finally:
            tmux.kill()
            self.stop_daemon()

    def stop_daemon(self) -> None:
        """Stop the app-server daemon a TUI leaves behind, and what of it outlives the stop."""
        self.box.note("codex app-server daemon stop  (the daemon the TUI left)")
        subprocess.run([str(self.box.bin / "codex"), "app-server", "daemon", "stop"], cwd=self.box.proj,
                       env=self.env, capture_output=True, timeout=60)
        for pid in _pids_mentioning(str(self.home)):
            os.kill(pid, 15)

    def tui_turn(self, tmux: Tmux, prompt: str, reply: str | None = None) -> None:
        """Send ``prompt`` in the TUI and wait for the reply (its default text unless ``reply``)."""
        before = self.server.answered
        tmux.type(prompt)
        tmux.wait_for(lambda s: self.server.answered > before and (reply or f"to: {prompt}") in s)
        tmux.wait_for(lambda s: "esc to interrupt" not in s)
        time.sleep(1)


def _pids_mentioning(text: str) -> list[int]:
    """The processes whose command line holds ``text`` (this sandbox's own)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if text in (proc / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(proc.name))
            except OSError:
                continue
    return pids


def make_codex(box: Sandbox, out: Path) -> dict[str, str]:
    """Run the Codex scenarios; their session ids by name."""
    ids: dict[str, str] = {}
    with ResponsesServer(model="fake-model") as server:
        cx = Codex(box, server)
        server.script(
            tool_call("exec_command", {"cmd": "echo hi"}, when=r"^Please run echo hi"),
            text("It printed hi.", when=r"Output:\s*hi\s*$"),
            text("Progress: the user asked for a plan and got one. Next: answer the next question.",
                 when=r"CONTEXT CHECKPOINT COMPACTION"),
        )
        box.scenario = "exec"  # (f, i) a turn with a tool call, then exec resume --last
        sid = ids["exec"] = cx.exec("Please run echo hi")
        cx.exec("resume", "--last", "What did it print?")
        box.scenario = "compact"  # (g) /compact in the TUI, then more turns there and in exec
        sid = ids["compact"] = cx.exec("Plan a small change")
        cx.exec("resume", sid, "And a second step?")
        with cx.tui("resume", sid) as tmux:
            tmux.slash("/compact", "Context compacted")
            time.sleep(1)
            cx.tui_turn(tmux, "What is left after the compaction?")
        cx.exec("resume", sid, "One more after the TUI")
        box.scenario = "fork"  # (h) forks: codex exec fork, and the TUI's /fork; each side continued
        sid = ids["origin"] = cx.exec("A question before the forks")
        ids["exec_fork"] = fork = cx.exec("fork", sid, "Forked with exec fork")
        cx.exec("resume", fork, "The exec fork goes on")
        before = set(cx.rollouts())
        with cx.tui("resume", sid) as tmux:
            tmux.slash("/fork", "Fork created")
            cx.tui_turn(tmux, "Forked in the TUI")
        ids["tui_fork"] = tui_fork = next(iter(set(cx.rollouts()) - before))
        cx.exec("resume", sid, "The origin goes on")
        cx.exec("resume", tui_fork, "The TUI fork goes on")
        _keep_requests(server, box.home / "codex-requests.json")
    offsets = _copy_codex(box, cx.rollouts(), out, ids)
    (out / "README.md").write_text(codex_readme(out, ids, box.runbook, offsets), encoding="utf-8")
    return ids


#: What is left of the base instructions in a fixture's session_meta (the rest is ~20 kB of prompt).
SHORTENED = " [... shortened for the fixture ...]"


def _copy_codex(box: Sandbox, rollouts: dict[str, Path], out: Path, ids: dict[str, str]) -> dict[str, tuple[int, int]]:
    """Copy the rollouts scrubbed, the base instructions cut, each fork's ``end_byte_offset`` recomputed.

    Only the session_meta line is written anew; every other line is the CLI's text, its paths replaced.
    Returns each fork's offset as Codex wrote it and as recomputed, by session id.
    """
    offsets: dict[str, tuple[int, int]] = {}
    if out.exists():
        shutil.rmtree(out)
    written: dict[str, Path] = {}
    for sid in ids.values():
        source = rollouts[sid]
        lines = box.scrub(source.read_text(encoding="utf-8")).splitlines()
        meta = json.loads(lines[0])
        instructions = meta["payload"].get("base_instructions")
        if isinstance(instructions, dict) and len(instructions.get("text", "")) > 400:
            instructions["text"] = instructions["text"][:300] + SHORTENED
            lines[0] = _compact_json(meta)
        dest = written[sid] = out / "sessions" / source.relative_to(source.parents[3])
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    for dest in written.values():  # the origins are all written: their offsets can be counted
        lines = dest.read_text(encoding="utf-8").splitlines()
        meta = json.loads(lines[0])
        base = meta["payload"].get("history_base")
        if base and base["thread_id"] in written:
            new = _end_byte_offset(written[base["thread_id"]], base["end_ordinal_exclusive"])
            offsets[meta["payload"]["id"]] = (base["end_byte_offset"], new)
            base["end_byte_offset"] = new
            lines[0] = _compact_json(meta)
            dest.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return offsets


def _compact_json(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def _end_byte_offset(path: Path, end_ordinal: int) -> int:
    """Where the origin's lines before ``end_ordinal`` end, in bytes."""
    offset = 0
    for raw in path.read_bytes().splitlines(keepends=True):
        if json.loads(raw)["ordinal"] >= end_ordinal:
            break
        offset += len(raw)
    return offset



# --------------------------------------------------------------------------- READMEs: Codex

CODEX_SCENARIOS = {
    "exec": "`codex exec` a turn whose reply calls `exec_command` (`echo hi`), then `codex exec resume --last`",
    "compact": "two `exec` turns, then in the TUI `/compact` and a turn, then one more `exec resume`",
    "fork": "a session forked twice, by `codex exec fork ID PROMPT` and by the TUI's `/fork`; each side continued",
}


def _codex_text(payload: dict) -> str:
    return " ".join(c.get("text", "") for c in payload.get("content") or [] if isinstance(c, dict))


def _codex_file_facts(lines: list[dict], offsets: tuple[int, int] | None, names: dict[str, str]) -> list[str]:
    """What a rollout holds, line by line where it matters."""
    meta = lines[0]["payload"]
    facts = [f"`session_meta` (line 1): `originator` {meta.get('originator')}, `source` {meta.get('source')}, "
             f"`cli_version` {meta.get('cli_version')}; `base_instructions` shortened to 300 characters."]
    if meta.get("forked_from_id"):
        base = meta.get("history_base") or {}
        facts.append(f"A fork of {names.get(meta['forked_from_id'], meta['forked_from_id'])}: `forked_from_id`, "
                     f"`forked_from_ordinal_exclusive` {meta.get('forked_from_ordinal_exclusive')}, `history_mode` "
                     f"{meta.get('history_mode')}, `history_base` {json.dumps(base)}. None of the origin's lines are "
                     f"copied: this file's ordinals run {lines[0]['ordinal']}-{lines[-1]['ordinal']}, its own "
                     "lines only (the origin, continued, reuses the same ordinals).")
        if offsets:
            facts.append(f"`end_byte_offset` recomputed for the scrubbed origin: Codex wrote {offsets[0]} (the "
                         f"origin's size then), the fixture says {offsets[1]} (where the origin's lines before "
                         f"ordinal {base.get('end_ordinal_exclusive')} end in the fixture file).")
    turn, rows = None, []
    for n, line in enumerate(lines, 1):
        kind, payload = line["type"], line.get("payload") or {}
        if kind == "event_msg" and payload.get("type") == "task_started":
            turn = [n, None, [], []]
            rows.append(turn)
        elif turn is not None and kind == "response_item" and payload.get("type") == "message":
            said = _codex_text(payload)
            if payload.get("role") == "user" and not said.lstrip().startswith("<"):
                turn[1] = (n, said)
            elif payload.get("role") in ("developer", "user"):
                turn[2].append(n)
        elif turn is not None and kind == "response_item" and payload.get("type") in ("function_call",
                                                                                       "function_call_output"):
            turn[3].append(f"{payload['type']} line {n}"
                           + (f" ({payload.get('name')} {payload.get('arguments')})" if "name" in payload else ""))
        elif kind == "compacted":
            kept = [(item.get("role"), _codex_text(item)) for item in payload.get("replacement_history") or []]
            facts.append(f"Line {n}: `compacted` (keys {', '.join(payload)}); `replacement_history`: "
                         + "; ".join(f"{role} {_quoted(said, 40)}" for role, said in kept) + ".")
    for start, prompt, context, calls in rows:
        what = f"prompt line {prompt[0]} {_quoted(prompt[1])}" if prompt else "no prompt (the `/compact` task)"
        facts.append(f"Turn from line {start} (`task_started`): {what}"
                     + (f"; injected context messages lines {_ranges(context)}" if context else "")
                     + (f"; {', '.join(calls)}" if calls else "") + ".")
    policies = sorted({type(line["payload"].get("approval_policy")).__name__ for line in lines
                       if line["type"] == "turn_context"})
    facts.append(f"`turn_context.approval_policy` is a {' or a '.join(policies)} here.")
    return facts


def codex_readme(out: Path, ids: dict[str, str], runbook: dict[str, list[str]],
                 offsets: dict[str, tuple[int, int]]) -> str:
    """The README of the Codex fixtures, from what was run and what the files hold."""
    files = {role: next((out / "sessions").rglob(f"rollout-*-{sid}.jsonl")) for role, sid in ids.items()}
    names = {sid: f"`{files[role].name}` ({role})" for role, sid in ids.items()}
    version = jsonl(files["exec"])[0]["payload"]["cli_version"]
    text = [f"# Codex {version}: real rollouts", "",
            "Written by Codex itself (npm `@openai/codex`), run against `tests/fakeagents.py`'s `ResponsesServer` "
            "(a `model_providers` entry, `wire_api = \"responses\"`) by `tests/data/make_real.py codex` in a "
            "throwaway HOME (`CODEX_HOME=$HOME/.codex`, working directory `$HOME/proj`, not a git repository). "
            "Scrubbed: the throwaway HOME is `/home/user`, the working directory `/home/user/proj`; each "
            "`session_meta`'s `base_instructions.text` (~20 kB of Codex's prompt) is cut to its first 300 "
            f"characters and `{SHORTENED.strip()}`, and a fork's `history_base.end_byte_offset` is recomputed "
            "for the scrubbed origin file (see below). Every other line is as Codex wrote it. The fake model "
            "answers `Reply N to: <the user's words>` unless the script gave it a reply.", "",
            "## What was run", ""]
    for scenario, steps in runbook.items():
        text += [f"### {scenario}: {CODEX_SCENARIOS[scenario]}", "", "```", *steps, "```", ""]
    text += ["## Seen while making them", "",
             "- `config.toml`: `model`, `model_provider = \"fake\"`, `[model_providers.fake]` with `base_url`, "
             "`wire_api = \"responses\"`, `env_key`; `[projects.\"<cwd>\"] trust_level = \"trusted\"` skips "
             "the TUI's trust screen. Codex asks nothing else of the server (no `/v1/models`).",
             "- The TUI asks for a title (a request with `text.format` JSON schema `{title}`, the prompt after "
             "`User prompt:`); the title is not written to the rollout.",
             "- `/compact` sends a request whose last user text begins \"You are performing a CONTEXT CHECKPOINT "
             "COMPACTION\", with no tools.",
             "- `/quit` leaves an app-server daemon; `codex app-server daemon stop` leaves its `pid-update-loop` "
             "process, ended by pid here.",
             "- A fork made in the TUI of a session `exec` made says `originator` codex_exec, `source` vscode.", ""]
    text += ["## The files", "", "Line numbers count from 1; ordinals are Codex's `ordinal` field.", ""]
    for role, path in files.items():
        text += [f"### `{path.relative_to(out)}` ({role})", ""]
        text += [f"- {fact}" for fact in _codex_file_facts(jsonl(path), offsets.get(ids[role]), names)]
        text.append("")
    return "\n".join(text)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    """Make one tool's fixtures again."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("tool", choices=("claude", "codex"))
    parser.add_argument("--bin", type=Path, default=Path("/tmp/npmcli/node_modules/.bin"),
                        help="the folder holding the npm CLIs")
    parser.add_argument("--keep", action="store_true", help="leave the throwaway HOME behind")
    args = parser.parse_args(argv)
    box = Sandbox(args.bin.resolve() if args.bin.is_symlink() else args.bin)
    try:
        if args.tool == "claude":
            ids = make_claude(box, HERE / "claude_code" / "real2")
        else:
            ids = make_codex(box, HERE / "codex" / "real")
        print(json.dumps(ids, indent=1))
    finally:
        if args.keep:
            print(f"kept {box.home}", file=sys.stderr)
        else:
            shutil.rmtree(box.home, ignore_errors=True)


if __name__ == "__main__":
    main()
