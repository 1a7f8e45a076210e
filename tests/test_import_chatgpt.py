"""Importing ChatGPT's data export: a commit per turn, dated when it was said, its branches as forks.

The fixture (tests/data/chatgpt/conversations.json) is built from the export's documented
shape: a ``mapping`` tree with a ``message: null`` root, a blank hidden system message, a
hidden user-context message, an edited prompt (two sibling prompts), a regenerated answer
(two sibling answers), an image part, a code-interpreter call and its output, and the
fields an importer ignores. Checked with the real git CLI and the strict fake API.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from fakeapi import validate_messages

from gitsessions.ids import imported_fork_id, imported_session_id
from gitsessions.store import GitStore

FIXTURE = Path(__file__).parent / "data" / "chatgpt" / "conversations.json"
T = 1700000000  # the fixture's first prompt, epoch s
YAML_ID = "6770a1b2-4c1d-8000-9e2f-0a1b2c3d4e5f"
MAIN = imported_session_id("chatgpt", YAML_ID, "Parse YAML in Python")
EDITED = imported_fork_id(MAIN, "n-a2")  # the prompt as first written, before the edit
REGENERATED = imported_fork_id(MAIN, "n-a2e1")  # the answer ChatGPT replaced
GREETING = imported_session_id("chatgpt", "6770ffff-0000-8000-aaaa-bbbbccccdddd", "Greeting")


def _export(tmp_path: Path, convs: list, name: str = "conversations.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(convs), encoding="utf-8")
    return path


def _fixture() -> list:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _refs(git) -> str:
    return git("for-each-ref", "--format=%(refname) %(objectname)")


def _add(conv: dict, node_id: str, parent: str, role: str, text: str, t: float) -> None:
    conv["mapping"][parent]["children"].append(node_id)
    conv["mapping"][node_id] = {"id": node_id, "parent": parent, "children": [], "message": {
        "id": node_id, "author": {"role": role, "name": None, "metadata": {}}, "create_time": t,
        "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully",
        "recipient": "all", "metadata": {"model_slug": "gpt-4o"} if role == "assistant" else {}}}
    conv["current_node"] = node_id


def test_each_turn_is_a_commit_dated_when_it_was_said_and_branches_are_forks(gs, git, repo_path):
    r = gs("import", str(FIXTURE))
    assert r.code == 0, r.err
    assert sorted(r.out.split()) == sorted([MAIN, EDITED, REGENERATED, GREETING])
    assert "1 file, 4 sessions written, 6 turns, 0 skipped" in r.err
    git("fsck", "--strict")
    # The session is the path to current_node: the header commit, then one commit per turn.
    assert git("log", "--format=%at", MAIN).split() == [str(T + 300), str(T + 90), str(T), str(T - 5)]
    assert git("log", "--format=%s", MAIN).splitlines() == [
        "turn 3: Does this config round-trip?",
        "turn 2: And how do I write it back, keeping the comments?",
        "turn 1: How do I parse YAML in Python?",
        f"import: chatgpt {YAML_ID}",
    ]
    # Committed as said too, in UTC: the same import elsewhere makes the same commits.
    assert git("log", "--format=%ct %ai", MAIN).split("\n")[0] == f"{T + 300} " + time.strftime(
        "%Y-%m-%d %H:%M:%S +0000", time.gmtime(T + 300))
    assert f"Imported-From: chatgpt {YAML_ID}" in git("log", "-1", "--format=%B", MAIN)
    # Both alternatives leave the session after turn 1, as in ChatGPT's tree.
    turn1 = git("rev-parse", f"{MAIN}~2").strip()
    for fork in (EDITED, REGENERATED):
        assert git("merge-base", MAIN, fork).strip() == turn1
        assert f"Forked-From: {MAIN}@{turn1}" in git("log", "-1", "--format=%B", fork)
    # The fork's own commit (no events) is dated when the branch began, as its first turn.
    assert git("log", "--format=%at", EDITED).split() == [str(T + 60), str(T + 60), str(T), str(T - 5)]
    tree = gs("tree", MAIN)
    assert tree.code == 0
    assert EDITED in tree.out and REGENERATED in tree.out and "at turn 1" in tree.out
    with GitStore(repo_path) as store:
        snap = store.load(MAIN)
        edited = store.load(EDITED)
    header = snap.header
    assert header["source"] == {"tool": "chatgpt", "id": YAML_ID} and header["imported_from"] == "chatgpt"
    assert "cwd" not in header  # no local paths without --keep-paths
    kinds = [(e.type, e.ignorable) for e in snap.events]
    assert ("import/message", True) in kinds  # the hidden user context: kept, never sent
    hidden = next(e for e in snap.events if e.type == "import/message")
    assert "Be brief." in hidden.data["content"]
    thoughts = [e.data for e in snap.events if e.data.get("name") == "assistant thoughts"]
    assert thoughts and "safe_load is the usual answer" in thoughts[0]["content"]  # kept, not said
    assert not any("usual answer" in str(e.data) for e in snap.events if e.type == "assistant/message")
    prompts = [e.data["content"] for e in snap.events if e.type == "user/message"]
    assert "[image 812x430 file-service://file-7Qm2exampleAsset: not imported]" in prompts[2]
    calls = [e.data for e in snap.events if e.type == "tool/result"]
    assert calls == [{"id": "n-a3", "name": "python", "content": "ok", "is_error": False}]
    assert [e.data["content"] for e in edited.events if e.type == "user/message"][-1] == "And how do I write it back?"


def test_the_same_export_imported_on_two_machines_makes_the_same_commits(gs, git, tmp_path):
    """So that a sync between them finds the sessions equal, not each one made on both machines."""
    assert gs("import", str(FIXTURE)).code == 0
    other = tmp_path / "other.git"
    time.sleep(1.1)  # another second: a date taken from the clock would differ
    assert gs("--repo", str(other), "import", str(FIXTURE)).code == 0
    theirs = subprocess.run(["git", "-C", str(other), "for-each-ref", "--format=%(refname) %(objectname)",
                             "refs/heads/"], capture_output=True, text=True, check=True).stdout
    assert theirs == git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")


def test_the_same_import_again_writes_nothing(gs, git):
    assert gs("import", str(FIXTURE)).code == 0
    before = _refs(git)
    r = gs("import", str(FIXTURE))
    assert r.code == 0 and r.out == ""
    assert "nothing new in conversations.json" in r.err
    assert _refs(git) == before


def test_a_grown_conversation_fast_forwards(gs, git, tmp_path):
    convs = _fixture()
    assert gs("import", str(_export(tmp_path, convs))).code == 0
    tip, forks = git("rev-parse", MAIN).strip(), git("rev-parse", EDITED, REGENERATED)
    _add(convs[0], "n-u4", "n-a3b", "user", "Thanks! And JSON?", T + 400)
    _add(convs[0], "n-a4", "n-u4", "assistant", "json.loads and json.dumps.", T + 410)
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0, r.err
    assert r.out.split() == [MAIN]
    assert f"{MAIN}: 1 turn new" in r.err
    assert git("rev-parse", f"{MAIN}^").strip() == tip  # a fast-forward: one commit on the old tip
    assert git("log", "-1", "--format=%at %s", MAIN).strip() == f"{T + 400} turn 4: Thanks! And JSON?"
    assert git("rev-parse", EDITED, REGENERATED) == forks
    git("fsck", "--strict")


def test_a_conversation_that_took_another_branch_keeps_the_old_line_and_forks(gs, git, tmp_path):
    convs = _fixture()
    assert gs("import", str(_export(tmp_path, convs))).code == 0
    tip = git("rev-parse", MAIN).strip()
    turn2 = git("rev-parse", f"{MAIN}~1").strip()
    # The user edited the third prompt in ChatGPT: a sibling of the old one, now current.
    _add(convs[0], "n-u3x", "n-a2e2", "user", "What about anchors?", T + 500)
    _add(convs[0], "n-a3x", "n-u3x", "assistant", "Anchors round-trip too.", T + 510)
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0, r.err
    new = imported_fork_id(MAIN, "n-a3x")
    assert r.out.split() == [new]
    assert git("rev-parse", MAIN).strip() == tip  # the old line is kept as it was
    assert git("merge-base", MAIN, new).strip() == turn2
    assert f"Forked-From: {MAIN}@{turn2}" in git("log", "-1", "--format=%B", new)
    assert git("log", "-1", "--format=%at", new).strip() == str(T + 500)
    assert new in gs("tree", MAIN).out
    assert gs("import", str(_export(tmp_path, convs))).out == ""  # and that is found again
    git("fsck", "--strict")


def test_the_export_zip_imports_as_its_conversations_json(gs, git, tmp_path):
    path = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("chat.html", "<html></html>")
        z.writestr("user.json", json.dumps({"id": "user-1"}))
        z.writestr("message_feedback.json", "[]")
        z.writestr("conversations.json", FIXTURE.read_bytes())
    r = gs("import", "--from", "chatgpt", str(path))
    assert r.code == 0, r.err
    assert sorted(r.out.split()) == sorted([MAIN, EDITED, REGENERATED, GREETING])
    assert "nothing new" in gs("import", str(FIXTURE)).err  # the same ids as from the bare file


def test_from_chatgpt_refuses_another_format(gs, repo_path, tmp_path):
    path = _export(tmp_path, [{"role": "user", "content": "hi"}], "messages.json")
    r = gs("import", "--from", "chatgpt", str(path))
    assert r.code == 1 and "not a chatgpt file" in r.err and not repo_path.exists()


@pytest.mark.parametrize("break_it, where", [
    (lambda c: c[0]["mapping"]["n-a1"].update(parent="gone"), "node 'n-a1': its parent 'gone' is not in the mapping"),
    (lambda c: c[1].update(current_node="nowhere"), "conversation 1 ('6770ffff"),
    (lambda c: c[1]["mapping"]["b-a1"]["message"]["author"].update(role="robot"), "node 'b-a1': author role 'robot'"),
    (lambda c: c[1]["mapping"]["b-a1"].update(children=["b-u1"]), "node 'b-a1': the children links form a loop"),
    (lambda c: c[1]["mapping"]["b-a1"].update(children=[{"id": "x"}], parent=["b-u1"]), "node 'b-a1': its parent"),
    (lambda c: c[1].update(mapping={"a": {"parent": "b", "children": ["b"]}, "b": {"parent": "a", "children": ["a"]}},
                           current_node=None), "conversation 1 ('6770ffff"),
])
def test_a_malformed_file_names_where_and_writes_nothing_of_it(gs, git, repo_path, tmp_path, break_it, where):
    convs = _fixture()
    break_it(convs)
    bad = _export(tmp_path, convs, "bad.json")
    r = gs("import", str(bad))
    assert r.code == 1 and "cannot import bad.json" in r.err and where in r.err, r.err
    assert not repo_path.exists()
    # With other files, the good ones are imported, the bad one is named, and the status is 1.
    good = _export(tmp_path, _fixture()[1:], "good.json")
    r = gs("import", str(bad), str(good))
    assert r.code == 1
    assert "cannot import bad.json" in r.err and where in r.err
    assert r.out.split() == [GREETING]
    assert "2 files (1 failed), 1 session written, 1 turn, 0 skipped" in r.err
    assert git("for-each-ref", "--format=%(refname)").split() == [f"refs/heads/{GREETING}"]


def test_broken_json_is_reported_with_its_line_and_column(gs, repo_path, tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text('[{"mapping": {}, "title": "x",\n  "id": }]', encoding="utf-8")
    r = gs("import", str(path))
    assert r.code == 1 and "line 2, column" in r.err and not repo_path.exists()


def test_titles_and_messages_are_redacted_before_anything_is_written(gs, git, repo_path, tmp_path):
    secret = "sk-" + "proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    convs = _fixture()[1:]
    convs[0]["title"] = f"key {secret} leaked"
    convs[0]["mapping"]["b-u1"]["message"]["content"]["parts"] = [f"use {secret}"]
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0, r.err
    sid = r.out.strip()
    assert sid.startswith("key-redacted-api-key-leaked-")
    dump = git("log", "-p", "--all", "--format=%B") + git("show", f"{sid}:session.jsonl")
    assert secret not in dump and secret not in r.err and "[REDACTED:api-key]" in dump


def test_an_imported_session_continues_against_the_strict_server(gs, fake_api):
    assert gs("import", str(FIXTURE)).code == 0
    for sid in (MAIN, REGENERATED):
        fake_api.reset()
        r = gs("ask", "-S", sid, "one more question")
        assert r.code == 0, r.err
        messages = fake_api.requests[-1]["messages"]
        assert validate_messages(messages) is None
        assert messages[-1] == {"role": "user", "content": "one more question"}
        assert any(m.get("tool_calls") for m in messages) == (sid == MAIN)


def test_a_session_another_writer_holds_is_reported_and_the_rest_imported(gs, git, repo_path, tmp_path):
    convs = _fixture()
    assert gs("import", str(_export(tmp_path, convs))).code == 0
    tip = git("rev-parse", MAIN).strip()
    _add(convs[0], "n-u4", "n-a3b", "user", "Thanks! And JSON?", T + 400)
    _add(convs[1], "b-u2", "b-a1", "user", "Again", T + 10**7)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from gitsessions.store import GitStore; "
         f"lock = GitStore(sys.argv[1]).lock({MAIN!r}); assert lock.try_acquire(); print('held', flush=True); "
         "sys.stdin.read()", str(repo_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        r = gs("import", str(_export(tmp_path, convs)))
    finally:
        holder.communicate("")
    assert r.code == 1
    assert f"gs: not imported chatgpt conversation {YAML_ID}: session '{MAIN}' is being written by pid" in r.err
    assert r.out.split() == [GREETING] and git("rev-parse", MAIN).strip() == tip
    assert "1 session written, 1 turn, 1 skipped" in r.err
    assert gs("import", str(_export(tmp_path, convs))).out.split() == [MAIN]  # the next run takes it up


def test_odd_trees_a_dangling_child_and_a_current_node_with_children(gs, git, tmp_path):
    convs = _fixture()[1:]
    del convs[0]["current_node"]  # the newest line is the session, and the user is told
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and r.out.split() == [GREETING] and "names no current_node" in r.err, r.err
    git("update-ref", "-d", f"refs/heads/{GREETING}")
    convs = _fixture()[1:]
    convs[0]["mapping"]["b-a1"]["children"] = ["never-exported"]  # passed over, not a refusal
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and r.out.split() == [GREETING], r.err
    # current_node may sit above the newest message: its line goes on to the newest child.
    convs = _fixture()[1:]
    _add(convs[0], "b-u2", "b-a1", "user", "Again", T + 10**7)
    convs[0]["current_node"] = "b-a1"
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and r.out.split() == [GREETING] and f"{GREETING}: 1 turn new" in r.err
    assert git("log", "-1", "--format=%s", GREETING).strip() == "turn 2: Again"


def test_local_paths_only_with_keep_paths_and_no_as(gs, repo_path, tmp_path):
    path = _export(tmp_path, _fixture()[1:])
    r = gs("import", "--as", "mine", str(path))
    assert r.code == 1 and "--as does not apply to chatgpt conversations" in r.err and not repo_path.exists()
    assert gs("import", "--keep-paths", str(path)).code == 0
    with GitStore(repo_path) as store:
        header = store.load(GREETING).header
    assert header["source_file"] == str(path.resolve()) and "cwd" not in header  # the file's, not gs's


def test_keep_paths_commits_do_not_depend_on_where_gs_ran(gs, git, tmp_path, monkeypatch):
    path = _export(tmp_path, _fixture()[1:])
    tips = []
    for i, where in enumerate([tmp_path, tmp_path / "elsewhere"]):
        where.mkdir(exist_ok=True)
        monkeypatch.chdir(where)
        repo = tmp_path / f"repo{i}.git"
        assert gs("import", "--keep-paths", str(path), env={"GS_REPO": str(repo)}).code == 0
        tips.append(subprocess.run(["git", "-C", str(repo), "rev-parse", GREETING], check=True,
                                   capture_output=True, text=True).stdout)
    assert tips[0] == tips[1]


def test_a_session_continued_in_gs_is_kept_and_chatgpt_growth_forks_from_it(gs, git, tmp_path):
    convs = _fixture()[1:]
    assert gs("import", str(_export(tmp_path, convs))).code == 0
    assert gs("ask", "-S", GREETING, "continued in gs").code == 0
    tip = git("rev-parse", GREETING).strip()
    assert "nothing new" in gs("import", str(_export(tmp_path, convs))).err
    _add(convs[0], "b-u2", "b-a1", "user", "Continued in ChatGPT", T + 10**7)
    r = gs("import", str(_export(tmp_path, convs)))
    fork = imported_fork_id(GREETING, "b-u2")
    assert r.code == 0 and r.out.split() == [fork], r.err
    assert git("rev-parse", GREETING).strip() == tip
    assert git("merge-base", GREETING, fork).strip() == git("rev-parse", f"{GREETING}~1").strip()


def test_a_damaged_session_with_a_like_name_is_passed_over(gs, git, repo_path, tmp_path):
    convs = _fixture()[1:]
    assert gs("import", str(_export(tmp_path, convs))).code == 0

    def plumbing(*args: str, input: str) -> str:
        return subprocess.run(["git", "-C", str(repo_path), *args], input=input, capture_output=True, text=True,
                              check=True).stdout.strip()

    blob = plumbing("hash-object", "-w", "--stdin", input="not a session log\n")
    tree = plumbing("mktree", input=f"100644 blob {blob}\tsession.jsonl\n")
    commit = git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit-tree", tree, "-m", "by plain git")
    git("update-ref", f"refs/heads/{GREETING}-abcdef", commit.strip())
    _add(convs[0], "b-u2", "b-a1", "user", "Again", T + 10**7)
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and r.out.split() == [GREETING], r.err


def test_times_no_commit_can_hold_and_thoughts_with_empty_parts(gs, git, tmp_path):
    """A negative or huge create_time fell into git's badDateOverflow or an internal error; a
    conversation without times was dated 1970; thoughts beside an empty "parts" lost their text."""
    convs = _fixture()[:1]
    conv = convs[0]
    conv["create_time"], conv["update_time"] = -5, 1_700_000_000
    leaf = conv["current_node"]
    _add(conv, "late", leaf, "user", "a prompt from far ahead", 1e300)
    _add(conv, "th", "late", "assistant", "", 1_700_000_100)
    conv["mapping"]["th"]["message"]["content"] = {"content_type": "thoughts", "parts": [],
                                                   "thoughts": [{"summary": "s", "content": "thinking here"}]}
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0, r.err
    git("fsck", "--strict")
    dates = [int(t) for t in git("log", "--format=%at", MAIN).split()]
    assert all(1_600_000_000 < t < 2**32 for t in dates), dates
    assert "thinking here" in gs("export", MAIN, "-f", "jsonl").out


def test_a_rename_in_chatgpt_is_saved_as_gs_title_saves_one_and_the_session_goes_on_growing(gs, git, tmp_path):
    convs = _fixture()
    assert gs("import", str(_export(tmp_path, convs))).code == 0
    convs[0]["title"] = "YAML, parsed"  # renamed in ChatGPT, no new turn
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and r.out.split() == [MAIN], r.err  # the same session, found by its id
    assert f"{MAIN}: titled 'YAML, parsed'" in r.err
    assert git("log", "-1", "--format=%s", MAIN).strip() == "title: YAML, parsed"  # gs title's own commit
    assert f"Imported-From: chatgpt {YAML_ID}" in git("log", "-1", "--format=%B", MAIN)
    assert "YAML, parsed" in gs("list").out
    before = _refs(git)
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and r.out == "" and "nothing new" in r.err and _refs(git) == before
    # The user's own title stays until ChatGPT's changes again; the turns said since are a fast-forward.
    assert gs("title", MAIN, "My YAML notes").code == 0
    tip = git("rev-parse", MAIN).strip()
    _add(convs[0], "n-u4", "n-a3b", "user", "Thanks! And JSON?", T + 400)
    _add(convs[0], "n-a4", "n-u4", "assistant", "json.loads and json.dumps.", T + 410)
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and r.out.split() == [MAIN] and f"{MAIN}: 1 turn new" in r.err and "titled" not in r.err, r.err
    assert git("rev-parse", f"{MAIN}^").strip() == tip  # grown, not forked
    assert "My YAML notes" in gs("list").out
    convs[0]["title"] = "YAML and JSON"
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and f"{MAIN}: titled 'YAML and JSON'" in r.err and "YAML and JSON" in gs("list").out
    assert "nothing new" in gs("import", str(_export(tmp_path, convs))).err
    git("fsck", "--strict")
