"""Importing at scale: 1,000 Claude Code transcripts (~200 MB) in < 60 s.

The transcripts are generated here, Claude Code-shaped (``<dir>/<session-uuid>.jsonl``, one
JSON object per line: a prompt, the reply split over one line per content block, a
``tool_use`` and its ``tool_result`` per step, an ``attachment`` line inside the chain, a
``summary`` line), about 200 KB each. Until gs reads Claude Code's files, the same turns are
imported as a ChatGPT ``conversations.json`` holding the same conversations (one file:
what the write path costs is the same, a commit per turn).

Figures: wall time of ``gs import`` (a subprocess, as a user runs it; its CPU time counts
the worker process that reads ahead), its peak memory (of the child alone: ``_common.run_measured``), the
repo's size, a second run (nothing new: every file passed over by its digest) and a third
after one transcript grew (that file alone is read) beside the first. Baseline from the
same run: ``git fast-import`` of the same number of commits.

    python benchmarks/bench_import.py --conversations 100     # a short run while developing
    python benchmarks/bench_import.py --transcript-mb 20      # the large transcript's memory, smaller
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

from _common import (
    Settings,
    dir_sizes,
    fresh_dir,
    human_bytes,
    row,
    run_cmd,
    run_measured,
    section,
    target,
    words,
)
from bench_cli import gs_cmd, gs_env

N_CONVERSATIONS = 1000
N_TURNS = 20
TURN_SIZE = 10_000  # bytes of one turn in the transcript: ~200 KB a file
LIMIT_S = 60.0


def _uuid(i: int, j: int) -> str:
    return str(uuid.UUID(int=(i << 64) | j))


def claude_code_lines(i: int, turns: int = N_TURNS, turn_size: int = TURN_SIZE) -> list[dict]:
    """One Claude Code transcript: ``turns`` prompts, each answered after one tool call."""
    session = _uuid(i, 0)
    lines: list[dict] = []
    parent: str | None = None
    n = 0

    def add(kind: str, message: dict | None, **extra: object) -> None:
        nonlocal parent, n
        n += 1
        line = {"type": kind, "uuid": _uuid(i, n), "parentUuid": parent, "isSidechain": False,
                "userType": "external", "sessionId": session, "cwd": "/home/u/project", "version": "2.1.3",
                "gitBranch": "main", "timestamp": f"2026-0{1 + i % 9}-{1 + i % 28:02d}T10:{n // 60 % 60:02d}:"
                f"{n % 60:02d}.000Z", **extra}
        if message is not None:
            line["message"] = message
        lines.append(line)
        parent = line["uuid"]

    for t in range(turns):
        salt = i * 1000 + t
        add("user", {"role": "user", "content": words(turn_size // 10, salt=salt)})
        add("attachment", None, attachment={"type": "skill_listing", "content": "skills"})
        call = f"toolu_{i:04d}{t:04d}"
        mid = f"msg_{i:04d}{t:04d}a"
        add("assistant", {"role": "assistant", "id": mid, "model": "claude-sonnet-4-5",
                          "content": [{"type": "text", "text": words(turn_size // 10, salt=salt + 1)}]})
        add("assistant", {"role": "assistant", "id": mid, "model": "claude-sonnet-4-5", "stop_reason": "tool_use",
                          "content": [{"type": "tool_use", "id": call, "name": "Read",
                                       "input": {"file_path": f"src/m{t}.py"}}],
                          "usage": {"input_tokens": 900 + t, "output_tokens": 120}})
        add("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                  "content": words(turn_size // 2, salt=salt + 2)}]})
        add("assistant", {"role": "assistant", "id": mid + "b", "model": "claude-sonnet-4-5", "stop_reason": "end_turn",
                          "content": [{"type": "text", "text": words(turn_size // 5, salt=salt + 3)}],
                          "usage": {"input_tokens": 2000 + t, "output_tokens": 300}})
    lines.append({"type": "summary", "summary": f"Work on module {i}", "leafUuid": parent})
    return lines


def write_claude_code(folder: Path, conversations: int, turns: int = N_TURNS) -> int:
    """Write ``conversations`` transcripts under ``folder/<project>/``; return their total bytes."""
    project = folder / "-home-u-project"
    project.mkdir(parents=True, exist_ok=True)
    total = 0
    for i in range(conversations):
        data = "".join(json.dumps(line) + "\n" for line in claude_code_lines(i, turns))
        path = project / f"{_uuid(i, 0)}.jsonl"
        path.write_text(data)
        total += len(data)
    return total


def chatgpt_conversation(i: int, lines: list[dict]) -> dict:
    """The same conversation as a ChatGPT export's (a linear mapping; the tool call as a tool message)."""
    mapping: dict[str, dict] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
    parent = "root"
    t0 = 1_700_000_000 + i * 86_400
    for k, line in enumerate(lines):
        msg = line.get("message")
        if not msg:
            continue
        content = msg["content"]
        if isinstance(content, str):
            role, text = "user", content
        elif content[0]["type"] == "text":
            role, text = "assistant", content[0]["text"]
        elif content[0]["type"] == "tool_result":
            role, text = "tool", content[0]["content"]
        else:  # the tool_use: an assistant message to the tool
            role, text = "assistant", json.dumps(content[0]["input"])
        key = line["uuid"]
        author: dict = {"role": role, "name": "browser" if role == "tool" else None}
        to = "browser" if not isinstance(content, str) and content[0]["type"] == "tool_use" else "all"
        mapping[key] = {"id": key, "parent": parent, "children": [],
                        "message": {"id": key, "author": author, "create_time": t0 + k, "recipient": to,
                                    "content": {"content_type": "text", "parts": [text]}}}
        mapping[parent]["children"].append(key)
        parent = key
    return {"id": _uuid(i, 0), "title": f"Module {i}", "create_time": t0, "update_time": t0 + len(lines),
            "current_node": parent, "mapping": mapping}


