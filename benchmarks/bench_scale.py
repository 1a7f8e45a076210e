"""Archive scale: ``gs list``, ``gs search WORD``, ``gs log`` of one session
and ``gs chat -c`` to its prompt, over 10,000 sessions of 20 turns (one commit per turn).

The archive is built with ``git fast-import`` (gs-shaped ``session.jsonl`` and commit messages
with gs's trailers; refs stay loose, as gs writes them), then listed once by gs so that its
tips are verified, as tips gs saved itself are. Baselines from the same run: ``git
for-each-ref`` over the same refs, ``git log`` of the same session, ``git grep`` of the word
over every tip, ``python -c pass``.

    python benchmarks/bench_scale.py --sessions 500      # a short run while developing
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import select
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from _common import (
    PY,
    Settings,
    fast_import,
    fresh_dir,
    git_env,
    measure,
    row,
    run_cmd,
    section,
    target,
    words,
)
from bench_cli import gs_cmd, gs_env
from gitservers import init_bare

from gitsessions.log.commits import commit_message
from gitsessions.log.events import Event, encode_header, make_event, make_header

N_SESSIONS, N_TURNS = 10_000, 20
TURN_SIZE = 1200  # bytes of one turn's events, encoded
WORD = "zqxjv"  # planted in one turn of every 100th session (the corpus never makes it)


def _turn(seq: int, turn: int, salt: int, planted: bool) -> list[Event]:
    """One finished turn (user message, one-step reply) of about :data:`TURN_SIZE` bytes, as gs writes it."""
    user = (WORD + " " if planted else "") + words(TURN_SIZE // 5, salt=salt)
    usage = {"prompt_tokens": 100 + turn, "completion_tokens": 50, "total_tokens": 150 + turn}
    spec: list[tuple[str, dict]] = [
        ("turn/start", {"turn": turn}), ("user/message", {"content": user}), ("step/start", {"step": 1}),
        ("assistant/message", {"content": words(TURN_SIZE - TURN_SIZE // 5 - 600, salt=salt + 1), "tool_calls": [],
                               "finish_reason": "stop", "model": "gpt-4o-mini", "usage": usage,
                               "interrupted": False}),
        ("step/end", {"step": 1}), ("turn/end", {"reason": "completed"})]
    t0 = 1_735_732_800_000 + turn * 60_000
    return [make_event(seq + i, typ, data, time_ms=t0 + i) for i, (typ, data) in enumerate(spec)]


def build_archive(repo: Path, n_sessions: int, n_turns: int) -> int:
    """Write ``n_sessions`` sessions of ``n_turns`` commits each into ``repo`` with ``git fast-import``.

    Every session gets its own stretch of prose; every 100th one says :data:`WORD` once (turn
    3), so a search has a few hundred hits to attribute, not ten thousand.

    Returns:
        The number of commits written.
    """
    count = 0

    def commits() -> Iterator[tuple[str, bytes, int, bytes]]:
        nonlocal count
        for k in range(n_sessions):
            sid = f"s{k:05d}"
            data = encode_header(make_header(sid, created=1_735_732_800_000 + k, generator="benchmarks"))
            seq, events = 0, []
            for t in range(1, n_turns + 1):
                evs = _turn(seq, t, salt=k * 41 + t, planted=t == 3 and k % 100 == 0)
                data += b"".join(ev.encode() for ev in evs)
                events += evs
                msg = commit_message(sid, events, len(events) - len(evs)).encode()  # the message gs writes
                seq += len(evs)
                count += 1
                yield sid, msg, 1_735_732_800 + k * 100 + t, data

    fast_import(repo, commits())
    return count


def fixture(s: Settings, n_sessions: int, n_turns: int) -> tuple[Path, Path]:
    """The archive (built once per size and kept in ``--fixtures``) and a scratch dir for gs's config."""
    cache = Path(os.environ.get("GS_BENCH_FIXTURES", tempfile.gettempdir())) / f"gs-scale-v2-{n_sessions}x{n_turns}"
    repo = cache / "gs.git"
    if not (cache / "done").exists():
        shutil.rmtree(cache, ignore_errors=True)
        init_bare(repo)
        t0 = time.perf_counter()
        commits = build_archive(repo, n_sessions, n_turns)
        print(f"  built with git fast-import: {n_sessions} sessions x {n_turns} commits = {commits} commits "
              f"({time.perf_counter() - t0:.1f} s); kept in {cache}")
        (cache / "done").write_text("")
    base = fresh_dir(s, "scale")
    work = base / "gs.git"
    t0 = time.perf_counter()
    shutil.copytree(repo, work)
    print(f"  archive copied for this run ({time.perf_counter() - t0:.1f} s)")
    return work, base


