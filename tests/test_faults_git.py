"""Faults from repos touched by plain git and from odd bytes.

Each test makes the condition with the real ``git`` CLI (a ref moved by ``git update-ref``,
a branch that is no session, a commit built with ``hash-object``/``mktree``/``commit-tree``,
a pack file a killed repack left) or with real concurrent ``gs`` processes, then checks that
gs neither crashes nor silently loses or misreports anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from conftest import GS

from gitsessions.log.events import Event, encode_log, make_header
from gitsessions.store import GitStore

HAND = {"GIT_AUTHOR_NAME": "someone", "GIT_AUTHOR_EMAIL": "someone@example.org",
        "GIT_COMMITTER_NAME": "someone", "GIT_COMMITTER_EMAIL": "someone@example.org"}


def commit_by_hand(repo: Path, branch: str, raw: bytes, message: str = "written by hand",
                   parent: str | None = None) -> str:
    """Commit ``raw`` as ``session.jsonl`` on ``branch`` with plain git (no trailers); return the commit."""

    def git(*args: str, input: bytes | None = None) -> str:
        proc = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True,
                              env={**os.environ, **HAND})
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.decode().strip()

    blob = git("hash-object", "-w", "--stdin", input=raw)
    tree = git("mktree", input=f"100644 blob {blob}\tsession.jsonl\n".encode())
    commit = git("commit-tree", tree, *(["-p", parent] if parent else []), "-m", message)
    git("update-ref", f"refs/heads/{branch}", commit)  # no -m: a reflog line without a message
    return commit


def a_turn(first: int, prompt: str, reply: str) -> list[Event]:
    """The events of one completed turn, seq from ``first``."""
    kinds = [("turn/start", {"turn": 0}), ("user/message", {"content": prompt}), ("step/start", {}),
             ("assistant/message", {"content": reply, "tool_calls": [], "finish_reason": "stop",
                                    "interrupted": False}),
             ("step/end", {}), ("turn/end", {"reason": "completed"})]
    return [Event(first + i, 1_700_000_000_000 + i, t, d) for i, (t, d) in enumerate(kinds)]


def two_turns() -> list[Event]:
    """Two completed turns (turn numbers 1 and 2)."""
    events = a_turn(0, "first question", "first answer") + a_turn(6, "second question", "second answer")
    events[0].data["turn"], events[6].data["turn"] = 1, 2
    return events


def fresh_repo(gs) -> None:
    """Create the session repo as gs does (its first save)."""
    assert gs("ask", "-S", "work", "hello").code == 0


# -- 4. a reflog line without a message ------------------------------------------------------


def test_gc_reads_a_reflog_line_without_a_message(gs, git, repo_path):
    fresh_repo(gs)
    tip = git("rev-parse", "work").strip()
    git("update-ref", "refs/heads/moved", tip)  # valid git: the reflog line has no message
    assert "\t" not in (repo_path / "logs" / "refs" / "heads" / "moved").read_text()
    r = gs("gc")
    assert r.code == 0, r.err
    assert "Traceback" not in r.err and "unexpected error" not in r.err
    assert not any((repo_path / "objects").glob("??/*")), "everything reachable is packed"
    git("fsck", "--strict")
    assert gs("show", "moved").code == 0


# -- 5. a branch that is no session ------------------------------------------------------------


def test_push_skips_what_is_not_a_session_and_pushes_the_rest(gs, git, tmp_path):
    fresh_repo(gs)
    tip = git("rev-parse", "work").strip()
    git("update-ref", "refs/heads/feature/x", tip)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    r = gs("push", str(remote))
    assert r.code == 0, r.err
    assert r.err.count("feature/x") == 1, r.err  # said once
    assert "not a session" in r.err
    heads = subprocess.run(["git", "-C", str(remote), "for-each-ref", "--format=%(refname)"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert heads == ["refs/heads/work"]
    r = gs("gc")
    assert r.code == 0, r.err


def test_push_skips_a_branch_without_a_session_log(gs, git, tmp_path):
    fresh_repo(gs)
    repo = tmp_path / "repo.git"
    hand = {**os.environ, **HAND}
    blob = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=b"todo\n",
                          capture_output=True, check=True).stdout.decode().strip()
    tree = subprocess.run(["git", "-C", str(repo), "mktree"], input=f"100644 blob {blob}\tREADME\n".encode(),
                          capture_output=True, check=True).stdout.decode().strip()
    other = subprocess.run(["git", "-C", str(repo), "commit-tree", tree, "-m", "notes"],
                           capture_output=True, env=hand, check=True).stdout.decode().strip()
    git("update-ref", "refs/heads/notes", other)  # a valid id, but no session log in its tree
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    r = gs("push", str(remote))
    assert r.code == 0, r.err
    assert r.err.count("notes") == 1 and "session.jsonl" in r.err, r.err
    heads = subprocess.run(["git", "-C", str(remote), "for-each-ref", "--format=%(refname)"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert heads == ["refs/heads/work"]


# -- 6. case variants -----------------------------------------------------------------------


def test_case_variants_started_together_one_wins(gs, git, fake_api, repo_path):
    fresh_repo(gs)
    for attempt in range(4):
        before = len(fake_api.requests)
        ids = (f"caseR{attempt}", f"caser{attempt}")
        procs = [subprocess.Popen([*GS, "ask", "-S", sid, f"hello from {sid}"], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
                 for sid in ids]  # both started before either is waited for
        results = [(p.returncode, err.decode()) for p in procs for _out, err in [p.communicate(timeout=60)]]
        codes = sorted(code for code, _ in results)
        assert codes == [0, 1], results
        by_code = {code: (sid, err) for sid, (code, err) in zip(ids, results, strict=True)}
        (winner, _), (sid, loser) = by_code[0], by_code[1]
        assert "Traceback" not in loser and "unexpected error" not in loser, loser
        # says why, naming the winner, in the one wording of a case clash: while the winner
        # writes (its lock) as after its first save (the id check)
        assert f"no session {sid!r}; did you mean {winner!r}?" in loser, loser
        assert len(fake_api.requests) - before == 1, "the loser was refused before it called the model"
        branches = git("for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
        assert len([b for b in branches if b.casefold() == ids[0].casefold()]) == 1, branches
        assert not list((repo_path / "gs" / "journal").glob("*.jsonl")), "no turn was left in a journal"
    listed = gs("list", "--json")
    assert listed.code == 0, listed.err
    assert gs("search", "hello").code == 0


def test_a_case_clash_made_by_hand_is_listed(gs, git, repo_path):
    fresh_repo(gs)
    tip = git("rev-parse", "work").strip()
    git("update-ref", "refs/heads/Work", tip)
    # ... and the turn the loser of such a race left in its journal (it never became a branch)
    with GitStore(repo_path) as store:
        journal = store.journal("WORK")
        journal.begin(None, make_header("WORK", created=1))
        for event in a_turn(0, "kept apart", "reply"):
            journal.append_event(event)
        journal.close()
    r = gs("list", "--json")
    assert r.code == 0, r.err
    rows = {row["id"]: row for row in r.json()}
    assert set(rows) == {"work", "Work", "WORK-recovered-1"}, rows
    assert r.err.count("differ only by case") == 1 and "Work and work" in r.err, r.err
    assert "WORK is taken by Work" in r.err and "WORK-recovered-1" in r.err, r.err
    assert "kept apart" in gs("show", "WORK-recovered-1").out
    r = gs("search", "hello")
    assert r.code == 0, r.err
    assert gs("show", "work").code == 0


# -- 7. a lone surrogate written as a JSON escape ------------------------------------------


def test_lone_surrogate_escape_in_a_committed_log_shows_as_replacement(gs, repo_path):
    fresh_repo(gs)
    events = a_turn(0, "PLACEHOLDER", "reply")
    events[0].data["turn"] = 1
    raw = encode_log(make_header("odd", created=1), events).replace(b"PLACEHOLDER", b"bad \\ud83d here")
    assert b"\\ud83d" in raw
    commit_by_hand(repo_path, "odd", raw)
    for args in (("show", "odd"), ("show", "odd", "--format", "json"), ("log", "-p", "odd"),
                 ("search", "here")):
        r = gs(*args)
        assert r.code == 0, (args, r.err)
        assert "Traceback" not in r.err and "unexpected error" not in r.err, (args, r.err)
        shown = r.json()["messages"][0]["content"] if "json" in args else r.out
        assert "bad \ufffd here" in shown, (args, r.out)


# -- 8. a torn last line in a commit --------------------------------------------------------


def test_torn_last_line_in_a_commit_is_damage_not_dropped(gs, git, repo_path):
    fresh_repo(gs)
    events = a_turn(0, "kept", "answer")
    events[0].data["turn"] = 1
    raw = encode_log(make_header("torn", created=1), events) + b'{"seq":6,"time":1,"type":"user/mes'
    tip = commit_by_hand(repo_path, "torn", raw)
    rows = {row["id"]: row for row in gs("list", "--json").json()}
    assert rows["torn"]["error"] and "line 8" in rows["torn"]["error"], rows["torn"]
    assert rows["work"]["error"] is None
    shown = gs("show", "torn")
    assert shown.code == 1 and "line 8" in shown.err, shown.err
    r = gs("ask", "-S", "torn", "go on")
    assert r.code == 1 and "line 8" in r.err, r.err
    assert git("rev-parse", "torn").strip() == tip, "no write dropped the torn line"
    rows = {row["id"]: row for row in gs("list", "--json").json()}
    assert rows["torn"]["error"], "still marked once it was read"
    # A turn left in its journal cannot be recovered onto the damage: the others are still listed.
    with GitStore(repo_path) as store:
        journal = store.journal("torn")
        journal.begin(tip, None)
        journal.append_event(Event(6, 1, "turn/start", {"turn": 2}))
        journal.close()
    r = gs("list", "--json")
    assert r.code == 0, r.err
    assert {row["id"]: row["error"] is not None for row in r.json()} == {"torn": True, "work": False}
    assert gs("search", "hello").code == 0


def test_a_trailing_blank_line_in_a_commit_loses_nothing(gs, git, repo_path):
    fresh_repo(gs)
    events = a_turn(0, "kept", "answer")
    events[0].data["turn"] = 1
    commit_by_hand(repo_path, "blank", encode_log(make_header("blank", created=1), events) + b"\n")
    rows = {row["id"]: row for row in gs("list", "--json").json()}
    assert rows["blank"]["error"] is None
    assert gs("ask", "-S", "blank", "go on").code == 0
    assert len(git("show", "blank:session.jsonl").splitlines()) == 1 + 12


# -- 9. commits without trailers --------------------------------------------------------------


def test_list_reads_the_log_when_trailers_are_missing_or_wrong(gs, git, repo_path):
    fresh_repo(gs)
    assert gs("ask", "-S", "work", "again").code == 0
    mine = {row["id"]: row for row in gs("list", "--json").json()}["work"]
    raw = git("show", "work:session.jsonl").encode()
    commit_by_hand(repo_path, "plain", raw)  # no trailers at all
    commit_by_hand(repo_path, "liar", raw, message="turn 9: no\n\nSession: liar\nTurn: 9\nMessages: 99\n")
    rows = {row["id"]: row for row in gs("list", "--json").json()}
    for sid in ("plain", "liar"):
        assert (rows[sid]["turns"], rows[sid]["messages"]) == (mine["turns"], mine["messages"]) == (2, 4), rows[sid]
        assert rows[sid]["error"] is None
    assert gs("show", "plain").code == 0  # once verified, the missing trailers are still not trusted
    rows = {row["id"]: row for row in gs("list", "--json").json()}
    assert (rows["plain"]["turns"], rows["plain"]["messages"]) == (2, 4)


# -- 10. temporary packs a killed gc left ----------------------------------------------------


def test_gc_removes_stale_temporary_packs(gs, repo_path):
    fresh_repo(gs)
    pack_dir = repo_path / "objects" / "pack"
    pack_dir.mkdir(parents=True, exist_ok=True)

    def left_behind(age_s: float) -> Path:
        fd, name = tempfile.mkstemp(dir=pack_dir, suffix=".pack")  # as dulwich's pack writer names it
        os.write(fd, b"PACK\x00\x00\x00\x02" + b"\x00" * 4096)
        os.close(fd)
        then = time.time() - age_s
        os.utime(name, (then, then))
        return Path(name)

    stale, fresh = left_behind(3600), left_behind(0)
    r = gs("gc")
    assert r.code == 0, r.err
    assert not stale.exists(), "a temporary pack an hour old is garbage"
    assert fresh.exists(), "a temporary pack being written right now is left alone"
    fresh.unlink()
    subprocess.run(["git", "-C", str(repo_path), "fsck", "--strict"], check=True, capture_output=True)
    assert json.loads(gs("list", "--json").out)[0]["id"] == "work"


# -- a damaged packed-refs -------------------------------------------------------------------


def test_a_junk_line_in_packed_refs_is_named_and_what_can_work_does(gs, git, repo_path):
    fresh_repo(gs)
    assert gs("ask", "-S", "other", "hello").code == 0
    git("pack-refs", "--all")  # both packed
    assert gs("ask", "-S", "work", "again").code == 0  # work loose again
    packed = repo_path / "packed-refs"
    lines = packed.read_text().splitlines()
    packed.write_text("\n".join([*lines[:2], "junk line here", *lines[2:]]) + "\n")
    said = f"the session repo is damaged: {packed} line 3 is no ref ('junk line here')"
    r = gs("list", "--json")
    assert r.code == 0, r.err
    assert sorted(row["id"] for row in r.json()) == ["other", "work"]
    assert f"gs: warning: {said}; the refs on its other lines are read" in r.err and "gs doctor --fix" in r.err, r.err
    assert gs("show", "other").code == 0
    assert gs("ask", "-S", "work", "a third time").code == 0  # a loose ref moves as ever
    refs = packed.read_bytes()
    r = gs("rm", "other")  # its removal would rewrite the file, and drop the line
    assert r.code == 1 and f"gs: {said}; nothing was changed: gs doctor says what to do" in r.err, (r.code, r.err)
    assert len(r.err.splitlines()) == 2 and "Traceback" not in r.err, r.err  # the refusal, and the warning
    assert packed.read_bytes() == refs and gs("list", "--archived", "--json").json() == []
    r = gs("doctor")
    assert r.code == 1 and f"problem: {packed} line 3 is no ref ('junk line here')" in r.out, r.out
    r = gs("doctor", "--fix")
    assert r.code == 0, r.out
    (kept,) = (repo_path / "gs" / "damaged").iterdir()
    assert kept.read_text() == "3: junk line here\n"
    assert f"fixed: {packed} held 1 damaged line (such as line 3, which is no ref ('junk line here')); set aside in " \
           f"{kept}" in r.out, r.out
    git("fsck", "--strict")
    r = gs("rm", "other")
    assert r.code == 0 and "warning" not in r.err, r.err
    assert sorted(row["id"] for row in gs("list", "--json").json()) == ["work"]
    git("fsck", "--strict")


# -- branches whose names are no session ids ---------------------------------------------------


def test_list_says_which_branches_it_does_not_show_and_how_to_show_them(gs, git, repo_path):
    fresh_repo(gs)
    raw = git("show", "work:session.jsonl").encode()
    odd = ["feature/x", "a.b", "x" * 70, "ünïcode"]
    for name in odd:
        commit_by_hand(repo_path, name, raw)  # a valid log, under a name that is no session id
    r = gs("list", "--json")
    assert r.code == 0, r.err
    assert [row["id"] for row in r.json()] == ["work"]
    shown = ", ".join(sorted(odd)[:3])
    assert r.err == (f"gs: warning: 4 branches are not listed: their names are no session id ({shown}, …; an id is "
                     f"at most 64 letters, digits, '_' or '-'); to list one, rename it: git -C {repo_path} branch -m "
                     f"{sorted(odd)[0]} NEW-ID\n"), r.err
    git("branch", "-m", "feature/x", "feature-x")  # as it says
    for name in ("a.b", "x" * 70, "ünïcode"):
        git("branch", "-m", name, f"renamed-{len(name)}")
    r = gs("list", "--json")
    assert r.code == 0 and r.err == "", r.err
    assert sorted(row["id"] for row in r.json()) == ["feature-x", "renamed-3", "renamed-7", "renamed-70", "work"]
    assert all(row["error"] is None for row in r.json())