def write_chatgpt(path: Path, conversations: int, turns: int = N_TURNS) -> int:
    """Write the same conversations as one ChatGPT ``conversations.json``; return its bytes."""
    data = json.dumps([chatgpt_conversation(i, claude_code_lines(i, turns)) for i in range(conversations)])
    path.write_text(data)
    return len(data)


def _import(repo: Path, tmp: Path, args: list[str]) -> tuple[float, float, int, str]:
    """Run ``gs import ARGS``; return its wall and CPU times (s), peak RSS (bytes) and its stderr's last line.

    The CPU time (user + system of the child) is the figure to compare on a shared machine:
    the wall time counts the other processes' turns on the cores too.
    """
    done = run_measured(gs_cmd("import", *args), env=gs_env(repo, tmp))
    tail = done.stderr.strip().splitlines()[-1:]
    return done.wall, done.cpu, done.peak, (tail[0] if tail else f"exit {done.returncode}")


def bench_import(s: Settings, conversations: int = N_CONVERSATIONS) -> None:
    section(f"import: {conversations} Claude Code-shaped conversations of {N_TURNS} turns (~200 KB each)")
    base = fresh_dir(s, "import")
    size = write_claude_code(base / "claude", conversations)
    row("transcripts written", f"{conversations} files, {human_bytes(size)}")
    from gitsessions.transfer.read import FORMATS

    if "claude-code" in FORMATS:
        transcripts = sorted(str(p) for p in (base / "claude").rglob("*.jsonl"))
        what, args = "Claude Code transcripts", ["--from", "claude-code", *transcripts]
    else:  # the parser has not landed: the same turns through ChatGPT's reader
        export = base / "conversations.json"
        size = write_chatgpt(export, conversations)
        what, args = "ChatGPT conversations.json (same turns)", [str(export)]
    row("imported as", f"{what}, {human_bytes(size)}")
    repo = base / "gs.git"
    wall, cpu, peak, said = _import(repo, base, args)
    row("gs import (first run)", f"{wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {human_bytes(peak)}")
    row("  it said", said)
    files, apparent, _ = dir_sizes(repo)
    row("repo after import", f"{files} files, {human_bytes(apparent)}")
    again, cpu2, _, said2 = _import(repo, base, args)
    row("gs import (again: nothing new)", f"{again:.1f} s wall, {cpu2:.1f} s CPU: {said2}")
    if "claude-code" in FORMATS:  # one transcript grew: that file alone is read again
        grown = Path(transcripts[conversations // 2])
        lines = [json.loads(line) for line in grown.read_text().splitlines()]
        more = claude_code_lines(conversations // 2, N_TURNS + 1)[-7:-1]  # its next turn, before the summary
        more[0]["parentUuid"] = next(line["uuid"] for line in reversed(lines) if "uuid" in line)
        grown.write_text("".join(json.dumps(line) + "\n" for line in [*lines, *more]))
        third, cpu3, _, said3 = _import(repo, base, args)
        row("gs import (one file grew)", f"{third:.1f} s wall, {cpu3:.1f} s CPU: {said3}")
    fsck = run_cmd(["git", "--git-dir", str(repo), "fsck", "--strict", "--no-progress"])
    row("git fsck --strict", "ok" if fsck.returncode == 0 else fsck.stderr.decode()[-300:])
    scaled = wall * N_CONVERSATIONS / conversations
    target(s, "import 1,000 Claude Code transcripts", f"{scaled:.1f} s" + ("" if conversations == N_CONVERSATIONS
                                                                           else f" (scaled from {conversations})"),
           f"< {LIMIT_S:.0f} s", scaled < LIMIT_S and fsck.returncode == 0)


#: The large ChatGPT export of the memory figure (memory stays bounded), bytes.
EXPORT_SIZE = 150 << 20


def bench_import_memory(s: Settings, size: int = EXPORT_SIZE) -> None:
    """Peak RSS of ``gs import`` of one large ChatGPT ``conversations.json``, beside its size.

    The export is read a conversation at a time (``transfer/readers/stream.py``): the peak should
    follow the largest conversation (~200 KB here), not the file. The child's own peak is
    read by ``/usr/bin/time`` (:func:`_common.run_measured` says why not this process's ``wait4``).
    """
    section(f"import memory: one ChatGPT conversations.json of ~{human_bytes(size)}")
    base = fresh_dir(s, "import-memory")
    export = base / "conversations.json"
    written, n = 0, 0
    with export.open("w", encoding="utf-8") as out:  # written a conversation at a time, as it is read
        out.write("[")
        while written < size:
            text = json.dumps(chatgpt_conversation(n, claude_code_lines(n)))
            out.write(("," if n else "") + text)
            written, n = written + len(text) + 1, n + 1
        out.write("]")
    row("export written", f"{n} conversations, {human_bytes(export.stat().st_size)} "
        f"(each ~{human_bytes(len(text))})")
    repo = base / "gs.git"
    done = run_measured(gs_cmd("import", str(export)), env=gs_env(repo, base))
    said = done.stderr.strip().splitlines()[-1:]
    peak = done.peak
    row("gs import", f"{done.wall:.1f} s wall, {done.cpu:.1f} s CPU, exit {done.returncode}")
    row("  it said", said[0] if said else "")
    row("peak RSS vs the export's size", f"{human_bytes(peak)} for {human_bytes(export.stat().st_size)} "
        f"({peak / export.stat().st_size:.2f}x)")
    target(s, "import memory bounded (peak RSS of a large ChatGPT export)", human_bytes(peak),
           "< half the export's size", done.returncode == 0 and peak < export.stat().st_size / 2)


#: The large Claude Code transcript of the memory figure, bytes (one session: its log is as large).
TRANSCRIPT_SIZE = 100 << 20
#: Bytes of one turn of it (a prompt, a reply, a tool call and its ~50 KB result).
BIG_TURN = 100_000


def bench_import_transcript_memory(s: Settings, size: int = TRANSCRIPT_SIZE) -> None:
    """Peak RSS of ``gs import`` of one large Claude Code transcript, beside its size.

    The transcript is read a line at a time (``stream.lines``); what stays is the one
    conversation it holds, as events, and the session's log the store writes it into,
    each about the file's size: the peak cannot be below the two.
    """
    section(f"import memory: one Claude Code transcript of ~{human_bytes(size)}")
    base = fresh_dir(s, "import-transcript")
    path = base / "claude" / "-home-u-project" / f"{_uuid(0, 0)}.jsonl"
    path.parent.mkdir(parents=True)
    per_turn = len("".join(json.dumps(line) + "\n" for line in claude_code_lines(0, 1, BIG_TURN)[:-1]))
    with path.open("w", encoding="utf-8") as out:
        for line in claude_code_lines(0, max(1, size // per_turn), BIG_TURN):
            out.write(json.dumps(line) + "\n")
    written = path.stat().st_size
    row("transcript written", f"{max(1, size // per_turn)} turns, {human_bytes(written)}")
    done = run_measured(gs_cmd("import", "--from", "claude-code", str(path)), env=gs_env(base / "gs.git", base))
    said = done.stderr.strip().splitlines()[-1:]
    row("gs import", f"{done.wall:.1f} s wall, {done.cpu:.1f} s CPU, exit {done.returncode}")
    row("  it said", said[0] if said else "")
    row("peak RSS vs the transcript's size", f"{human_bytes(done.peak)} for {human_bytes(written)} "
        f"({done.peak / written:.2f}x)")
    target(s, "import memory (peak RSS of one large Claude Code transcript)", f"{done.peak / written:.2f}x its size",
           "< 2x its size", done.returncode == 0 and done.peak < 2 * written)


def run(s: Settings, only: set[str]) -> None:
    if "import" in only:
        bench_import(s)
        bench_import_memory(s)
        bench_import_transcript_memory(s)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conversations", type=int, default=N_CONVERSATIONS)
    ap.add_argument("--transcript-mb", type=float, default=None,
                    help="instead: the memory figure of one Claude Code transcript of this many MiB")
    ns = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gs-bench-import-"))
    try:
        if ns.transcript_mb is not None:
            bench_import_transcript_memory(Settings.make(True, tmp), int(ns.transcript_mb * (1 << 20)))
        else:
            bench_import(Settings.make(True, tmp), ns.conversations)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0)