def _chat_prompt_time(env: dict[str, str], timeout: float = 30.0) -> float:
    """Seconds from starting ``gs chat -c`` on a terminal to its prompt (``> ``) being drawn."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: gs on a terminal
        os.execvpe(PY, gs_cmd("chat", "-c"), env)
    t0 = time.perf_counter()
    seen = b""
    try:
        while time.perf_counter() - t0 < timeout:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
                if " › ".encode() in seen:  # the prompt: "<session> › "
                    return time.perf_counter() - t0
        raise RuntimeError(f"gs chat -c showed no prompt: {seen[-500:]!r}")
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(fd)


def bench_scale(s: Settings, n_sessions: int = N_SESSIONS, n_turns: int = N_TURNS) -> None:
    section(f"14. archive scale: {n_sessions} sessions x {n_turns} turns: gs list, gs search, gs log, "
            "gs chat -c")
    repo, base = fixture(s, n_sessions, n_turns)
    env = gs_env(repo, base)
    git = ["git", f"--git-dir={repo}"]
    t0 = time.perf_counter()
    run_cmd(gs_cmd("list"), env=env)
    row("first gs list (parses every log: tips written by git, not gs)", f"{time.perf_counter() - t0:.2f} s")
    floor = measure(lambda: run_cmd([PY, "-c", "pass"]), s.cli_reps)
    row("python -c pass (the floor under gs)", floor.fmt())

    out = run_cmd(gs_cmd("list", "--json"), env=env).stdout
    assert len(json.loads(out)) == n_sessions
    t_list = measure(lambda: run_cmd(gs_cmd("list"), env=env), s.cli_reps)
    t_refs = measure(lambda: run_cmd([*git, "for-each-ref", "--format=%(refname) %(objectname) %(subject)"]),
                     s.cli_reps)
    row("gs list (table)", t_list.fmt())
    row("git for-each-ref (refname, commit, subject)", t_refs.fmt())
    target(s, f"gs list {n_sessions} sessions", f"{t_list.median:.2f} s", "< 1 s", t_list.median < 1.0)

    def search() -> bytes:
        return run_cmd(gs_cmd("search", WORD), env=env).stdout

    t0 = time.perf_counter()
    hits = search()
    row("first gs search (builds the index)", f"{time.perf_counter() - t0:.2f} s")
    row("the search index (gs/search.sqlite)", f"{(repo / 'gs' / 'search.sqlite').stat().st_size / 1e6:.0f} MB")
    n_hits = hits.count(b"\n")
    assert n_hits == (n_sessions + 99) // 100, hits[:300]
    t_search = measure(search, s.cli_reps)
    t_grep = measure(lambda: run_cmd(["sh", "-c", f"git --git-dir={repo} for-each-ref --format='%(objectname)' "
                                      f"refs/heads/ | xargs git --git-dir={repo} grep -c -i {WORD} | wc -l"],
                                     env=git_env()), min(3, s.cli_reps))  # reads every blob: slow
    row(f"gs search {WORD} ({n_hits} hits; index up to date)", t_search.fmt())
    row("git grep -i of every tip (for-each-ref | xargs git grep)", t_grep.fmt())
    target(s, f"gs search over {n_sessions} sessions", f"{t_search.median:.2f} s", "< 1 s", t_search.median < 1.0)

    sid = f"s{n_sessions // 2:05d}"
    t_log = measure(lambda: run_cmd(gs_cmd("log", sid), env=env), s.cli_reps)
    t_glog = measure(lambda: run_cmd([*git, "log", "--format=%H %s", sid]), s.cli_reps)
    row(f"gs log {sid} ({n_turns} commits)", t_log.fmt())
    row(f"git log --format='%H %s' {sid}", t_glog.fmt())
    target(s, "gs log of one session", f"{t_log.median:.2f} s", "< 0.3 s", t_log.median < 0.3)

    chat_env = dict(env, OPENAI_API_KEY="sk-bench-unused", OPENAI_BASE_URL="http://127.0.0.1:9/v1",
                    TERM="dumb")
    samples = [_chat_prompt_time(chat_env) for _ in range(s.cli_reps)]
    samples.sort()
    med = samples[len(samples) // 2]
    row("gs chat -c to its prompt (on a pty)", f"median {med * 1e3:9.2f} ms  (min {samples[0] * 1e3:.2f}, "
        f"max {samples[-1] * 1e3:.2f}, n={len(samples)})")
    target(s, "gs chat -c to its prompt", f"{med:.2f} s", "< 0.5 s", med < 0.5)


def run(s: Settings, only: set[str]) -> None:
    if "scale" in only:
        bench_scale(s)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=N_SESSIONS)
    ap.add_argument("--turns", type=int, default=N_TURNS)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gs-bench-"))
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as run.py: gs's bytecode cached, not recompiled each start
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    try:
        bench_scale(Settings.make(args.quick, tmp), args.sessions, args.turns)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(0)
