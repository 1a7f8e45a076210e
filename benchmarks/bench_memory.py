"""Peak memory: opening a 100 MB session, and ``gs list`` of 10,000 sessions.

Each figure is the peak resident set (``VmHWM``, what ``/usr/bin/time -v`` calls "Maximum
resident set size") of a process of its own, so nothing measured before counts:

- **open**: ``GitStore.load`` + ``transcript.derive_messages`` of one ~100 MB session (what
  ``gs chat`` and ``gs show`` do before their first output), in a child Python; the peak is
  reset (``/proc/self/clear_refs``) after the imports, and noted after each stage (read the
  blob, parse, derive) so the report says where it is reached. The blob once packed (as
  ``git fast-import`` and every repack leave it) and once loose (as a save writes it).
- **gs show** (text and ``--format json``) of the same session, the whole CLI process.
- **gs list** over 10,000 sessions of 20 turns: the first list (no verified-tips cache: every
  log is read and parsed) and the next ones (from the tips' trailers), the whole CLI process.

Baseline: ``python -c pass`` and ``python -c "import gitsessions.cli"`` (the floor under every
figure: the interpreter and gs's imports). The 10,000 sessions are built with ``git fast-import``.

    python benchmarks/bench_memory.py                  # all
    python benchmarks/bench_memory.py --open-mb 20 --sessions 1000   # a short run
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import (
    PY,
    Builder,
    FixtureStore,
    Settings,
    fast_import,
    fresh_dir,
    git,
    git_env,
    human_bytes,
    row,
    run_cmd,
    run_measured,
    section,
    target,
    turn_events,
)

from gitsessions.log.events import encode_header, make_header
from gitsessions.store import GitStore

HERE = Path(__file__).resolve().parent
OPEN_BYTES = 100 * 1000 * 1000
LIST_SESSIONS = 10_000
LIST_TURNS = 20

#: Runs in the child: load + derive one session, printing the peak RSS (kB) after each stage.
_OPEN_CHILD = r"""
import json, sys, time
from gitsessions.store import GitStore
from gitsessions.log.events import parse_log
from gitsessions.log.transcript import derive_messages

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith(("VmHWM", "VmRSS")):
            yield line.split()[0][:-1], int(line.split()[1])

def peak():
    return dict(hwm())["VmHWM"]

with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # the peak so far (imports) is forgotten: from here on, the peak is the open's
base = dict(hwm())["VmRSS"]
t0 = time.perf_counter()
with GitStore(sys.argv[1]) as store:
    snap = store.load(sys.argv[2])
    after_load = peak()
    messages = derive_messages(snap.events)
    after_derive = peak()
    now = dict(hwm())["VmRSS"]
print(json.dumps({"base": base, "load": after_load, "derive": after_derive, "held": now,
                  "events": len(snap.events), "bytes": len(snap.raw), "messages": len(messages),
                  "seconds": time.perf_counter() - t0}))
