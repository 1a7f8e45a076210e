"""Parallel writers: different sessions never block each other; on one session, every
successful turn is a commit and a refused writer says why."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from conftest import GS
from fakeapi import text


def _ask(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*GS, "ask", *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env=dict(os.environ))


def test_eight_parallel_asks_on_eight_sessions_all_succeed(gs, git):
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(_ask, [["-S", f"s{i}", f"prompt {i}"] for i in range(8)]))
    for r in results:
        assert r.returncode == 0, r.stderr
    rows = gs("list", "--json").json()
    assert sorted(r["id"] for r in rows) == [f"s{i}" for i in range(8)]
    for i in range(8):
        assert git("log", "--format=%s", f"s{i}") == f"turn 1: prompt {i}\n"
    git("fsck", "--strict")


def test_one_session_many_writers_turns_equal_commits(gs, git, fake_api):
    # Slow replies so that writers overlap.
    assert gs("ask", "-S", "shared", "seed").code == 0
    fake_api.script(*[text("slow reply", chunk_size=2, delay=0.05) for _ in range(6)])
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(_ask, [["shared", f"writer {i}"] for i in range(6)]))
    ok = [r for r in results if r.returncode == 0]
    refused = [r for r in results if r.returncode != 0]
    assert ok, "at least one writer must win"
    for r in refused:
        assert "is being written by pid" in r.stderr and "--fork" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    commits = git("log", "--format=%s", "shared").splitlines()
    assert len(commits) == 1 + len(ok)
    shown = gs("show", "shared", "--format", "json").json()
    prompts = [m["content"] for m in shown["messages"] if m["role"] == "user"]
    assert sorted(prompts[1:]) == sorted(r.args[-1] for r in ok)
    git("fsck", "--strict")


def test_second_chat_on_a_session_is_refused_with_the_holder(gs, fake_api):
    """A live `gs chat` holds the session; `gs ask` on it names the holder and the ways on."""
    env = dict(os.environ)
    fake_api.script(text("x" * 40, chunk_size=1, delay=0.05))
    holder = subprocess.Popen([*GS, "chat", "busy"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, text=True)
    try:
        holder.stdin.write("long one\n")
        holder.stdin.flush()
        holder.stdout.read(3)  # the reply is streaming: the lock is held
        r = gs("ask", "-S", "busy", "me too")
        assert r.code == 1
        assert f"pid {holder.pid}" in r.err and "gs show busy" in r.err and "--fork" in r.err
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert holder.returncode == 0
    assert gs("ask", "-S", "busy", "now free").code == 0


def test_stale_lock_of_a_dead_process_is_taken_over(gs, repo_path):
    assert gs("ask", "-S", "w", "one").code == 0
    code = (
        "import sys, os, signal\n"
        "from gitsessions.store import GitStore\n"
        f"GitStore({str(repo_path)!r}).lock('w').acquire()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    subprocess.run([sys.executable, "-c", code])
    assert (repo_path / "gs" / "locks" / "w.lock").exists()
    r = gs("ask", "-S", "w", "two")
    assert r.code == 0, r.err
