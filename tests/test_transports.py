"""Sync over real servers on 127.0.0.1, over a path, git://, ssh and http:
``git daemon``, OpenSSH ``sshd`` and ``git http-backend`` behind Basic auth (tests/gitservers.py).

Per transport: push, plain ``git clone``, ``gs clone``, fast-forward pull, a diverged
session keeping both sides (the remote's under the name, the local one as a fork), a ref
refused by a server hook, and an unreachable server.
Over http: where credentials come from. Over every transport: ``gs push`` sends about
what ``git push`` sends for a 500-turn session. (The path transport's scenario is in
tests/test_remote.py.)
"""

from __future__ import annotations

import base64
import os
import random
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from gitservers import GitDaemon, GitHTTPServer, SSHServer, free_port, init_bare

from gitsessions.log.commits import commit_message
from gitsessions.log.events import make_event, make_header
from gitsessions.store import GitStore

NETWORK = ["git", "ssh", "http"]


@dataclass
class Transport:
    """Bare repos under ``root``, served as ``url(name)`` (for gs) and ``git_url(name)``
    (for the git CLI: over http it carries the password, which gs never stores)."""

    kind: str
    root: Path
    server: object = None
    env: dict[str, str] = field(default_factory=dict)

    def url(self, name: str) -> str:
        if self.kind == "path":
            return str(self.root / name)
        if self.kind == "file":
            return (self.root / name).as_uri()
        if self.kind == "ssh":
            return self.server.url(self.root / name)
        return self.server.url(name)

    def git_url(self, name: str) -> str:
        if self.kind == "http":
            return self.server.url(name, with_password=True)
        return self.url(name)


def _ssh_or_skip() -> None:
    if SSHServer.available():
        return
    reason = "sshd is not installed (Debian: apt-get install openssh-server)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; .ci/run installs it, so CI must not skip the ssh transport")
    pytest.skip(reason)


@pytest.fixture
def transport(request, tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Transport]:
    """A started server of kind ``request.param`` ("path", "git", "ssh", "http") serving
    ``tmp_path/srv``; its client settings are in the environment for gs and git alike."""
    kind = request.param
    root = tmp_path / "srv"
    root.mkdir()
    if kind in ("path", "file"):
        yield Transport(kind, root)
        return
    if kind == "git":
        server = GitDaemon(root)
    elif kind == "ssh":
        _ssh_or_skip()
        server = SSHServer(tmp_path / "sshd", isolated_home)
    else:
        server = GitHTTPServer(root)
    with server:
        t = Transport(kind, root, server)
        if kind == "ssh":
            t.env = {"GIT_SSH_COMMAND": server.ssh_command}  # ssh reads ~/.ssh from passwd, not $HOME
        elif kind == "http":
            t.env = {"GS_HTTP_USERNAME": server.username, "GS_HTTP_PASSWORD": server.password}
        for name, value in t.env.items():
            monkeypatch.setenv(name, value)
        yield t


@pytest.fixture
def machines(tmp_path: Path, gs):
    """``(a, b)``: run gs on machine A or B (separate session repos)."""

    def machine(name: str):
        repo = tmp_path / f"{name}.git"

        def run(*args: str, input: str | None = None, env: dict | None = None):
            return gs("--repo", str(repo), *args, input=input, env=env)

        run.repo = repo
        return run

    return machine("a"), machine("b")


def _git(repo: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout


def _messages(run, sid: str) -> list[str]:
    return [m["content"] for m in run("show", sid, "--format", "json").json()["messages"]]


def _ids(run, *flags: str) -> list[str]:
    return sorted(row["id"] for row in run("list", *flags, "--json").json())


def _all_objects(repo: Path) -> bytes:
    return subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True).stdout


def _one_line(r) -> str:
    assert r.code == 1, (r.out, r.err)
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    return r.err


# -- the done-when scenario, per transport ---------------------------------------------------


