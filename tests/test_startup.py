"""Start-up: ``gs NAME`` builds only NAME's command module; the chat's model client comes in the background."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pexpect
import pytest
import typer.main
from conftest import GS
from fakeapi import text
from test_pty import PROMPT, TIMEOUT, chat_env

from gitsessions import cli

__all__ = ["chat_env"]  # a fixture shared with test_pty

#: Runs ``gs`` (argv after the script) in a fresh interpreter, then names the modules it imported.
_IMPORTED = (
    "import sys\n"
    "sys.argv = ['gs'] + sys.argv[1:]\n"
    "from gitsessions.cli import main\n"
    "try:\n    main()\nexcept SystemExit:\n    pass\n"
    "print('IMPORTED', sorted(m for m in sys.modules if m.startswith(('gitsessions.cli.', 'prompt_toolkit', "
    "'openai'))), file=sys.stderr)\n"
)


def _imported(*args: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", _IMPORTED, *args], capture_output=True, text=True)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("IMPORTED "))
    return eval(line.removeprefix("IMPORTED "))  # a list literal printed by the child


def test_the_command_index_names_every_command_of_its_module():
    for module, names in cli.COMMANDS.items():
        sub = typer.main.get_command(cli._new_app((module,)))
        assert sorted(sub.commands) == sorted(names), module
    whole = typer.main.get_command(cli.app)
    assert sorted(whole.commands) == sorted(["help", *(n for names in cli.COMMANDS.values() for n in names)])


def test_a_command_imports_only_its_own_module(gs):
    gs("ask", "-S", "w", "hi")
    modules = set(_imported("ask", "-S", "w", "again"))
    assert "gitsessions.cli.chat" in modules
    # (chat.py's ask starts the background gc and push of admin.py and remote.py)
    others = {f"gitsessions.cli.{m}" for m in ("history", "lifecycle", "share", "transfer", "hooks")}
    assert not modules & others, modules & others
    assert not {m for m in modules if m.startswith("prompt_toolkit")}
    assert "gitsessions.cli.history" in _imported("--debug", "log", "w")
    assert "gitsessions.cli.history" in _imported("--repo", "no-command-name", "log", "w")


def test_global_options_and_help_before_the_command_read_as_before(gs, repo_path):
    gs("ask", "-S", "w", "hi")
    r = gs("--repo", str(repo_path), "log", "w", "--oneline")
    assert r.code == 0 and "turn 1: hi" in r.out, r.err
    r = gs("--repo", str(repo_path), "--help")
    assert r.code == 0
    for name in ("chat", "ask", "list", "log", "sync", "gc", "import", "hooks"):
        assert f" {name} " in r.out, name
    r = gs("no-such-command")
    assert r.code == 2 and "No such command 'no-such-command'" in r.err


def test_typer_still_converts_and_refuses_what_the_shortcut_passes_on(gs, fake_api):
    r = gs("ask", "--wait=-1", "-S", "w", "hi")
    assert r.code == 2 and "Input should be greater than or equal to 0" in r.err, r.err
    r = gs("ask", "--wait=1.5", "-S", "w", "hi")
    assert r.code == 0, r.err
    assert "pydantic" not in _imported_all("list")


def _imported_all(*args: str) -> list[str]:
    code = _IMPORTED.replace("m.startswith(('gitsessions.cli.', 'prompt_toolkit', 'openai'))", "'.' not in m")
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("IMPORTED "))
    return eval(line.removeprefix("IMPORTED "))


#: Runs ``gs chat`` (argv after the script) and names gs's modules imported when its first prompt is asked for.
_AT_PROMPT = (
    "import sys\n"
    "from prompt_toolkit import PromptSession\n"
    "ask = PromptSession.prompt\n"
    "def prompt(self, *args, **kwargs):\n"
    "    print('IMPORTED', sorted(m for m in sys.modules if m.startswith(('gitsessions', 'dulwich', 'rich'))), "
    "flush=True)\n"
    "    PromptSession.prompt = ask\n"
    "    return ask(self, *args, **kwargs)\n"
    "PromptSession.prompt = prompt\n"
    "sys.argv = ['gs'] + sys.argv[1:]\n"
    "from gitsessions.cli import main\n"
    "main()\n"
)


def test_the_chat_opens_its_store_and_session_and_imports_its_turns_and_model_client_after_its_prompt(chat_env, gs):
    gs("ask", "-S", "demo", "hi")  # a session with a turn: opening it reads a log
    child = pexpect.spawn(sys.executable, ["-c", _AT_PROMPT, "chat", "demo"], env=chat_env, dimensions=(24, 100),
                          encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    child.expect(r"IMPORTED (\[.*?\])")
    modules = set(eval(child.match.group(1)))  # a list literal printed by the child
    child.expect(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert {"gitsessions.cli.repl.prompt", "gitsessions.store.privacy"} <= modules  # the prompt; the repo checked
    later = {"gitsessions.cli.repl.repl", "gitsessions.writer.session", "gitsessions.store.git",
             "gitsessions.store.base", "gitsessions.provider.client", "gitsessions.chat.loop", "gitsessions.log.view",
             "gitsessions.history.reading", "gitsessions.writer.redo", "gitsessions.history.tree",
             "gitsessions.cli.display.picker", "gitsessions.cli.history",
             "gitsessions.store.memory", "gitsessions.store.remote.reports"}  # tests' backend; what sync reports
    assert not modules & later, modules & later
    assert not {m for m in modules if m.startswith(("dulwich", "rich"))}  # the recap is drawn behind the prompt


def test_the_store_package_still_gives_its_in_memory_backend_and_sync_still_its_reports():
    import gitsessions.store
    from gitsessions.store import MemoryStore
    from gitsessions.store.memory import MemoryStore as defined
    from gitsessions.store.remote.reports import PullReport, PushReport, SyncReport

    assert MemoryStore is defined is gitsessions.store.MemoryStore
    assert "MemoryStore" in gitsessions.store.__all__
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchStore'"):
        gitsessions.store.NoSuchStore  # noqa: B018 (the module's __getattr__ refuses other names)
    assert SyncReport().pull == PullReport() and SyncReport().push == PushReport()


# --------------------------------------------------------------------------- the chat's background client


def test_a_failed_background_build_is_raised_at_the_first_request_then_tried_anew():
    from gitsessions.provider.connect import BackgroundProvider

    builds, ended = [], []

    def build():
        builds.append(1)
        if len(builds) == 1:
            raise ImportError("the SDK is broken")
        return "the provider"

    provider = BackgroundProvider("m", build)
    assert provider.model == "m"
    provider.start(then=lambda: ended.append(1))
    try:
        provider.provider()
    except ImportError as exc:
        assert str(exc) == "the SDK is broken"
    else:
        raise AssertionError("the build's ImportError was swallowed")
    assert ended == [1]
    assert provider.provider() == "the provider" and len(builds) == 2


@pytest.fixture
def sdk_env(chat_env, tmp_path):
    """``chat_env`` with an ``openai`` package first on the path that does what the test writes."""

    def make(body: str) -> dict[str, str]:
        (tmp_path / "sdk" / "openai").mkdir(parents=True)
        (tmp_path / "sdk" / "openai" / "__init__.py").write_text(body)
        return dict(chat_env, PYTHONPATH=os.pathsep.join([str(tmp_path / "sdk"), os.environ.get("PYTHONPATH", "")]))

    return make


def _chat(env: dict[str, str]) -> pexpect.spawn:
    child = pexpect.spawn(GS[0], [*GS[1:], "chat", "demo"], env=env, dimensions=(24, 100), encoding="utf-8",
                          codec_errors="replace", timeout=TIMEOUT)
    child.expect(PROMPT)  # drawn before the SDK is imported
    return child


def test_a_failing_sdk_import_in_the_background_is_the_one_line_error(sdk_env):
    child = _chat(sdk_env('raise ImportError("the openai package is broken")\n'))
    child.sendline("hi")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 70
    assert ("gs: unexpected error: ImportError: the openai package is broken (run with --debug for details)"
            in child.before), child.before
    assert "Traceback" not in child.before


def test_ctrl_c_while_the_first_request_waits_for_the_sdk_cancels_that_reply(sdk_env, gs):
    child = _chat(sdk_env("import time\ntime.sleep(60)\n"))
    child.sendline("hi")
    time.sleep(1)  # the request is waiting for the import (whenever Ctrl+C comes, it cancels this reply)
    child.sendintr()
    child.expect_exact("(reply cancelled)")
    child.expect(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    events = gs("show", "demo", "--format", "json").json()["events"]
    assert [e["data"]["reason"] for e in events if e["type"] == "turn/end"] == ["aborted"]


# --------------------------------------------------------------------------- the session opened behind the prompt

#: A ``sitecustomize`` that makes importing dulwich's repo module (opening the store) take 2 s,
#: and writes ``opened`` beside itself when it is done.
_SLOW_STORE = (
    "import importlib.abc, pathlib, sys, time\n"
    "class Slow(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path, target=None):\n"
    "        if name == 'dulwich.repo':\n"
    "            sys.meta_path.remove(self)\n"
    "            time.sleep(2)\n"
    "            spec = importlib.util.find_spec(name)\n"
    "            loader = spec.loader\n"
    "            run = loader.exec_module\n"
    "            def exec_module(module):\n"
    "                run(module)\n"
    "                (pathlib.Path(__file__).parent / 'opened').write_text('')\n"
    "            loader.exec_module = exec_module\n"
    "            return spec\n"
    "import importlib.util\n"
    "sys.meta_path.insert(0, Slow())\n"
)


@pytest.fixture
def slow_store_env(chat_env, tmp_path):
    """``chat_env`` where opening the store takes 2 s more; ``tmp_path/slow/opened`` appears once it is open."""
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "sitecustomize.py").write_text(_SLOW_STORE)
    path = os.pathsep.join([str(tmp_path / "slow"), os.environ.get("PYTHONPATH", "")])
    return dict(chat_env, PYTHONPATH=path), tmp_path / "slow" / "opened"


def test_a_line_typed_before_the_session_is_open_is_its_first_turn(slow_store_env, fake_api, gs):
    env, opened = slow_store_env
    fake_api.script(text("hello back"))
    child = _chat(env)  # the prompt is drawn; the store opens behind it
    child.sendline("hi there")
    sent_before_open = not opened.exists()
    child.expect_exact("hello back")
    child.expect(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert sent_before_open  # the line was typed while the store was still being opened
    assert child.exitstatus == 0, child.before
    assert opened.exists()
    assert fake_api.requests[0]["messages"][-1] == {"role": "user", "content": "hi there"}
    assert gs("log", "demo", "--oneline").out.count("turn 1: hi there") == 1


def test_a_locked_session_met_behind_the_prompt_is_the_one_line_error(chat_env, gs, repo_path):
    from gitsessions.store import GitStore

    gs("ask", "-S", "demo", "hi")
    with GitStore(repo_path) as store:
        lock = store.lock("demo").acquire(None)  # another writer: this test's process
        try:
            child = _chat(chat_env)
            child.expect(pexpect.EOF)
            child.close()
        finally:
            lock.release()
    assert child.exitstatus == 1, child.before
    assert f"gs: session 'demo' is being written by pid {os.getpid()}" in child.before, child.before
    assert "Traceback" not in child.before


def test_a_bad_session_name_is_the_one_line_error_as_before(chat_env):
    child = pexpect.spawn(GS[0], [*GS[1:], "chat", "no good"], env=chat_env, dimensions=(24, 100),
                          encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1, child.before
    assert "gs: " in child.before and "no good" in child.before and "Traceback" not in child.before
