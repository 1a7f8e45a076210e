"""Importing many conversations: one pack and one ref move per line, each session found once.

An import writes a session's turns as one pack (one fsync, not one per object) and moves
its branch once, after the pack is written; the sessions already holding a conversation
are found through one index per import (by the hash in their name, or by the
``Imported-From`` trailer of their tip when they were renamed since). Checked with the
real git CLI (``git fsck --strict``) on ChatGPT's export, whose reader is the one in use.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pexpect
from conftest import GS

from gitsessions.ids import imported_session_id
from gitsessions.store import GitStore
from gitsessions.store.batch import MERGE_PACKS

FIXTURE = Path(__file__).parent / "data" / "chatgpt" / "conversations.json"
YAML_ID = "6770a1b2-4c1d-8000-9e2f-0a1b2c3d4e5f"
MAIN = imported_session_id("chatgpt", YAML_ID, "Parse YAML in Python")
T = 1700000000


def _fixture() -> list:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _export(tmp_path: Path, convs: list) -> Path:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(convs), encoding="utf-8")
    return path


def _add(conv: dict, node_id: str, parent: str, role: str, text: str, t: float) -> None:
    conv["mapping"][parent]["children"].append(node_id)
    conv["mapping"][node_id] = {"id": node_id, "parent": parent, "children": [], "message": {
        "id": node_id, "author": {"role": role, "name": None, "metadata": {}}, "create_time": t,
        "content": {"content_type": "text", "parts": [text]}, "recipient": "all", "metadata": {}}}
    conv["current_node"] = node_id


def test_a_line_of_turns_is_one_pack_and_one_ref_move(gs, git, repo_path):
    r = gs("import", str(FIXTURE))
    assert r.code == 0, r.err
    git("fsck", "--strict")
    loose = [p for p in (repo_path / "objects").iterdir() if len(p.name) == 2]
    assert sum(1 for folder in loose for _ in folder.iterdir()) == 2  # the two forks' own commits (O(1) each)
    packs = sorted(p.name for p in (repo_path / "objects" / "pack").iterdir() if p.suffix == ".pack")
    assert len(packs) == 4  # a pack per line: the session, its two forks' turns, the other conversation
    assert len(git("log", "--format=%H", MAIN).split()) == 4  # a commit per turn, and the header's
    assert len(git("reflog", "show", "--format=%H", MAIN).split()) == 1  # the branch moved once
    assert git("rev-parse", f"{MAIN}@{{0}}").strip() == git("rev-parse", MAIN).strip()
    assert git("count-objects", "-v").count("size-pack: 0") == 0  # blobs as deltas: the packs hold them
    for pack in packs:  # dulwich's writer and git's reader agree on every object of the pack
        git("verify-pack", str(repo_path / "objects" / "pack" / pack.replace(".pack", ".idx")))


def test_a_refused_commit_leaves_nothing_of_its_line_referenced(gs, git, repo_path, tmp_path):
    hook = repo_path / "hooks" / "commit-msg"
    assert gs("import", str(_export(tmp_path, _fixture()[1:]))).code == 0  # the repo exists now
    before = git("for-each-ref")
    hook.write_text("#!/bin/sh\ngrep -q 'turn 2' \"$1\" && exit 1\nexit 0\n")
    hook.chmod(0o755)
    r = gs("import", str(FIXTURE))
    assert r.code == 1
    assert git("for-each-ref") == before  # the first turn was not referenced without the second
    hook.unlink()
    assert gs("import", str(FIXTURE)).code == 0  # and the next import writes it all
    git("fsck", "--strict")


def test_the_source_id_is_said_redacted_and_the_session_id_is_its_hash(gs, git, tmp_path):
    secret = "sk-" + "proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    convs = _fixture()[1:]
    convs[0]["id"] = convs[0]["conversation_id"] = f"conv-{secret}"
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0, r.err
    redacted = "conv-[REDACTED:api-key]"
    assert secret not in r.err and secret not in r.out and redacted in r.err
    assert r.out.split() == [imported_session_id("chatgpt", redacted, convs[0]["title"])]
    assert secret not in git("log", "--all", "--format=%B")


def test_a_session_renamed_since_the_last_import_is_found_again(gs, git, tmp_path):
    convs = _fixture()
    assert gs("import", str(_export(tmp_path, convs))).code == 0
    assert gs("rename", MAIN, "yaml-notes").code == 0
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and r.out == "", r.err  # not imported again under its old name
    assert "nothing new" in r.err
    _add(convs[0], "n-u4", "n-a3b", "user", "Thanks! And JSON?", T + 400)
    _add(convs[0], "n-a4", "n-u4", "assistant", "json.loads and json.dumps.", T + 410)
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0, r.err
    assert r.out.split() == ["yaml-notes"]  # the new turn is appended to it
    assert git("log", "-1", "--format=%at %s", "yaml-notes").strip() == f"{T + 400} turn 4: Thanks! And JSON?"
    assert MAIN not in git("for-each-ref", "--format=%(refname:short)").split()
    git("fsck", "--strict")


def test_the_pack_is_as_private_as_the_repo(gs, repo_path):
    assert gs("import", str(FIXTURE)).code == 0
    packs = list((repo_path / "objects" / "pack").iterdir())
    assert packs
    for path in packs:
        assert os.stat(path).st_mode & 0o077 == 0, path


def test_gs_log_dates_a_commit_when_it_was_said(gs, git, repo_path):
    """The author date (an imported turn's original time), as git log's Date, not when it was committed."""
    assert gs("import", str(FIXTURE)).code == 0
    tip = git("rev-parse", MAIN).strip()
    env = {**os.environ, "GIT_AUTHOR_DATE": "@1600000000 +0200", "GIT_COMMITTER_DATE": "@1800000000 +0000",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "c", "GIT_COMMITTER_EMAIL": "c@x"}
    msg = git("log", "-1", "--format=%B", MAIN)
    made = subprocess.run(["git", "-C", str(repo_path), "commit-tree", f"{tip}^{{tree}}", "-p", tip, "-m", msg],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()
    git("update-ref", f"refs/heads/{MAIN}", made, tip)
    r = gs("log", MAIN, "-n", "1")
    assert r.code == 0, r.err
    assert "Date:   2020-09-13T14:26:40+02:00" in r.out
    row = json.loads(gs("log", MAIN, "-n", "1", "--json").out)[0]
    assert row["time"] == "2020-09-13T14:26:40+02:00" and row["committed"] == "2027-01-15T08:00:00+00:00"
    said = json.loads(gs("log", MAIN, "--json").out)[1]  # an imported turn: said and committed at its time
    assert said["time"] == said["committed"] == "2023-11-14T22:18:20+00:00"


def test_a_progress_bar_on_a_terminal_only_and_one_summary(gs, gs_env, tmp_path):
    files = []
    for i, conv in enumerate(_fixture()):
        folder = tmp_path / f"export{i}"
        folder.mkdir()
        files.append(str(_export(folder, [conv])))
    child = pexpect.spawn(GS[0], [*GS[1:], "import", *files], env={**os.environ, "TERM": "xterm"},
                          dimensions=(24, 100), encoding="utf-8", codec_errors="replace", timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert "importing" in child.before  # the bar, drawn on the terminal
    assert "2 files, 4 sessions written, 6 turns, 0 skipped" in child.before
    r = gs("import", *files)  # not a terminal: the lines alone
    assert r.code == 0 and "importing" not in r.err and "━" not in r.err
    assert r.err.splitlines() == ["nothing new", "2 files, 0 sessions written, 0 turns, 0 skipped"]


def test_a_conversation_in_two_files_of_one_import_is_found_from_the_first(gs, git, tmp_path):
    """One index serves the whole command: what the first file wrote is in it for the second."""
    convs = _fixture()
    (tmp_path / "a").mkdir()
    first = _export(tmp_path / "a", convs)
    _add(convs[0], "n-u4", "n-a3b", "user", "Thanks! And JSON?", T + 400)
    _add(convs[0], "n-a4", "n-u4", "assistant", "json.loads and json.dumps.", T + 410)
    (tmp_path / "b").mkdir()
    second = _export(tmp_path / "b", convs)
    r = gs("import", str(first), str(second), str(second))
    assert r.code == 0, r.err
    assert f"{MAIN}: 1 turn new" in r.err
    assert r.out.split().count(MAIN) == 2  # written, then grown; the third file found all of it
    assert "3 files, 5 sessions written, 7 turns, 0 skipped" in r.err
    assert git("log", "-1", "--format=%s", MAIN).strip() == "turn 4: Thanks! And JSON?"
    git("fsck", "--strict")


def test_the_packs_of_many_lines_are_merged_as_the_import_goes(gs, git, repo_path, tmp_path):
    """Every object lookup (and dulwich's cache of delta bases) grows with the packs: they do not pile up."""
    base = _fixture()[1]
    convs = []
    for i in range(MERGE_PACKS + 3):
        conv = json.loads(json.dumps(base))
        conv["id"] = conv["conversation_id"] = f"conv-{i}"
        conv["title"] = f"Greeting {i}"
        convs.append(conv)
    files = []
    for i, conv in enumerate(convs):  # a file each, as Claude Code keeps them (the command opens a store per file)
        (tmp_path / f"e{i}").mkdir()
        files.append(str(_export(tmp_path / f"e{i}", [conv])))
    r = gs("import", *files[:2])
    assert r.code == 0, r.err
    r = gs("import", *files[2:])  # counted on from the command before
    assert r.code == 0, r.err
    packs = sorted((repo_path / "objects" / "pack").glob("*.pack"))
    assert len(packs) == 1 + 3  # the first MERGE_PACKS lines in one pack, the three since apart
    git("fsck", "--strict")
    for pack in packs:
        git("verify-pack", str(pack.with_suffix(".idx")))
    merged = max(packs, key=lambda p: p.stat().st_size)  # its entries copied from the lines' packs: deltas kept
    assert "chain length = 1" in git("verify-pack", "-v", str(merged.with_suffix(".idx")))
    for sid in (imported_session_id("chatgpt", c["id"], c["title"]) for c in convs):  # each reads back whole
        assert gs("show", sid).code == 0
    again = gs("import", *files)
    assert again.code == 0 and again.out == "" and "nothing new" in again.err.splitlines()


def test_the_session_ids_are_listed_from_the_ref_names_packed_or_loose(gs, git, repo_path):
    """What is taken is asked before each new session: the names are listed, no ref file read."""
    assert gs("import", str(_export(repo_path.parent, _fixture()))).code == 0
    git("pack-refs", "--all")  # the imported sessions' refs in packed-refs
    tip = git("rev-parse", git("for-each-ref", "--format=%(refname)", "refs/heads").split()[0]).strip()
    git("update-ref", "refs/heads/loose-one", tip)
    git("update-ref", "refs/heads/feature/x", tip)  # no session id
    (repo_path / "refs" / "heads" / "coming.lock").write_text(tip + "\n")  # being created: none yet
    with GitStore(repo_path) as store:
        ids = store.session_ids()
        assert ids == list(store.tips()) and "loose-one" in ids and "coming" not in ids
        assert len(ids) == len(git("for-each-ref", "refs/heads").splitlines()) - 1  # all but feature/x


def test_an_import_leaves_the_current_session_as_it_was(gs, git, fake_api, tmp_path):
    """HEAD is the user's chat: ``gs chat -c`` goes on with it after an import (from cron, --watch)."""
    assert gs("ask", "-S", "mine", "hello there").code == 0
    base = _fixture()[1]
    files = []
    for i in range(3):
        conv = json.loads(json.dumps(base))
        conv["id"] = conv["conversation_id"] = f"head-{i}"
        conv["title"] = f"Head {i}"
        (tmp_path / f"h{i}").mkdir()
        files.append(str(_export(tmp_path / f"h{i}", [conv])))
    own = tmp_path / "own.jsonl"
    own.write_bytes(gs("export", "mine", "--format", "jsonl").out.encode())
    r = gs("import", *files, str(_export(tmp_path, _fixture())))  # new sessions and forks
    assert r.code == 0, r.err
    assert gs("import", str(own), "--as", "copy").code == 0  # gs's own format too
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/mine"
    fake_api.reset()
    r = gs("chat", "-c", input="and again\n")
    assert r.code == 0, r.err
    assert [m["content"] for m in fake_api.requests[-1]["messages"] if m["role"] == "user"] == [
        "hello there", "and again"]