@pytest.mark.parametrize("transport", ["file", *NETWORK], indirect=True)
def test_push_clone_pull_and_divergence(transport: Transport, machines, tmp_path: Path):
    a, b = machines
    remote = init_bare(transport.root / "remote.git")
    url = transport.url("remote.git")
    for sid, prompt in [("w", "one"), ("w", "two"), ("side", "another session"), ("old", "to archive")]:
        r = a("ask", "-S", sid, prompt)
        assert r.code == 0, r.err
    assert a("rm", "old").code == 0
    assert a("remote", "add", "origin", url).code == 0
    r = a("push")
    assert r.code == 0, r.err
    for ref in ("refs/heads/w", "refs/heads/side", "refs/archive/old"):
        assert f"pushed {ref} to origin" in r.err

    # plain git clone over the same transport: every session branch, same history as gs log
    plain = tmp_path / "plain.git"
    subprocess.run(["git", "clone", "-q", "--bare", transport.git_url("remote.git"), str(plain)],
                   check=True, capture_output=True)
    assert sorted(_git(plain, "branch", "--format=%(refname:short)").split()) == ["side", "w"]
    for sid in ("w", "side"):
        assert _git(plain, "log", "--format=%H", sid).split() == [e["commit"] for e in a("log", sid, "--json").json()]
    assert _git(remote, "rev-parse", "refs/archive/old") == _git(a.repo, "rev-parse", "refs/archive/old")

    # gs clone on machine B: branches become local sessions, the archive stays archived
    r = b("clone", url, str(b.repo))
    assert r.code == 0, r.err
    assert _ids(b) == ["side", "w"] and _ids(b, "--archived") == ["old"]
    assert _messages(b, "w") == _messages(a, "w")
    assert b("remote", "list").out == f"origin\t{url}\n"

    # a fast-forward
    assert a("ask", "-S", "w", "three from a").code == 0
    assert a("push").code == 0
    r = b("pull")
    assert r.code == 0 and "updated: w" in r.err, r.err
    assert _git(b.repo, "rev-parse", "w") == _git(a.repo, "rev-parse", "w")
    assert _messages(b, "w")[-2] == "three from a"

    # divergence: both sides survive as branches, nothing is merged
    assert b("ask", "-S", "w", "four from b").code == 0
    assert a("ask", "-S", "w", "four from a").code == 0
    assert a("push").code == 0
    r = b("push")
    assert r.code == 1 and "not a fast-forward" in r.err, r.err
    mine = _git(b.repo, "rev-parse", "w").strip()
    r = b("pull")
    fork = f"w-{mine[:7]}"  # origin's side keeps the name; B's turns go to the fork
    assert r.code == 0 and f"w: diverged; your turns are in {fork} (continue: gs chat {fork})" in r.err, r.err
    assert _messages(b, "w")[-2] == "four from a"
    assert _messages(b, fork)[-2] == "four from b"
    r = b("push")
    assert r.code == 0 and f"pushed refs/heads/{fork}" in r.err and "refused" not in r.err, r.err
    r = a("pull")
    assert r.code == 0 and f"new: {fork}" in r.err, r.err
    assert _messages(a, fork) == _messages(b, fork)
    for repo in (a.repo, b.repo, remote):
        _git(repo, "fsck", "--strict")
        blobs = _all_objects(repo)
        assert b"four from a" in blobs and b"four from b" in blobs
        assert b"<<<<<<<" not in blobs and b">>>>>>>" not in blobs and b"\n=======\n" not in blobs


