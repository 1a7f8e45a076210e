"""Sync without thinking about it: ``sync: {pull: on-open}`` and
``gs sync --watch`` (a real process, stopped with SIGINT as Ctrl+C stops it)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time

import pytest
from conftest import GS
from gitservers import GitDaemon, init_bare

#: How long a test waits for the watching process to do what it should (a timeout, no figure).
WAIT_S = 60


@pytest.fixture
def machines(machine, tmp_path):
    """``(a, b, remote)``: two machines and the path of a bare remote (not made yet)."""
    return machine("a"), machine("b"), tmp_path / "remote.git"


def _rev(repo, ref):
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", ref],
                          capture_output=True, text=True).stdout.strip() or None


def _wait_for(what, check):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _user_prompts(fake_api):
    return [m["content"] for m in fake_api.requests[-1]["messages"] if m["role"] == "user"]


def test_pull_on_open_brings_the_other_machines_turns_first(machines, tmp_path, fake_api):
    a, b, remote = machines
    init_bare(remote)
    assert a("ask", "-S", "w", "one from a").code == 0
    assert a("remote", "add", "origin", str(remote)).code == 0 and a("push").code == 0
    assert b("clone", str(remote), str(b.repo)).code == 0
    assert a("ask", "-S", "w", "two from a").code == 0 and a("push").code == 0

    # off by default: b continues what it has
    assert b("ask", "--fork", "manual", "-S", "w", "hello").code == 0
    assert _user_prompts(fake_api) == ["one from a", "hello"]

    (tmp_path / "config.yaml").write_text("sync: {pull: on-open}\n")
    r = b("ask", "-S", "w", "three from b")
    assert r.code == 0, r.err
    assert "updated: w" in r.err
    assert _user_prompts(fake_api) == ["one from a", "two from a", "three from b"]

    # gs chat too: a session that exists only on the remote yet is brought, then continued
    assert a("ask", "-S", "x", "x from a").code == 0 and a("push").code == 0
    r = b("chat", "x", input="x from b\n")
    assert r.code == 0, r.err
    assert "new: x" in r.err
    assert _user_prompts(fake_api) == ["x from a", "x from b"]

    # the remote cannot be reached: one warning line, and the turn is taken all the same
    shutil.rmtree(remote)
    r = b("ask", "-S", "w", "six from b")
    assert r.code == 0, r.err
    warnings = [line for line in r.err.splitlines() if "no pull on open" in line]
    assert len(warnings) == 1 and str(remote) in warnings[0] and "opens as it is here" in warnings[0]
    assert _user_prompts(fake_api)[-1] == "six from b"


def test_pull_on_open_without_a_remote_warns_once_and_chats(gs, tmp_path):
    (tmp_path / "config.yaml").write_text("sync: {pull: on-open}\n")
    r = gs("chat", "w", input="hi\n")
    assert r.code == 0, r.err
    lines = [line for line in r.err.splitlines() if "no pull on open" in line]
    assert len(lines) == 1 and "gs remote add origin" in lines[0]
    assert gs("show", "w").code == 0


@pytest.mark.parametrize("sync", ["{pull: always}", "{pul: on-open}", "on-open"])
def test_a_bad_sync_setting_is_refused(gs, tmp_path, sync):
    (tmp_path / "config.yaml").write_text(f"sync: {sync}\n")
    r = gs("list")
    assert r.code == 1 and "sync must be a mapping like" in r.err and "pull: on-open | manual" in r.err


def test_interval_without_watch_is_a_usage_error(gs):
    r = gs("sync", "--interval", "5")
    assert r.code == 2 and "--interval goes with --watch" in r.err


@pytest.fixture
def watcher(tmp_path):
    """Start ``gs --repo REPO sync --watch ...`` in a process; returns (proc, log path)."""
    started = []

    def start(repo, *args):
        log = tmp_path / f"watch-{len(started)}.log"
        proc = subprocess.Popen([*GS, "--repo", str(repo), "sync", "--watch", *args],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log.open("w"))
        started.append(proc)
        return proc, log

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _stop(proc, log):
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=WAIT_S) == 0, log.read_text()
    lines = log.read_text().splitlines()
    assert lines[-1].startswith("gs: stopped syncing"), lines
    return lines


def test_watch_pushes_every_save_here(machines, watcher):
    a, _b, remote = machines
    init_bare(remote)
    assert a("ask", "-S", "w", "one").code == 0
    assert a("remote", "add", "origin", str(remote)).code == 0
    # a long interval: whatever reaches the remote after the first round came from watching the repo
    proc, log = watcher(a.repo, "--interval", "3600")
    _wait_for("the first round", lambda: _rev(remote, "w") == _rev(a.repo, "w"))
    assert a("ask", "-S", "w", "two").code == 0
    assert a("ask", "-S", "other", "a new session").code == 0
    _wait_for("the saves to be pushed",
              lambda: _rev(remote, "w") == _rev(a.repo, "w") and _rev(remote, "other") == _rev(a.repo, "other"))
    assert a("rm", "other").code == 0
    _wait_for("the archive to be pushed",
              lambda: _rev(remote, "refs/archive/other") == _rev(a.repo, "refs/archive/other"))
    lines = _stop(proc, log)
    assert lines[0].startswith("gs: syncing") and "Ctrl+C stops" in lines[0]
    assert not any("failed" in line for line in lines), lines
    subprocess.run(["git", "-C", str(remote), "fsck", "--strict"], check=True, capture_output=True)


def test_watch_pulls_every_interval_and_goes_on_after_a_failed_round(machines, watcher, tmp_path):
    a, b, remote = machines
    assert a("ask", "-S", "w", "one from a").code == 0
    assert a("remote", "add", "origin", str(remote)).code == 0  # not there yet: rounds fail
    proc, log = watcher(a.repo, "--interval", "0.5")
    _wait_for("a failed round", lambda: "sync failed" in log.read_text())
    failed = [line for line in log.read_text().splitlines() if "sync failed" in line]
    assert all("could not reach" in line and "next try in 0.5 s" in line for line in failed), failed

    init_bare(remote)
    _wait_for("the session to reach the remote", lambda: _rev(remote, "w") == _rev(a.repo, "w"))
    assert proc.poll() is None
    assert b("clone", str(remote), str(b.repo)).code == 0
    assert b("ask", "-S", "w", "two from b").code == 0 and b("push").code == 0
    _wait_for("b's turn to reach a", lambda: _rev(a.repo, "w") == _rev(remote, "w") == _rev(b.repo, "w"))
    # a round moves the refs, pushes, then says what it did: stopping it between the two loses the words
    _wait_for("a to say so", lambda: any(line.startswith("updated: w ") for line in log.read_text().splitlines()))
    lines = _stop(proc, log)
    assert sum("sync failed" in line for line in lines) >= len(failed)
    # rounds every 0.5 s, most with nothing to do: only those that did something print
    assert "pushed refs/heads/w to origin" in lines and any(line.startswith("updated: w ") for line in lines), lines
    messages = [m["content"] for m in a("show", "w", "--format", "json").json()["messages"]]
    assert messages[-2:] == ["two from b", "echo: two from b"]
    for repo in (a.repo, remote):
        subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], check=True, capture_output=True)


def test_watch_rounds_that_move_nothing_print_nothing(machine, watcher, tmp_path):
    a = machine("a")
    root = tmp_path / "srv"
    root.mkdir()
    init_bare(root / "remote.git")
    served, hook = tmp_path / "served", tmp_path / "access-hook"
    hook.write_text(f'#!/bin/sh\necho "$1" >> {served}\nexit 0\n')  # one line per request
    hook.chmod(0o755)
    with GitDaemon(root, access_hook=hook) as daemon:
        assert a("ask", "-S", "w", "one").code == 0
        assert a("remote", "add", "origin", daemon.url("remote.git")).code == 0
        proc, log = watcher(a.repo, "--interval", "0.2")
        _wait_for("the first round", lambda: _rev(root / "remote.git", "w") == _rev(a.repo, "w"))
        _wait_for("three more rounds", lambda: served.read_text().split().count("upload-pack") >= 4)
        lines = _stop(proc, log)
    assert lines[1:-1] == ["pushed refs/heads/w to origin"], lines


def test_a_round_with_a_server_that_never_answers_fails_and_the_next_comes(machines, watcher, tmp_path):
    from test_transports import _silent_server

    a, _b, _remote = machines
    (tmp_path / "config.yaml").write_text("sync: {timeout: 0.3}\n")
    assert a("ask", "-S", "w", "one").code == 0
    with _silent_server() as port:
        assert a("remote", "add", "origin", f"git://127.0.0.1:{port}/remote.git").code == 0
        proc, log = watcher(a.repo, "--interval", "0.5")
        _wait_for("two rounds that failed", lambda: log.read_text().count("did not answer within 0.3 s") >= 2)
        lines = _stop(proc, log)
    assert all("next try in 0.5 s" in line for line in lines if "did not answer" in line), lines
