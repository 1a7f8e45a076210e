"""Start-up: ``gs NAME`` builds only NAME's command module; the chat's model client comes in the background."""

from __future__ import annotations

import subprocess
import sys

import typer.main

from gitsessions import cli

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
    assert sorted(whole.commands) == sorted(n for names in cli.COMMANDS.values() for n in names)


def test_a_command_imports_only_its_own_module(gs):
    gs("ask", "w", "hi")
    modules = {m for m in _imported("ask", "w", "again") if m.startswith("gitsessions.cli.")}
    # chat.py's ask starts the background gc and push of admin.py and remote.py
    assert modules == {"gitsessions.cli.chat", "gitsessions.cli.common", "gitsessions.cli.admin",
                       "gitsessions.cli.remote"}, modules
    assert "gitsessions.cli.history" in _imported("--debug", "log", "w")
    assert "gitsessions.cli.history" in _imported("--repo", "no-command-name", "log", "w")


def test_global_options_and_help_before_the_command_read_as_before(gs, repo_path):
    gs("ask", "w", "hi")
    r = gs("--repo", str(repo_path), "log", "w", "--oneline")
    assert r.code == 0 and "turn 1: hi" in r.out, r.err
    r = gs("--repo", str(repo_path), "--help")
    assert r.code == 0
    for name in ("chat", "ask", "list", "log", "sync", "gc", "import", "hooks"):
        assert f" {name} " in r.out, name
    r = gs("no-such-command")
    assert r.code == 2 and "No such command 'no-such-command'" in r.err