@pytest.mark.parametrize("transport", ["file", *NETWORK], indirect=True)
def test_a_clone_of_a_remote_whose_head_names_nothing_goes_on_with_the_session_saved_last(
        transport: Transport, machines):
    """``git init --bare`` leaves HEAD at an unborn master gs never pushes; the push does not rewrite it
    (git's does not either), and gs clone needs none: the session saved last is current there."""
    a, b = machines
    remote = init_bare(transport.root / "remote.git")
    for sid, prompt in [("a-first", "one"), ("z-last", "two"), ("m-newest", "four")]:
        assert a("ask", "-S", sid, prompt).code == 0
    for sid in ("a-first", "z-last"):  # saved a day before m-newest (a save's time is in seconds)
        tip = _git(a.repo, "rev-parse", sid).strip()
        day_before = {**os.environ, "GIT_COMMITTER_DATE": "@1700000000 +0000", "GIT_AUTHOR_DATE": "@1700000000 +0000",
                      "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                      "GIT_COMMITTER_EMAIL": "t@x"}
        older = subprocess.run(["git", "-C", str(a.repo), "commit-tree", f"{tip}^{{tree}}", "-m",
                                _git(a.repo, "log", "-1", "--format=%B", tip)],
                               capture_output=True, text=True, check=True, env=day_before).stdout.strip()
        _git(a.repo, "update-ref", f"refs/heads/{sid}", older, tip)
    assert a("remote", "add", "origin", transport.url("remote.git")).code == 0
    r = a("push")
    assert r.code == 0 and "created" not in r.err, r.err
    assert _git(remote, "symbolic-ref", "HEAD").strip() in ("refs/heads/master", "refs/heads/main")
    r = b("clone", transport.url("remote.git"), str(b.repo))
    assert r.code == 0, r.err
    assert _git(b.repo, "symbolic-ref", "HEAD").strip() == "refs/heads/m-newest"
    assert _git(b.repo, "log", "--format=%H").split() == [e["commit"] for e in a("log", "m-newest", "--json").json()]
    assert _messages(b, "m-newest") == ["four", "echo: four"]


# -- refusals and unreachable servers ----------------------------------------------------------


@pytest.mark.parametrize("transport", ["path", "file", *NETWORK], indirect=True)
def test_a_ref_the_server_refuses_is_reported_with_its_reason(transport: Transport, machines):
    a, _b = machines
    remote = init_bare(transport.root / "remote.git")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no pushes on fridays' >&2\nexit 1\n")
    hook.chmod(0o755)
    assert a("ask", "-S", "w", "one").code == 0
    assert a("remote", "add", "origin", transport.url("remote.git")).code == 0
    before = _git(a.repo, "for-each-ref")

    r = a("push")
    assert r.code == 1, r.err
    assert "refused: refs/heads/w: pre-receive hook declined" in r.err and "no pushes on fridays" in r.err, r.err
    assert "pushed" not in r.err and "Traceback" not in r.err
    assert _git(remote, "for-each-ref") == ""
    assert _git(a.repo, "for-each-ref") == before

    hook.unlink()
    r = a("push")
    assert r.code == 0 and "pushed refs/heads/w" in r.err, r.err
    assert _git(remote, "rev-parse", "w") == _git(a.repo, "rev-parse", "w")


@pytest.mark.parametrize("scheme", NETWORK)
def test_an_unreachable_server_is_one_line_and_changes_nothing(scheme: str, machines, monkeypatch):
    a, _b = machines
    port = free_port()  # nothing listens there
    url = {"git": f"git://127.0.0.1:{port}/remote.git",
           "ssh": f"ssh://127.0.0.1:{port}/srv/remote.git",
           "http": f"http://127.0.0.1:{port}/remote.git"}[scheme]
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -F /dev/null -o BatchMode=yes")
    assert a("ask", "-S", "w", "one").code == 0
    assert a("remote", "add", "gone", url).code == 0
    refs, messages = _git(a.repo, "for-each-ref"), _messages(a, "w")
    for args in (("push", "gone"), ("pull", "gone"), ("push", url), ("sync", "gone")):
        err = _one_line(a(*args))
        assert err.startswith(f"gs: could not reach {url}: ") and "nothing local was changed" in err, err
    r = a("clone", url, str(a.repo.parent / "clone.git"))
    assert "could not reach" in _one_line(r)
    assert _git(a.repo, "for-each-ref") == refs and _messages(a, "w") == messages
    _git(a.repo, "fsck", "--strict")


@pytest.mark.parametrize("transport", ["ssh"], indirect=True)
def test_ssh_command_from_the_repo_config(transport: Transport, machines, monkeypatch: pytest.MonkeyPatch):
    """Without GIT_SSH_COMMAND, core.sshCommand in the session repo's config is used, as by git."""
    a, _b = machines
    remote = init_bare(transport.root / "remote.git")
    monkeypatch.delenv("GIT_SSH_COMMAND")
    assert a("ask", "-S", "w", "one").code == 0
    assert a("remote", "add", "origin", transport.url("remote.git")).code == 0
    _git(a.repo, "config", "core.sshCommand", transport.server.ssh_command)
    r = a("push")
    assert r.code == 0 and "pushed refs/heads/w" in r.err, r.err
    assert _git(remote, "rev-parse", "w") == _git(a.repo, "rev-parse", "w")


# -- http credentials ---------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["http"], indirect=True)
def test_http_credentials_come_from_the_environment_or_git_credentials(
        transport: Transport, machines, isolated_home: Path, monkeypatch: pytest.MonkeyPatch):
    a, b = machines
    server: GitHTTPServer = transport.server
    remote = init_bare(transport.root / "remote.git")
    password = server.password
    sent = "Basic " + base64.b64encode(f"{server.username}:{password}".encode()).decode()
    monkeypatch.delenv("GS_HTTP_USERNAME")
    monkeypatch.delenv("GS_HTTP_PASSWORD")
    assert a("ask", "-S", "w", "one").code == 0
    # a password in the URL is not stored; the user name is
    r = a("remote", "add", "origin", server.url("remote.git", with_password=True))
    assert r.code == 0 and "not saved" in r.err

    # no credentials anywhere: the server's 401, one line saying where credentials go
    err = _one_line(a("push"))
    assert "wants credentials" in err and "~/.git-credentials" in err and "GS_HTTP_PASSWORD" in err
    assert server.requests[-1][2] == 401
    assert all(password not in base64.b64decode(h.split()[1]).decode() for h in server.auth_seen)
    assert _git(remote, "for-each-ref") == ""

    # from the environment (no credential file exists)
    assert not (isolated_home / ".git-credentials").exists()
    wrong = a("push", env={"GS_HTTP_PASSWORD": "not-it"})
    assert "wants credentials" in _one_line(wrong)
    r = a("push", env={"GS_HTTP_USERNAME": server.username, "GS_HTTP_PASSWORD": password})
    assert r.code == 0 and "pushed refs/heads/w" in r.err, r.err
    assert server.auth_seen[-1] == sent

    # from ~/.git-credentials (nothing in the environment)
    (isolated_home / ".git-credentials").write_text(f"http://{server.username}:{password}@127.0.0.1:{server.port}\n")
    assert a("ask", "-S", "w", "two").code == 0
    seen = len(server.auth_seen)
    r = a("push")
    assert r.code == 0 and "pushed refs/heads/w" in r.err, r.err
    assert server.auth_seen[seen:] and set(server.auth_seen[seen:]) == {sent}
    r = b("clone", transport.url("remote.git"), str(b.repo))
    assert r.code == 0 and _ids(b) == ["w"], r.err
    assert a("ask", "-S", "w", "three").code == 0 and a("push").code == 0
    r = b("pull")
    assert r.code == 0 and "updated: w" in r.err, r.err

    # the password is in no session repo's config, nor in any object
    for repo in (a.repo, b.repo):
        config = (repo / "config").read_text()
        assert password not in config and f"127.0.0.1:{server.port}/remote.git" in config
        assert password.encode() not in _all_objects(repo)


# -- efficient transfer -------------------------------------------------------------------------

_WORDS = ("the a session commit branch remote push pull object pack delta tree blob turn user model reply "
          "function returns value error file path test server client config store append log history fork "
          "python transport network bytes size index ref hook data line event json header because when "
          "should would could then first next last every other only also which where there these").split()


#: size of ``git repack -adf``'s pack of the long session (set by the fixture, printed only)
LONG_SESSION_GIT_BEST: list[int] = []


@pytest.fixture(scope="module")
def long_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A packed session repo holding session ``w``: 500 turns of ~1.7 KB each (built once)."""
    base = tmp_path_factory.mktemp("long")
    rng = random.Random(500)

    def prose(words: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "fsync", lambda fd: None)  # test setup only: a slow disk is not under test
        mp.setenv("HOME", str(base))
        with GitStore(base / "long.git") as store:
            events: list = []
            tip = None
            for turn in range(1, 501):
                n = len(events)
                new = [make_event(n, "turn/start", {"turn": turn}),
                       make_event(n + 1, "user/message", {"content": prose(40)}),
                       make_event(n + 2, "assistant/message", {
                           "content": "\n\n".join(prose(60) for _ in range(3)), "model": "gpt-4o-mini",
                           "tool_calls": []}),
                       make_event(n + 3, "turn/end", {"turn": turn, "reason": "completed"})]
                events += new
                tip = store.append("w", new, commit_message("w", events, n), expected_tip=tip,
                                   header=make_header("w") if tip is None else None)
            store.gc()
    # for the record: git's own best pack of the same history (deltas newest-first)
    best = base / "git-best.git"
    shutil.copytree(base / "long.git", best)
    _git(best, "repack", "-adfq")
    LONG_SESSION_GIT_BEST.append(sum(p.stat().st_size for p in (best / "objects" / "pack").glob("*.pack")))
    return base / "long.git"


def _received(bare: Path) -> int:
    """Bytes of the packs ``bare`` received (it keeps packs: receive.unpackLimit 1)."""
    assert "count: 0\n" in _git(bare, "count-objects", "-v"), "objects were unpacked: not measurable"
    return sum(p.stat().st_size for p in (bare / "objects" / "pack").glob("*.pack"))


@pytest.mark.parametrize("transport", ["path", *NETWORK], indirect=True)
def test_push_sends_about_what_git_push_sends(transport: Transport, long_session: Path, tmp_path: Path, gs):
    repo = tmp_path / "long.git"
    shutil.copytree(long_session, repo)
    r1 = init_bare(transport.root / "R1.git", keep_packs=True)
    r2 = init_bare(transport.root / "R2.git", keep_packs=True)

    r = gs("--repo", str(repo), "push", transport.url("R1.git"))
    assert r.code == 0 and "pushed refs/heads/w" in r.err, r.err
    _git(repo, "push", "-q", transport.git_url("R2.git"), "refs/heads/w")

    assert _git(r1, "rev-parse", "w") == _git(r2, "rev-parse", "w") == _git(repo, "rev-parse", "w")
    assert len(_git(r1, "rev-list", "w").split()) == 500
    _git(r1, "fsck", "--strict")
    gs_bytes, git_bytes = _received(r1), _received(r2)
    saved = sum(int(line.split()[2]) for line in _git(repo, "cat-file", "--batch-all-objects",
                                                       "--batch-check").splitlines())
    final = len(_git(repo, "show", "w:session.jsonl"))
    print(f"\n[{transport.kind}] 500 turns, session.jsonl {final} B, all saves {saved} B uncompressed: "
          f"gs push sent a {gs_bytes} B pack, git push {git_bytes} B (gs/git = {gs_bytes / git_bytes:.3f}); "
          f"after git repack -adf it would be {LONG_SESSION_GIT_BEST[-1]} B")
    assert gs_bytes <= 2 * git_bytes
    assert gs_bytes < saved / 50  # deltas, not 500 copies of a growing file


# -- a server that never answers; how failures are worded ---------------------------------------


@contextmanager
def _silent_server() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never sends a byte."""
    held: list[socket.socket] = []
    stop = threading.Event()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        listener.settimeout(0.05)

        def accept() -> None:
            while not stop.is_set():
                try:
                    held.append(listener.accept()[0])
                except OSError:  # the accept's own timeout: look at stop again
                    pass

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            yield listener.getsockname()[1]
        finally:
            stop.set()
            thread.join(timeout=5)
            for conn in held:
                conn.close()


@pytest.mark.parametrize("scheme", NETWORK)
def test_a_server_that_never_answers_fails_after_the_timeout(scheme: str, gs, tmp_path: Path, monkeypatch):
    if scheme == "ssh":
        _ssh_or_skip()
    (tmp_path / "config.yaml").write_text("sync: {timeout: 0.5, pull: on-open}\n")
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no")
    assert gs("ask", "-S", "w", "one").code == 0
    repo = tmp_path / "repo.git"
    refs = _git(repo, "for-each-ref")
    with _silent_server() as port:
        url = {"git": f"git://127.0.0.1:{port}/remote.git", "ssh": f"ssh://127.0.0.1:{port}/srv/remote.git",
               "http": f"http://127.0.0.1:{port}/remote.git"}[scheme]
        assert gs("remote", "add", "origin", url).code == 0
        for args in (("pull",), ("push",), ("sync",), ("push", url)):
            r = gs(*args, timeout=20)  # without a timeout gs waits for ever
            err = _one_line(r)
            assert err == f"gs: {url} did not answer within 0.5 s; nothing local was changed " \
                          "(a slow server: raise sync.timeout in the config)\n", err
        assert _git(repo, "for-each-ref") == refs
        r = gs("ask", "-S", "w", "two", timeout=20)  # pull on open: a warning, and the turn goes on
        assert r.code == 0 and "no pull on open" in r.err and "did not answer within 0.5 s" in r.err, r.err
    assert _messages_of(gs, "w")[-2] == "two"
    _git(repo, "fsck", "--strict")


def _messages_of(gs, sid: str) -> list[str]:
    return [m["content"] for m in gs("show", sid, "--format", "json").json()["messages"]]


def test_the_timeout_is_checked_in_the_config(gs, tmp_path: Path):
    for bad in ("0", "-1", "yes", "5000"):
        (tmp_path / "config.yaml").write_text(f"sync: {{timeout: {bad}}}\n")
        r = gs("list")
        assert r.code == 1 and "sync.timeout must be a number of seconds" in r.err, (bad, r.err)


@pytest.mark.parametrize("transport", ["http"], indirect=True)
def test_http_failures_are_worded_like_the_other_transports(transport: Transport, machines):
    a, _b = machines
    assert a("ask", "-S", "w", "one").code == 0
    port = free_port()
    err = _one_line(a("pull", f"http://127.0.0.1:{port}/remote.git"))
    assert err == (f"gs: could not reach http://127.0.0.1:{port}/remote.git: could not connect to 127.0.0.1:{port} "
                   "(connection refused); nothing local was changed\n"), err
    for args in (("pull", transport.url("missing.git")), ("push", transport.url("missing.git"))):
        err = _one_line(a(*args))
        assert err == (f"gs: could not reach {transport.url('missing.git')}: no git repository there (create one on "
                       "the server: git init --bare PATH; or check the URL); nothing local was changed\n"), err


@pytest.mark.parametrize("transport", ["http"], indirect=True)
def test_a_password_in_a_url_is_never_shown(transport: Transport, machines):
    a, _b = machines
    server: GitHTTPServer = transport.server
    init_bare(transport.root / "remote.git")
    url, shown = server.url("remote.git", with_password=True), f"http://{server.username}@127.0.0.1:{server.port}"
    os.environ.pop("GS_HTTP_PASSWORD")  # the password comes from the URL only
    assert a("ask", "-S", "w", "one").code == 0
    for args, said in ((("sync", url), f"pushed refs/heads/w to {shown}/remote.git"),
                       (("sync", url), f"up to date with {shown}/remote.git"),
                       (("pull", url), f"up to date with {shown}/remote.git"),
                       (("push", url), f"{shown}/remote.git")):
        r = a(*args)
        assert r.code == 0 and said in r.err, r.err
        assert server.password not in r.err + r.out, r.err
    for args in (("pull", server.url("missing.git", with_password=True)), ("push", url.replace("remote", "gone"))):
        r = a(*args)
        assert r.code == 1 and f"{shown}/" in r.err and server.password not in r.err, r.err