"""


def peak_rss_kb(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, float]:
    """Run ``argv`` (output discarded); return its peak RSS (kB) and wall seconds (:func:`_common.run_measured`).

    Raises:
        RuntimeError: it exited non-zero.
    """
    done = run_measured(argv, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr[-500:]}")
    return done.peak // 1024, done.wall


def _fast_import(repo: Path, commits: list[tuple[str, str, bytes]]) -> None:
    """Write ``(session id, commit message, session.jsonl)`` as one commit each on ``refs/heads/<id>``."""
    fast_import(repo, ((sid, msg.encode(), 1_735_732_800 + k, data) for k, (sid, msg, data) in enumerate(commits)))


def _log(sid: str, turns: int, size: int, tools_every: int) -> tuple[bytes, int]:
    """A session.jsonl of ``turns`` turns of ~``size`` bytes; return it and its message count."""
    parts = [encode_header(make_header(sid, created=1_735_732_800_000, generator="benchmarks"))]
    seq = messages = 0
    for t in range(1, turns + 1):
        tools = bool(tools_every) and t % tools_every == 0
        evs = turn_events(seq, t, size, tools)
        parts.append(b"".join(ev.encode() for ev in evs))
        seq += len(evs)
        messages += 4 if tools else 2
    return b"".join(parts), messages


def _init(repo: Path) -> None:
    run_cmd(["git", "init", "--bare", "-q", str(repo)], env=git_env())
    git(repo, "config", "core.looseCompression", "1")
    git(repo, "config", "gc.auto", "0")


def _trailers(sid: str, turns: int, messages: int) -> str:
    return f"turn {turns}: bench\n\nSession: {sid}\nTurn: {turns}\nModel: gpt-4o-mini\nMessages: {messages}\n"


def _build_open(base: Path, target_bytes: int) -> tuple[dict[str, Path], int, int, int]:
    """One session of about ``target_bytes``, three ways: as gs's saves leave it (tip loose),
    after ``GitStore.gc()`` (the tip in a delta chain), and written by git (loose)."""
    saved = base / "saved.git"
    fx = FixtureStore(saved)
    b = Builder(fx, "big")
    while b.size < target_bytes:
        b.save(turns=400, turn_size=4000, tools_every=3)
    for _ in range(3):
        b.save(turns=1, turn_size=4000, tools_every=3)
    raw = fx.read_raw("big", b.tip)
    fx.close()
    packed = base / "packed.git"
    shutil.copytree(saved, packed)
    with GitStore(packed) as st:
        st.gc()
    by_git = base / "git.git"
    _init(by_git)
    blob = git(by_git, "hash-object", "-w", "--stdin", input=raw).strip()
    tree = git(by_git, "mktree", input=f"100644 blob {blob}\tsession.jsonl\n".encode()).strip()
    commit = git(by_git, "commit-tree", tree, "-m", _trailers("big", b.turn, b.messages)).strip()
    git(by_git, "update-ref", "refs/heads/big", commit)
    return {"saved by gs (tip loose)": saved, "after gs gc (tip in a delta chain)": packed,
            "written by git (loose)": by_git}, len(raw), b.turn, b.messages


def bench_open(s: Settings, target_bytes: int) -> None:
    section(f"13a. peak memory opening a {human_bytes(target_bytes)} session (load + derive_messages)")
    base = fresh_dir(s, "memory-open")
    t0 = time.perf_counter()
    repos, size, turns, messages = _build_open(base, target_bytes)
    print(f"  one session of {turns} turns (a tool call every 3rd), {messages} messages, {human_bytes(size)} "
          f"session.jsonl, ~{size // (turns * 7)} bytes per event (built in {time.perf_counter() - t0:.0f} s)")
    floor, _ = peak_rss_kb([PY, "-c", "pass"])
    imports, _ = peak_rss_kb([PY, "-c", "import gitsessions.cli, gitsessions.log.transcript"])
    row("floor: python -c pass | import gitsessions.cli", f"{floor / 1024:.0f} MB | {imports / 1024:.0f} MB")
    worst = 0.0
    for label, path in repos.items():
        out = subprocess.run([PY, "-c", _OPEN_CHILD, str(path), "big"], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)
        over = r["derive"] - r["base"]
        worst = max(worst, over * 1024 / size)
        row(f"open, {label}", f"{over / 1024:.0f} MB over the process = {over * 1024 / size:.2f}x the file; "
            f"whole process {r['derive'] / 1024:.0f} MB = {r['derive'] * 1024 / size:.2f}x")
        row("  peak after load | after derive | held after",
            f"{r['load'] / 1024:.0f} MB | {r['derive'] / 1024:.0f} MB | {r['held'] / 1024:.0f} MB "
            f"(the process before: {r['base'] / 1024:.0f} MB; {r['seconds']:.1f} s)")
    target(s, f"open a {human_bytes(size)} session: peak RSS", f"{worst:.2f}x its size over the process "
           "(worst of the three)", "< 3x its size", worst < 3)
    from bench_cli import gs_cmd, gs_env

    for args in (("show", "big"), ("show", "big", "--format", "json")):
        kb, wall = peak_rss_kb(gs_cmd(*args), env=gs_env(repos["after gs gc (tip in a delta chain)"], base))
        row(f"gs {' '.join(args)} (whole process, packed)", f"{kb / 1024:.0f} MB peak = {kb * 1024 / size:.2f}x "
            f"the file ({wall:.1f} s)")


def bench_list(s: Settings, sessions: int) -> None:
    section(f"13b. peak memory of gs list over {sessions} sessions of {LIST_TURNS} turns")
    base = fresh_dir(s, "memory-list")
    repo = base / "gs.git"
    _init(repo)
    t0 = time.perf_counter()
    template, messages = _log("x", LIST_TURNS, 700, tools_every=5)
    header_end = template.index(b"\n") + 1
    commits = []
    for k in range(sessions):
        sid = f"s{k:05d}"
        data = encode_header(make_header(sid, created=1_735_732_800_000 + k, generator="benchmarks"))
        commits.append((sid, _trailers(sid, LIST_TURNS, messages) + f"Title: session {k}\n",
                        data + template[header_end:]))
    _fast_import(repo, commits)
    print(f"  {sessions} sessions of {human_bytes(len(commits[0][2]))} each, built in {time.perf_counter() - t0:.0f} s")
    from bench_cli import gs_cmd, gs_env

    env = gs_env(repo, base)
    floor, _ = peak_rss_kb(gs_cmd("--help"), env=env)
    first, first_s = peak_rss_kb(gs_cmd("list", "--json"), env=env)
    again, again_s = peak_rss_kb(gs_cmd("list", "--json"), env=env)
    table, table_s = peak_rss_kb(gs_cmd("list"), env=env)
    row("floor: gs --help (interpreter + CLI imports)", f"{floor / 1024:.0f} MB")
    row("gs list --json, first (every log parsed)", f"{first / 1024:.0f} MB ({first_s:.1f} s)")
    row("gs list --json, next (from trailers)", f"{again / 1024:.0f} MB ({again_s:.1f} s)")
    row("gs list (table)", f"{table / 1024:.0f} MB ({table_s:.1f} s)")
    worst = max(first, again, table)
    target(s, f"gs list of {sessions} sessions: peak RSS", f"{worst / 1024:.0f} MB (first list)",
           "< 200 MB", worst < 200 * 1024)


def run(s: Settings, only: set[str], open_bytes: int = OPEN_BYTES, sessions: int = LIST_SESSIONS) -> None:
    if "memory" not in only:
        return
    bench_open(s, open_bytes)
    bench_list(s, sessions)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--open-mb", type=float, default=OPEN_BYTES / 1e6, help="size of the opened session, MB")
    ap.add_argument("--sessions", type=int, default=LIST_SESSIONS, help="sessions gs list lists")
    ap.add_argument("--tmp", type=Path, default=Path("/tmp/gs-bench-memory"))
    args = ap.parse_args()
    args.tmp.mkdir(parents=True, exist_ok=True)
    s = Settings.make(True, args.tmp)
    run(s, {"memory"}, int(args.open_mb * 1e6), args.sessions)
    for t in s.results:
        print(f"  {'MET    ' if t.met else 'NOT MET'}  {t.name:<44} {t.figure}  [target {t.target}]")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
