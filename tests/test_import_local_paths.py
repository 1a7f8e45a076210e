"""The local paths Claude Code and Codex write into their own text stay out of an import unless kept.

The real fixtures (tests/data/claude_code/real2/, tests/data/codex/real/) were written in a
HOME scrubbed to ``/home/user``, the working directory ``/home/user/proj``: Claude Code's
``/compact`` summary names the transcript's file under that home, Codex's skills list its
skills' folder there, its environment context the working directory and workspace roots.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gitsessions.ids import imported_session_id
from gitsessions.transfer.readers.local_paths import LOCAL_PATH, LocalPaths

DATA = Path(__file__).parent / "data"
CLAUDE_FOLDER = DATA / "claude_code" / "real2" / "projects" / "-home-user-proj"
CODEX = DATA / "codex" / "real"
FILES = [*sorted(CLAUDE_FOLDER.rglob("*.jsonl")), *sorted(CODEX.rglob("rollout-*.jsonl"))]
COMPACT = "1639e4d5-c98c-4a50-923f-f32016dd554f"
#: Where the fixtures' tools ran: their HOME, and the transcripts' folder named after the working directory.
HOME, FOLDER = "/home/user", "-home-user-proj"


def _blobs(repo: Path) -> bytes:
    """Every object of the repo, as ``git cat-file --batch-all-objects --batch`` gives them."""
    return subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True).stdout


def test_no_local_path_of_the_tools_reaches_an_object_unless_kept(gs, git, repo_path, tmp_path):
    assert gs("import", *map(str, FILES)).code == 0
    git("fsck", "--strict")
    held = _blobs(repo_path)
    assert HOME.encode() not in held and FOLDER.encode() not in held
    assert LOCAL_PATH.encode() in held
    kept = tmp_path / "kept.git"
    assert gs("import", "--keep-paths", *map(str, FILES), env={"GS_REPO": str(kept)}).code == 0
    held = _blobs(kept)
    assert f"read the full transcript at: {HOME}/.claude/projects/{FOLDER}/{COMPACT}.jsonl".encode() in held
    assert f"`r0` = `{HOME}/.codex/skills/.system`".encode() in held
    assert f"<root>{HOME}/proj</root>".encode() in held and LOCAL_PATH.encode() not in held


def test_what_the_user_and_the_model_said_keeps_its_paths(gs, git, repo_path, tmp_path):
    """Only what the tool wrote itself is changed: a prompt's path, and the reply quoting it, stay."""
    said = f"Please read {HOME}/proj/notes.txt and {HOME}/other/plan.md"
    lines = [json.loads(line) for line in (CLAUDE_FOLDER / f"{COMPACT}.jsonl").read_text().splitlines()]
    for line in lines:
        if line.get("message", {}).get("content") == "Please run echo hi":
            line["message"]["content"] = said
    copy = tmp_path / f"{COMPACT}.jsonl"
    copy.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert gs("import", str(copy)).code == 0
    stored = git("show", f"{imported_session_id('claude-code', COMPACT, said)}:session.jsonl")
    assert json.dumps(said)[1:-1] in stored
    assert f"read the full transcript at: {LOCAL_PATH}" in stored and f"{FOLDER}/{COMPACT}" not in stored


@pytest.mark.parametrize(("text", "expected"), [
    (f"- `r0` = `{HOME}/.codex/skills/.system`", f"- `r0` = `{LOCAL_PATH}`"),
    ("The writable roots are `/tmp`, `/home/user/proj`.", f"The writable roots are `/tmp`, `{LOCAL_PATH}`."),
    ("instructions for /home/user/proj/src\n", f"instructions for {LOCAL_PATH}/src\n"),
    ("at: /home/user/.claude/projects/-home-user-proj/a.jsonl\nGo on.", f"at: {LOCAL_PATH}\nGo on."),
    ("files in /home/username/x and /opt/acme/skills/a.md, done", f"files in {LOCAL_PATH} and {LOCAL_PATH}, done"),
    ("<cwd>/</cwd> and <path>/home/user/proj/.git</path>",
     f"<cwd>{LOCAL_PATH}</cwd> and <path>{LOCAL_PATH}/.git</path>"),
    ("Run /compact, see https://example.com/a/b, and/or 1/2/3",
     "Run /compact, see https://example.com/a/b, and/or 1/2/3"),
    (r"C:\Users\bob\proj\x.txt here", f"{LOCAL_PATH} here"),
])
def test_the_rule_on_a_tools_own_text(text, expected):
    paths = LocalPaths()
    paths.name("/home/user/proj")
    assert paths.out_of(text) == expected
    kept = LocalPaths(keep=True)
    kept.name("/home/user/proj")
    assert kept.out_of(text) == text


def test_a_home_whose_name_holds_a_space_is_left_out_whole():
    paths = LocalPaths()
    paths.name("/Users/Bob Smith/proj")
    text = "at: /Users/Bob Smith/.claude/projects/-Users-Bob-Smith-proj/a.jsonl\nand /Users/Bob Smith/proj/src"
    assert paths.out_of(text) == f"at: {LOCAL_PATH}\nand {LOCAL_PATH}/src"
