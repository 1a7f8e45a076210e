"""Shared pytest fixtures.

Every test runs with HOME, the XDG dirs, the config file and the session repo inside its
own ``tmp_path`` and with ``GIT_*`` / ``OPENAI_*`` / ``GS_*`` and the shell's colour, width,
pager, editor and proxy variables cleared (``TERM`` and git's identity fixed), so no test
touches the real home or a real provider, and no user's shell changes a result.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakeapi import FakeChatServer
from typer.testing import CliRunner

from gitsessions import cli
from gitsessions.store import GitStore, MemoryStore, SessionStore

#: The gs entry point of the venv running the tests.
GS = [sys.executable, "-m", "gitsessions"]


#: Variables read by gs or the libraries and tools it runs (rich, prompt_toolkit, httpx, git,
#: the agent CLIs) that a user's shell may export: each test starts with none of them, so that
#: a ``NO_COLOR=1``, ``PAGER=most`` or ``COLUMNS=80`` in the shell running the suite changes
#: nothing. A test that wants one sets it.
USER_SHELL_VARIABLES = (
    "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLORTERM", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
    "COLUMNS", "LINES", "PAGER", "LESS", "MANPAGER", "EDITOR", "VISUAL",
    "http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "SSH_AUTH_SOCK",
    "CLAUDE_CONFIG_DIR", "CODEX_HOME",  # gs capture edits those tools' settings: these, in HOME
    "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
)

#: The terminal every test runs under unless it sets its own: an ordinary colour terminal.
TEST_TERM = "xterm-256color"

#: Who plain ``git commit``/``commit-tree`` in a test are: a HOME with no ``~/.gitconfig``
#: (a new user's, CI's) has no identity, and git refuses to commit. Set through git's
#: environment, which gs (reading ``user.name`` from git's config files) does not read.
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.com",
                "GIT_COMMITTER_NAME": "Test Committer", "GIT_COMMITTER_EMAIL": "committer@example.com"}


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, XDG dirs, GS_CONFIG and GS_REPO into ``tmp_path``; clear GIT_*, OPENAI_*, GS_* and
    :data:`USER_SHELL_VARIABLES`; fix ``TERM`` and git's commit identity."""
    home = tmp_path / "home"
    home.mkdir()
    for name in list(os.environ):
        if name.startswith(("GIT_", "OPENAI_", "GS_", "PROMPT_TOOLKIT_")):
            monkeypatch.delenv(name)
    for name in USER_SHELL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", TEST_TERM)
    for name, value in GIT_IDENTITY.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("GS_CONFIG", str(tmp_path / "config.yaml"))
    monkeypatch.setenv("GS_REPO", str(tmp_path / "repo.git"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home


@pytest.fixture(autouse=True)
def import_time_paths(isolated_home: Path) -> Iterator[None]:
    """Re-point paths libraries computed from ``$HOME`` when first imported, as a new process would.

    ``gs`` runs in-process here, so a library imported during an earlier test keeps that
    test's home: dulwich reads ``~/.git-credentials`` from a list built at import time.
    """
    from dulwich import client

    paths = client.DEFAULT_GIT_CREDENTIALS_PATHS  # the default argument is this very list
    saved = list(paths)
    paths[:] = [str(isolated_home / ".git-credentials"), str(isolated_home / ".config" / "git" / "credentials")]
    yield
    paths[:] = saved


@pytest.fixture
def repo_path(tmp_path: Path) -> Path:
    """The session repo the isolated environment points at (created on first write)."""
    return tmp_path / "repo.git"


@dataclass
class AnyStore:
    """A session store of one backend, for the services (which must hold on every store).

    Attributes:
        store: the store, open.
        backend: ``git`` (a real repo on disk, checked with the real ``git``) or ``memory``.
        path: the repo (git; None for memory).
    """

    store: SessionStore
    backend: str
    path: Path | None = None

    @contextmanager
    def again(self) -> Iterator[SessionStore]:
        """The store as the next process sees it: the repo opened anew (git), the same dicts (memory)."""
        if self.path is None:
            yield self.store
        else:
            with GitStore(self.path) as fresh:
                yield fresh


@pytest.fixture(params=["git", "memory"])
def any_store(request: pytest.FixtureRequest, repo_path: Path) -> Iterator[AnyStore]:
    """Each backend in turn: a GitStore on a new repo, then a MemoryStore (one parametrized fixture)."""
    if request.param == "git":
        with GitStore(repo_path) as store:
            yield AnyStore(store, "git", repo_path)
        if repo_path.exists():  # whatever a service wrote, plain git reads it
            subprocess.run(["git", "-C", str(repo_path), "fsck", "--strict"], check=True, capture_output=True)
    else:
        yield AnyStore(MemoryStore(), "memory")


@pytest.fixture
def say():
    """``say(store, rev, *prompts, fork_as=None)``: completed turns written as the chat loop writes them.

    ``rev`` is opened for writing as the chat opens it (a new id is made, a past revision
    forks, to ``fork_as`` when given); each prompt gets the reply ``re: <prompt>``.
    """
    from gitsessions.log.events import make_header
    from gitsessions.writer.opening import open_revision

    def write(store: SessionStore, rev: str, *prompts: str, fork_as: str | None = None) -> None:
        session, _note = open_revision(store, rev, fork_as=fork_as, new_header=lambda sid: make_header(sid, created=1))
        try:
            for prompt in prompts:
                session.append("turn/start", {"turn": session.next_turn})
                session.append("user/message", {"content": prompt})
                session.append("step/start", {"step": 1})
                session.append("assistant/message", {"content": f"re: {prompt}", "tool_calls": [],
                                                     "finish_reason": "stop"})
                session.append("step/end", {"step": 1})
                session.end_turn("completed")
        finally:
            session.close()

    return write


@pytest.fixture
def fake_api() -> Iterator[FakeChatServer]:
    """A started fake OpenAI chat-completions server (``fake_api.base_url``)."""
    with FakeChatServer() as server:
        yield server


@dataclass
class Result:
    """A finished ``gs`` run."""

    code: int
    out: str
    err: str
    #: stdout exactly as written (``out`` is it decoded, bad bytes replaced)
    raw: bytes = b""

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def gs_env(fake_api: FakeChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point ``gs`` at the fake API (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``) for this test."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_api.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")


class GsTimeout(BaseException):
    """An in-process ``gs`` run took longer than its ``timeout`` (not an ``Exception``, so
    that gs's own error translation does not turn it into an exit status)."""


@contextmanager
def _deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise :class:`GsTimeout` in the main thread if the block runs longer than ``seconds``."""

    def expired(_signum, _frame):
        raise GsTimeout(f"{what} did not finish in {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def gs(gs_env: None):
    """Run ``gs`` in this process against the fake API: ``gs("ask", "work", "hi") -> Result``.

    The command runs through :func:`gitsessions.cli.run` (the real entry point's error
    translation) inside typer's ``CliRunner`` isolation: ``sys.stdin`` holds ``input`` (empty
    when None, like ``/dev/null``), ``sys.stdout``/``sys.stderr`` are captured, and ``env``
    is set in ``os.environ`` for this call only; a run longer than ``timeout`` seconds fails
    the test. Use :func:`gs_proc` where the process is the point (real stdin/stdout file
    descriptors, signals, what a fresh interpreter imports).
    """
    runner = CliRunner()

    def run(*args: str, input: str | bytes | None = None, timeout: float = 60, env: dict | None = None) -> Result:
        with _deadline(timeout, f"gs {' '.join(args)}"), runner.isolation(input=input, env=env) as (out, err, _):
            code = cli.run(list(args), prog_name="gs")
            sys.stdout.flush()
            sys.stderr.flush()
            out_bytes, err_bytes = out.getvalue(), err.getvalue()  # closed when isolation ends
        return Result(code, out_bytes.decode("utf-8", "replace"), err_bytes.decode("utf-8", "replace"), out_bytes)

    return run


@pytest.fixture
def gs_proc(gs_env: None):
    """Run ``gs`` in a subprocess against the fake API: ``gs_proc("ask", "work", "hi") -> Result``.

    For tests where the process is the point: stdin a real pipe (or ``/dev/null``), what a
    fresh interpreter imports, exit statuses as the shell sees them.
    """

    def run(*args: str, input: str | bytes | None = None, timeout: float = 60, env: dict | None = None) -> Result:
        full_env = dict(os.environ, **(env or {}))
        data = input.encode("utf-8") if isinstance(input, str) else input
        proc = subprocess.run([*GS, *args], input=data, capture_output=True, timeout=timeout,
                              env=full_env, stdin=None if data is not None else subprocess.DEVNULL)
        return Result(proc.returncode, proc.stdout.decode("utf-8", "replace"),
                      proc.stderr.decode("utf-8", "replace"), proc.stdout)

    return run


@pytest.fixture
def git(repo_path: Path):
    """Run the real ``git`` CLI in the session repo: ``git("log", "work") -> stdout``; fails on error."""
    assert shutil.which("git"), "the tests need the git CLI"

    def run(*args: str, check: bool = True) -> str:
        proc = subprocess.run(["git", "-C", str(repo_path), *args], capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return proc.stdout

    return run


@pytest.fixture
def machine(tmp_path: Path, gs):
    """Machines of their own: ``a = machine("a")`` runs ``gs --repo <tmp>/a.git ...`` in-process
    (``a("ask", "w", "hi") -> Result``), its repo path at ``a.repo``."""

    def make(name: str):
        repo = tmp_path / f"{name}.git"

        def run(*args: str, input: str | bytes | None = None) -> Result:
            return gs("--repo", str(repo), *args, input=input)

        run.repo = repo  # type: ignore[attr-defined]
        return run

    return make
