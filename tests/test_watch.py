"""Sync without thinking about it (issue 10, item 6): ``sync: {pull: on-open}`` and
``gs sync --watch`` (a real process, stopped with SIGINT as Ctrl+C stops it)."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

#: How long a test waits for the watching process to do what it should (a timeout, no figure).
WAIT_S = 60


@pytest.fixture
def machines(tmp_path, gs):
    """``(a, b, remote)``: gs on two repos of their own, and the path of a bare remote (not made yet)."""

    def machine(name):
        repo = tmp_path / f"{name}.git"

        def run(*args, input=None):
            return gs("--repo", str(repo), *args, input=input)
        run.repo = repo
        return run

    return machine("a"), machine("b"), tmp_path / "remote.git"


def _init_bare(path):
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)


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
    _init_bare(remote)
    assert a("ask", "w", "one from a").code == 0
    assert a("remote", "add", "origin", str(remote)).code == 0 and a("push").code == 0
    assert b("clone", str(remote), str(b.repo)).code == 0
    assert a("ask", "w", "two from a").code == 0 and a("push").code == 0

    # off by default: b continues what it has
    assert b("ask", "--fork", "manual", "w", "hello").code == 0
    assert _user_prompts(fake_api) == ["one from a", "hello"]

    (tmp_path / "config.yaml").write_text("sync: {pull: on-open}\n")
    r = b("ask", "w", "three from b")
    assert r.code == 0, r.err
    assert "updated: w" in r.err
    assert _user_prompts(fake_api) == ["one from a", "two from a", "three from b"]

    # gs chat too: a session that exists only on the remote yet is brought, then continued
    assert a("ask", "x", "x from a").code == 0 and a("push").code == 0
    r = b("chat", "x", input="x from b\n")
    assert r.code == 0, r.err
    assert "new: x" in r.err
    assert _user_prompts(fake_api) == ["x from a", "x from b"]

    # the remote cannot be reached: one warning line, and the turn is taken all the same
    shutil.rmtree(remote)
    r = b("ask", "w", "six from b")
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
