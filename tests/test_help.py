"""Every command's help reads like git's or gh's: a walk over ``gs ... --help``."""

from __future__ import annotations

import re

import pytest

from gitsessions import cli

#: A value's name in a usage line or an option's column: capitals (REV, PROMPT, NAME).
_VALUE = r"[A-Z][A-Z0-9_]*"
_PIECE = re.compile(rf"^(\[?{_VALUE}(\.\.\.)?\]?|\[{_VALUE}\] {_VALUE}(\.\.\.)?)$")
#: What typer's own help printed and ours must not: Python types, range notes, click's words.
_TYPER_NOISE = re.compile(r"<(bool|str|int|float|path|list\[|int range|float range)|\[x[<>]=|\[required\]"
                          r"|Show this message|\{\[|\[\[|\{[a-z_]+\}")


def _paths(command=None, path=()):
    """Every command and group of ``gs`` as the words that name it: ``("log",)``, ``("hooks", "list")``."""
    command = command or cli._command()
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield (*path, name)
        yield from _paths(sub, (*path, name))


PATHS = list(_paths())


def _sections(text: str) -> dict[str, list[str]]:
    """The help's lines under each ``Heading:`` line (the usage line and description under "")."""
    out: dict[str, list[str]] = {"": []}
    key = ""
    for line in text.splitlines():
        if re.fullmatch(r"[A-Z][A-Za-z ]*:", line):
            key = line[:-1]
            out[key] = []
        elif line.strip():
            out[key].append(line)
    return out


def test_the_walk_finds_every_command_and_hooks_subcommands():
    names = {" ".join(p) for p in PATHS}
    for command in (*(n for names in cli.COMMANDS.values() for n in names), "help"):
        assert command in names, command
    assert {"hooks install", "hooks list", "remote add", "remote list", "remote remove", "capture install",
            "capture remove", "capture status", "capture run"} <= names


@pytest.mark.parametrize("path", [(), *PATHS], ids=lambda p: " ".join(p) or "gs")
def test_help_reads_like_git(gs, path):
    r = gs(*path, "--help")
    assert r.code == 0 and not r.err, r.err
    assert not _TYPER_NOISE.search(r.out), _TYPER_NOISE.search(r.out)
    sections = _sections(r.out)
    usage = sections[""][0]
    assert not [line for line in sections[""] if re.search(r"\w-$", line)], "a word split at its hyphen"
    head = " ".join(("Usage: gs", *path, "[OPTIONS]"))
    assert usage.startswith(head), usage
    pieces = usage[len(head):].split()
    if pieces[:2] == ["COMMAND", "[ARGS]..."]:
        pieces = pieces[2:]
    joined = " ".join(pieces)
    assert all(_PIECE.match(p) for p in re.findall(r"\[[A-Z_]+\] [A-Z_]+(?:\.\.\.)?|\S+", joined)), usage
    for line in sections.get("Arguments", []):
        if not line.startswith("    "):  # a row, not its wrapped help
            assert re.match(rf"  (\[{_VALUE}\] )?{_VALUE}  ", line), line
    for line in sections["Options"]:
        row = re.match(r"  (-\w, |    )(--[a-z][a-z-]*)(\[=(\S+)\]| (\S+))?  ", line)
        if row and row.group(3):
            assert re.fullmatch(_VALUE, row.group(4) or row.group(5)), line
    examples = sections.get("Examples", [])
    assert examples, f"no Examples block in gs {' '.join(path)} --help"
    assert all(line.startswith("  gs ") for line in examples), examples
    assert any(line.startswith(" ".join(("  gs", *path))) for line in examples), examples


@pytest.mark.parametrize("path", [(), ("log",), ("hooks",), ("hooks", "install")], ids=" ".join)
def test_gs_help_shows_the_commands_help(gs, path):
    r = gs("help", *path)
    assert r.code == 0 and r.out == gs(*path, "--help").out


def test_gs_help_of_no_such_command_is_a_usage_error(gs):
    r = gs("help", "nope")
    assert r.code == 2 and "No such command 'nope'" in r.err


def test_the_commands_are_listed_by_what_they_are_for(gs):
    out = gs("--help").out
    sections = _sections(out)
    assert [line.split()[0] for line in sections["Talk to a model"] if line[2] != " "] == ["chat", "ask", "retry"]
    assert "  log     Show a session's commits newest first" in sections["Read sessions"]
    assert "Other commands" not in sections  # every command has its heading


def test_format_md_is_markdown(gs):
    assert gs("ask", "-S", "w", "hi").code == 0
    r = gs("export", "w", "-f", "md")
    assert r.code == 0, r.err
    assert r.out == gs("export", "w", "--format", "markdown").out


def test_a_bad_choice_lists_the_choices(gs):
    r = gs("export", "w", "-f", "pdf")
    assert r.code == 2
    assert "Value error" not in r.err and "╭" not in r.err
    assert "'pdf' is not one of: markdown (md), json, jsonl, html" in r.err, r.err
    r = gs("show", "w", "--format", "yaml")
    assert r.code == 2 and "'yaml' is not one of: text, json, jsonl" in r.err, r.err


def test_a_value_that_is_no_number_is_refused_in_plain_words(gs):
    r = gs("log", "-n", "x")
    assert r.code == 2 and "expected a whole number, not 'x'" in r.err and "parse string" not in r.err, r.err
    r = gs("sync", "--watch", "--interval", "soon")
    assert r.code == 2 and "expected a number, not 'soon'" in r.err, r.err


def test_a_missing_argument_is_named_as_the_help_names_it(gs):
    r = gs("remote", "add")
    assert r.code == 2 and "Missing argument 'NAME'" in r.err, r.err


def test_usage_errors_are_plain_lines(gs):
    r = gs("log", "--bogus")
    assert r.code == 2 and "╭" not in r.err
    assert r.err.splitlines()[0] == "Usage: gs log [OPTIONS] [REV]"
    assert "No such option: --bogus" in r.err
