"""The opt-in tools in a temporary working directory: each tool's success and failure, the
path rule, .gitignore, the diff and backup of a write, a command's timeout and output cap,
and which calls run unasked (``Toolset.decide``). Real files, real ``/bin/sh``; no mocks."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from gitsessions.chat.tools import TOOL_SCHEMAS, shell
from gitsessions.chat.tools import ignore as gitignore
from gitsessions.chat.tools.files import Workspace
from gitsessions.chat.tools.toolset import DENIED, GROUPS, SCHEMAS, Decision, Toolset, expand
from gitsessions.log.calls import ToolCall, ToolResult


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "src").mkdir(parents=True)
    (root / "notes.md").write_text("one\ntwo\nthree\n")
    (root / "src" / "app.py").write_text("def main():\n    return 42\n")
    return root


def tools(work: Path, *groups: str, **kw) -> Toolset:
    return Toolset(expand(groups or ("all",)), Workspace(work, backups=work.parent / "backups"), **kw)


def run(ts: Toolset, name: str, **args) -> tuple[str, bool]:
    result = ts.run(ts.prepare(ToolCall("c1", name, json.dumps(args))))
    assert (result.call_id, result.name, result.error_code) == ("c1", name, None)  # it answers the call
    return result.content, result.is_error


def test_a_plain_chat_offers_no_tools_and_every_tool_is_opt_in(work):
    assert Toolset().schemas == []
    assert run(Toolset(), "get_current_time") == ("error: unknown tool 'get_current_time'", True)
    assert tools(work, "time").schemas == TOOL_SCHEMAS
    assert [s["function"]["name"] for s in tools(work, "read").schemas] == ["read_file", "list_files", "search_files"]
    assert expand(["write", "shell"]) == ("write_file", "edit_file", "run_command")
    assert expand(["all"]) == tuple(SCHEMAS) == sum(GROUPS.values(), ())
    with pytest.raises(ValueError, match="no tool or group 'net'; the groups are read, write, shell"):
        expand(["read", "net"])
    # a tool not enabled is unknown to the model, as any other name
    assert run(tools(work, "read"), "write_file", path="x", content="y") == ("error: unknown tool 'write_file'", True)
    assert not (work / "x").exists()
    assert run(tools(work, "time"), "get_current_time", timezone="Nowhere/Else") == (
        "error: unknown time zone 'Nowhere/Else'", True)


def test_read_file_reads_lines_and_says_what_is_wrong(work):
    ts = tools(work, "read")
    assert run(ts, "read_file", path="notes.md") == ("one\ntwo\nthree\n", False)
    assert run(ts, "read_file", path="notes.md", offset=2, limit=1) == ("two\n", False)
    assert run(ts, "read_file", path="gone.md") == ("error: no file gone.md there", True)
    assert run(ts, "read_file", path="src")[0].startswith("error: src is a folder")
    (work / "blob.bin").write_bytes(b"\x89PNG\0\0\0")
    assert run(ts, "read_file", path="blob.bin") == ("error: blob.bin is a binary file; only text files can be read",
                                                     True)
    assert run(ts, "read_file")[0] == "error: bad arguments for read_file: 'path'"
    assert run(ts, "read_file", path="notes.md", mode="r")[0].startswith("error: bad arguments for read_file: no "
                                                                         "argument 'mode'")
    assert ts.run(ts.prepare(ToolCall("c1", "read_file", "[1]"))).content == (
        "error: bad arguments for read_file: arguments must be a JSON object")


@pytest.mark.parametrize("path", ["../secret.txt", "/etc/passwd", "src/../../secret.txt", "link/secret.txt"])
def test_a_path_outside_the_working_directory_is_refused(work, path):
    (work.parent / "secret.txt").write_text("not yours")
    (work / "link").symlink_to(work.parent)  # a link out is followed to where it leads, and refused
    ts = tools(work)
    content, is_error = run(ts, "read_file", path=path)
    assert is_error and "is outside the working directory" in content and "not yours" not in content
    content, is_error = run(ts, "write_file", path=path, content="mine now")
    assert is_error and "outside the working directory" in content
    assert (work.parent / "secret.txt").read_text() == "not yours"


def test_a_folder_the_user_allowed_may_be_read(work):
    other = work.parent / "shared"
    other.mkdir()
    (other / "a.txt").write_text("shared text\n")
    ts = Toolset(expand(["read"]), Workspace(work, allowed=(other,)))
    assert run(ts, "read_file", path=str(other / "a.txt")) == ("shared text\n", False)
    assert run(ts, "list_files", path=str(other)) == ("a.txt", False)


def test_list_and_search_honour_gitignore(work):
    (work / ".gitignore").write_text("build/\n*.log\n!keep.log\n/top.txt\n")
    (work / "build").mkdir()
    (work / "build" / "out.py").write_text("return 42\n")
    (work / "debug.log").write_text("return 42\n")
    (work / "keep.log").write_text("return 42\n")
    (work / "top.txt").write_text("return 42\n")
    (work / "src" / "top.txt").write_text("return 42\n")  # /top.txt is anchored to the root
    (work / "src" / ".gitignore").write_text("gen_*.py\n")
    (work / "src" / "gen_x.py").write_text("return 42\n")
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text("return 42\n")
    ts = tools(work, "read")
    assert run(ts, "list_files") == (".gitignore\nkeep.log\nnotes.md\nsrc/", False)
    assert run(ts, "list_files", recursive=True)[0].splitlines() == [
        ".gitignore", "keep.log", "notes.md", "src/", "src/.gitignore", "src/app.py", "src/top.txt"]
    assert run(ts, "search_files", pattern=r"return \d+") == (
        "keep.log:1: return 42\nsrc/app.py:2:     return 42\nsrc/top.txt:1: return 42", False)
    assert run(ts, "search_files", pattern="RETURN", path="src/app.py", ignore_case=True) == (
        "src/app.py:2:     return 42", False)
    assert run(ts, "search_files", pattern="nowhere") == ("no match", False)
    assert run(ts, "search_files", pattern="(")[0].startswith("error: not a valid regular expression")
    assert run(ts, "list_files", path="notes.md") == ("error: notes.md is not a folder", True)


def test_gitignore_patterns_as_git_reads_them(work):
    (work / ".gitignore").write_text("# comment\n*.pyc\ndocs/**/*.tmp\n**/cache\na?c\n\\#hash\n")
    paths = ["x/y.pyc", "docs/a/b/c.tmp", "docs/c.tmp", "other/c.tmp", "deep/down/cache/f", "abc", "abbc", "#hash"]
    for rel in paths:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text("x\n")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    listed = {p.relative_to(work).as_posix() for p, is_dir in gitignore.walk(work, work) if not is_dir}
    # git's own verdict is the reference: what it would add is what the walk lists
    tracked = subprocess.run(["git", "-C", str(work), "ls-files", "--others", "--exclude-standard"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert listed == set(tracked)
    assert "abbc" in listed and "other/c.tmp" in listed and "x/y.pyc" not in listed and "#hash" not in listed


def test_a_write_asks_shows_its_diff_and_a_refused_one_leaves_the_file(work):
    ts = tools(work)
    call = ts.prepare(ToolCall("c1", "write_file", json.dumps({"path": "notes.md", "content": "one\n2\nthree\n"})))
    assert call.asks and call.error is None and call.summary == "write_file notes.md"
    assert call.preview.splitlines()[:2] == ["--- a/notes.md", "+++ b/notes.md"]
    assert "-two" in call.preview.splitlines() and "+2" in call.preview.splitlines()
    asked = []
    decision = ts.decide(call, lambda c: asked.append(c.summary) or "deny")
    assert decision == Decision("deny", "user") and asked == ["write_file notes.md"]
    assert "denied" in decision.refusal("write_file") and DENIED == "denied"
    assert (work / "notes.md").read_text() == "one\ntwo\nthree\n"
    assert not (work.parent / "backups").exists()


def test_an_approved_edit_writes_and_keeps_a_backup(work):
    ts = tools(work)
    call = ts.prepare(ToolCall("c1", "edit_file", json.dumps({"path": "src/app.py", "old_string": "return 42",
                                                              "new_string": "return 43"})))
    assert ts.decide(call, lambda c: "once") == Decision("once", "user")
    result = ts.run(call)
    content, is_error = result.content, result.is_error
    assert not is_error and content.startswith("wrote src/app.py (2 lines); the old text is kept in ")
    assert (work / "src" / "app.py").read_text() == "def main():\n    return 43\n"
    [backup] = (work.parent / "backups").rglob("app.py")
    assert backup.read_text() == "def main():\n    return 42\n" and str(backup) in content
    # a backup beside the file when no folder is given, numbered as GNU cp numbers them
    plain = Toolset(expand(["write"]), Workspace(work))
    assert run(plain, "write_file", path="notes.md", content="new\n")[0].endswith("notes.md.~1~")
    assert (work / "notes.md.~1~").read_text() == "one\ntwo\nthree\n"
    assert run(plain, "write_file", path="fresh/new.txt", content="hello") == ("created fresh/new.txt (1 lines)",
                                                                               False)
    assert (work / "fresh" / "new.txt").read_text() == "hello"


def test_an_edit_must_match_exactly_once(work):
    ts = tools(work, "write")
    (work / "twice.txt").write_text("x = 1\nx = 1\n")
    assert run(ts, "edit_file", path="twice.txt", old_string="x = 1", new_string="x = 2")[0].startswith(
        "error: old_string is in twice.txt 2 times")
    assert run(ts, "edit_file", path="twice.txt", old_string="y", new_string="z")[0].startswith(
        "error: old_string is not in twice.txt")
    assert run(ts, "edit_file", path="twice.txt", old_string="", new_string="z")[0].startswith(
        "error: old_string is empty")
    assert run(ts, "edit_file", path="twice.txt", old_string="x = 1", new_string="x = 2", replace_all=True)[1] is False
    assert (work / "twice.txt").read_text() == "x = 2\nx = 2\n"
    (work / "latin.txt").write_bytes("café = 1\n".encode("latin-1"))
    assert run(ts, "edit_file", path="latin.txt", old_string="1", new_string="2") == (
        "error: latin.txt is not UTF-8 text; only UTF-8 files are written over", True)
    assert (work / "latin.txt").read_bytes() == "café = 1\n".encode("latin-1")


def test_a_file_changed_after_its_diff_is_not_written(work):
    ts = tools(work, "write")
    call = ts.prepare(ToolCall("c1", "edit_file", json.dumps({"path": "notes.md", "old_string": "two",
                                                              "new_string": "2"})))
    (work / "notes.md").write_text("one\ntwo\nthree, added meanwhile\n")
    assert ts.run(call) == ToolResult(
        "c1", "edit_file", "error: nothing written: notes.md changed since the diff was made; read it again", True)
    assert (work / "notes.md").read_text() == "one\ntwo\nthree, added meanwhile\n"


def test_a_command_runs_in_the_working_directory_with_its_exit_status(work):
    ts = tools(work, "shell")
    assert run(ts, "run_command", command="pwd; echo oops >&2; exit 3") == (f"exit status 3\n{work}\noops\n", False)
    content, is_error = run(ts, "run_command", command="echo started; sleep 30", timeout=0.5)
    # which processes there were when the time came depends on the scheduler: sh, and sleep once forked
    assert is_error and re.fullmatch(r"error: timed out after 0\.5 s and was stopped \(\d process(es)? killed: sh"
                                     r"[a-z, ]*\); it printed:\nstarted\n", content)
    assert run(ts, "run_command", command="true", timeout=0)[0] == (
        "error: timeout must be above 0 and at most 600 seconds")
    assert run(ts, "run_command", command="  ")[0] == "error: a command is needed"


def test_a_command_gets_the_environment_it_is_given_and_none_of_gs_s(work, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-model-0123456789")
    given = Toolset(expand(["shell"]), Workspace(work), env={"GIVEN": "yes"})
    assert run(given, "run_command", command='echo "[$OPENAI_API_KEY][$GIVEN]"; ls /')[0].startswith(
        "exit status 0\n[][yes]\n")  # sh's own default PATH finds ls
    unset = tools(work, "shell")  # no env given: none
    assert run(unset, "run_command", command='echo "[$OPENAI_API_KEY]"') == ("exit status 0\n[]\n", False)


def running(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped has stopped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_command_that_starts_a_child_leaves_nothing_running_after_its_timeout(work):
    ts = tools(work, "shell")
    run(ts, "run_command", command="sleep 60 & echo $! > child.pid; wait", timeout=0.5)
    pid = int((work / "child.pid").read_text())
    for _ in range(100):  # SIGKILL is delivered at once; the kernel may take a moment to stop it
        if not running(pid):
            break
        time.sleep(0.05)
    assert not running(pid)


def test_a_long_output_is_cut_in_the_middle(work):
    content, _ = run(tools(work, "shell"), "run_command", command=f"yes abc | head -c {shell.OUTPUT_CHARS * 2}")
    assert len(content) < shell.OUTPUT_CHARS + 100 and "bytes (4,000 lines) of output left out ..." in content
    assert content.startswith("exit status 0\nabc\n") and content.endswith("abc\n")


def test_approvals_beforehand_and_for_the_session(work):
    call = tools(work).prepare(ToolCall("c1", "run_command", json.dumps({"command": "ls"})))
    assert Toolset(yes=True).decide(call, None) == Decision("once", "--yes")
    assert Toolset(allow=expand(["shell"])).decide(call, None) == Decision("once", "config")
    assert Toolset().decide(call, None) == Decision("deny", "nobody")
    assert "there was no one to ask" in Decision("deny", "nobody").refusal("run_command")
    ts = tools(work)
    answers = iter(["session"])
    assert ts.decide(call, lambda c: next(answers)) == Decision("session", "user")
    assert ts.decide(call, lambda c: "deny") == Decision("once", "session")  # not asked again
    write = ts.prepare(ToolCall("c2", "write_file", json.dumps({"path": "a", "content": "b"})))
    assert ts.decide(write, lambda c: "nonsense") == Decision("deny", "user")  # only run_command was approved
    ts.forget()
    assert ts.decide(call, lambda c: "deny") == Decision("deny", "user")
    reads = ts.prepare(ToolCall("c3", "read_file", json.dumps({"path": "notes.md"})))
    assert not reads.asks  # reads inside the working directory run


def test_the_config_names_tools_as_a_list_or_one_string_and_paths_beside_it(tmp_path):
    from gitsessions.config import load_config
    from gitsessions.errors import ConfigError

    path = tmp_path / "config.yaml"
    path.write_text("tools: read, shell\npermissions: {allow: [write_file], paths: [notes, /srv/shared]}\n")
    config = load_config({}, path)
    assert config.tools == ("read", "shell") and config.allow_tools == ("write_file",)
    assert config.tool_paths == (tmp_path / "notes", Path("/srv/shared"))  # relative to the config file
    path.write_text("tools: {read: true}\n")
    with pytest.raises(ConfigError, match="tools must be a list of names, such as"):
        load_config({}, path)
    path.write_text("permissions: {allow: [write], ask: [shell]}\n")
    with pytest.raises(ConfigError, match="permissions must be a mapping like"):
        load_config({}, path)
