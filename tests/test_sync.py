"""Sync that converges (the rule: README "Sync", gitsessions/store/remote/sync.py).

Two session repos and a bare remote: both sides gain turns and a few syncs later every repo
holds the same session refs, with every turn of both sides; renames, archives and restores
travel; refs that are no sessions are skipped with one warning; a session a live writer
holds waits for the next sync; a remote that moves between pull and push gets another round.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from gitservers import GitDaemon, init_bare
from test_transports import NETWORK, Transport, machines, transport  # noqa: F401 - fixtures

from gitsessions.store import GitStore
from gitsessions.store.remote.remotes import Remotes
from gitsessions.store.writers import writing


def _git(repo: Path, *args: str, input: str | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, input=input)
    assert proc.returncode == 0, f"git {' '.join(args)} failed: {proc.stderr}"
    return proc.stdout


def _refs(repo: Path) -> str:
    """The session refs of a repo, as plain git lists them."""
    return _git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/archive")


def _messages(run, sid: str) -> list[str]:
    return [m["content"] for m in run("show", sid, "--format", "json").json()["messages"]]


def _tip(repo: Path, ref: str) -> str:
    return _git(repo, "rev-parse", ref).strip()


def _ok(r, *wanted: str) -> str:
    assert r.code == 0, r.err
    assert "Traceback" not in r.err and "b'" not in r.err, r.err
    for text in wanted:
        assert text in r.err, r.err
    return r.err


def _all_clean(*repos: Path) -> None:
    for repo in repos:
        _git(repo, "fsck", "--strict")
        blobs = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                               capture_output=True, check=True).stdout
        assert b"<<<<<<<" not in blobs and b">>>>>>>" not in blobs and b"\n=======\n" not in blobs


@pytest.fixture
def pair(machines, tmp_path: Path):  # noqa: F811 - the fixture imported above
    """``(a, b, remote)``: A made session ``w`` and pushed it to a bare remote, B cloned it."""
    a, b = machines
    remote = init_bare(tmp_path / "remote.git")
    _ok(a("ask", "-S", "w", "one"))
    _ok(a("remote", "add", "origin", str(remote)))
    _ok(a("push"))
    _ok(b("clone", str(remote), str(b.repo)))
    return a, b, remote


# -- divergence converges, over every transport ------------------------------------------------


@pytest.mark.parametrize("transport", ["path", *NETWORK], indirect=True)
def test_both_sides_gain_turns_and_three_syncs_converge(transport: Transport, machines):  # noqa: F811
    a, b = machines
    remote = init_bare(transport.root / "remote.git")
    url = transport.url("remote.git")
    _ok(a("ask", "-S", "w", "one"))
    _ok(a("remote", "add", "origin", url))
    _ok(a("sync"), "pushed refs/heads/w to origin")
    _ok(b("clone", url, str(b.repo)))
    _ok(a("ask", "-S", "w", "two from a"))
    _ok(a("ask", "-S", "only-a", "a session of A's"))
    _ok(b("ask", "-S", "w", "two from b"))
    _ok(b("ask", "-S", "only-b", "a session of B's"))
    b_side = _tip(b.repo, "w")
    fork = f"w-{b_side[:7]}"

    _ok(a("sync"), "pushed refs/heads/w to origin")
    err = _ok(b("sync"), f"w: diverged; your turns are in {fork} (continue: gs chat {fork})",
              f"pushed refs/heads/{fork} to origin")
    assert len([line for line in err.splitlines() if "diverged" in line]) == 1
    _ok(a("sync"), f"new: {fork}", "new: only-b")

    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    assert f"refs/heads/{fork} " in _refs(remote)
    for run in (a, b):
        assert _messages(run, "w")[-2] == "two from a"  # it reached the remote first: it keeps the name
        assert _messages(run, fork)[-2] == "two from b"
        assert _messages(run, fork)[:2] == _messages(run, "w")[:2]
        assert _messages(run, "only-a")[0] == "a session of A's" and _messages(run, "only-b")[0] == "a session of B's"
    log = a("log", fork, "--json").json()
    assert log[1]["commit"] == b_side  # the fork sits on B's own commit
    _all_clean(a.repo, b.repo, remote)

    before = list(transport.server.requests) if transport.kind == "http" else []
    for run in (a, b):
        r = run("sync")
        assert r.code == 0 and r.err == "up to date with origin\n", r.err
    if transport.kind == "http":  # decided from the fetched refs: no push connection at all
        assert not [p for _m, p, _s in transport.server.requests[len(before):] if "receive-pack" in p]
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)

    _ok(b("ask", "-S", fork, "three on the fork"))  # the fork is a session like any other
    _ok(b("sync"), f"pushed refs/heads/{fork}")
    _ok(a("sync"), f"updated: {fork}")
    assert _messages(a, fork)[-2] == "three on the fork"


def test_the_same_id_made_on_two_machines_keeps_both(machines, tmp_path: Path):  # noqa: F811
    a, b = machines
    remote = init_bare(tmp_path / "remote.git")
    for run in (a, b):
        _ok(run("ask", "-S", "notes", f"made on {run.repo.stem}"))
        _ok(run("remote", "add", "origin", str(remote)))
    fork = f"notes-{_tip(b.repo, 'notes')[:7]}"
    _ok(a("sync"))
    err = _ok(b("sync"), f"notes: made on both machines; yours is now {fork} (continue: gs chat {fork})")
    assert "diverged" not in err, err
    _ok(a("sync"), f"new: {fork}")
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    assert _messages(a, "notes")[0] == "made on a" and _messages(a, fork)[0] == "made on b"
    _all_clean(a.repo, b.repo, remote)


def test_ids_that_differ_only_by_case_are_refused_until_one_is_renamed(machines, tmp_path: Path):  # noqa: F811
    a, b = machines
    remote = init_bare(tmp_path / "remote.git")
    _ok(a("ask", "-S", "Work", "on a"))
    _ok(b("ask", "-S", "work", "on b"))
    for run in (a, b):
        _ok(run("remote", "add", "origin", str(remote)))
    _ok(a("sync"))
    r = b("sync")
    assert r.code == 1 and "Traceback" not in r.err, r.err
    assert "not synced: Work: origin has Work, which differs only by case from work here; rename one of them" in r.err
    assert "refused: refs/heads/work: the remote has Work, which differs only by case; rename one of them" in r.err
    assert _git(remote, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/Work"]
    _ok(b("rename", "work", "work-b"))
    _ok(b("sync"), "new: Work", "pushed refs/heads/work-b")
    _ok(a("sync"), "new: work-b")
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)


def test_a_name_used_again_after_a_rename_is_followed_not_forked(pair):
    a, b, remote = pair
    old = _tip(a.repo, "w")
    _ok(a("rename", "w", "w-old"))
    _ok(a("ask", "-S", "w", "a new w"))
    _ok(a("sync"), "pushed refs/heads/w-old", "pushed refs/heads/w")
    err = _ok(b("sync"), "new: w-old", "updated: w")
    assert "diverged" not in err
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    assert _messages(b, "w")[0] == "a new w" and _tip(b.repo, "w-old") == old
    _all_clean(a.repo, b.repo, remote)


def test_a_rename_by_case_only_travels(pair):
    a, b, remote = pair
    _ok(a("rename", "w", "W"))
    _ok(a("sync"), "pushed refs/heads/W", "removed from origin: refs/heads/w")
    _ok(b("sync"), "renamed on origin: w -> W")
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    assert _git(remote, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/W"]


def test_plain_git_fetch_keeps_the_sync_layout(pair):
    a, _b, _remote = pair
    assert _git(a.repo, "config", "--get-all", "remote.origin.fetch").split() == [
        "+refs/heads/*:refs/remotes/origin/heads/*", "+refs/archive/*:refs/remotes/origin/archive/*"]
    _ok(a("ask", "-S", "old", "to archive"))
    _ok(a("rm", "old"))
    _ok(a("sync"))
    _git(a.repo, "fetch", "-q", "origin")
    assert _git(a.repo, "for-each-ref", "--format=%(refname)", "refs/remotes").split() == [
        "refs/remotes/origin/archive/old", "refs/remotes/origin/heads/w"]
    r = a("sync")
    assert r.code == 0 and r.err == "up to date with origin\n", r.err


def test_a_remote_added_before_the_sync_base_gets_its_layout(pair):
    a, _b, _remote = pair
    _git(a.repo, "config", "--unset-all", "remote.origin.fetch")
    _git(a.repo, "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
    _git(a.repo, "update-ref", "refs/remotes/origin/w", _tip(a.repo, "w"))  # what plain git fetch made then
    _ok(a("sync"))
    assert _git(a.repo, "config", "--get-all", "remote.origin.fetch").split() == [
        "+refs/heads/*:refs/remotes/origin/heads/*", "+refs/archive/*:refs/remotes/origin/archive/*"]
    assert _git(a.repo, "for-each-ref", "--format=%(refname)", "refs/remotes").split() == [
        "refs/remotes/origin/heads/w"]


# -- renames, archives and restores travel ----------------------------------------------------


@pytest.mark.parametrize("transport", ["path", *NETWORK], indirect=True)
def test_a_rename_travels_and_does_not_come_back(transport: Transport, machines):  # noqa: F811
    a, b = machines
    remote = init_bare(transport.root / "remote.git")
    _ok(a("ask", "-S", "w", "one"))
    _ok(a("remote", "add", "origin", transport.url("remote.git")))
    _ok(a("push"))
    _ok(b("clone", transport.url("remote.git"), str(b.repo)))
    _ok(a("rename", "w", "proj"))
    _ok(a("sync"), "pushed refs/heads/proj", "removed from origin: refs/heads/w (its saves are in refs/heads/proj)")
    _ok(b("sync"), "new: proj", "renamed on origin: w -> proj")
    for _ in range(2):
        _ok(a("sync"))
        _ok(b("sync"))
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    assert _git(remote, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/proj"]
    assert _messages(b, "proj") == _messages(a, "proj")
    _all_clean(a.repo, b.repo, remote)


def test_an_archive_and_a_restore_travel(pair):
    a, b, remote = pair
    _ok(a("rm", "w"))
    _ok(a("sync"), "pushed refs/archive/w")
    _ok(b("sync"), "archived on origin: w")
    assert _git(b.repo, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/archive").split() == [
        "refs/archive/w"]
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)

    _ok(a("restore", "w"))
    _ok(a("sync"), "pushed refs/heads/w", "removed from origin: refs/archive/w")
    _ok(b("sync"), "restored on origin: w")
    assert _git(b.repo, "for-each-ref", "--format=%(refname)", "refs/heads", "refs/archive").split() == [
        "refs/heads/w"]
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    _all_clean(a.repo, b.repo, remote)


def test_archived_on_a_while_b_gained_turns_stays_live(pair):
    a, b, remote = pair
    archived = _tip(a.repo, "w")
    _ok(a("rm", "w"))
    _ok(b("ask", "-S", "w", "two from b"))
    _ok(a("sync"))
    _ok(b("sync"), "new: archive/w", "pushed refs/heads/w")  # B's turns keep w live
    _ok(a("sync"), "new: w")
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    assert _tip(remote, "refs/archive/w") == archived
    assert _messages(a, "w")[-2] == "two from b"
    _all_clean(a.repo, b.repo, remote)


def test_renamed_on_a_while_b_gained_turns_keeps_both(pair):
    a, b, remote = pair
    _ok(a("rename", "w", "proj"))
    _ok(b("ask", "-S", "w", "two from b"))
    _ok(b("sync"))  # B first this time: w moved there since A's base
    _ok(a("sync"), "new: w (it gained turns on origin after you renamed it to proj; both are kept)",
        "pushed refs/heads/proj")
    _ok(b("sync"), "new: proj (w renamed on origin, while w gained turns here: both are kept, your turns in w)")
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    assert _messages(a, "w")[-2] == "two from b" and _messages(a, "proj")[-2] == "one"
    _all_clean(a.repo, b.repo, remote)


def test_renamed_on_a_first_while_b_gained_turns_says_so_on_b(pair):
    a, b, remote = pair
    _ok(a("rename", "w", "proj"))
    _ok(b("ask", "-S", "w", "two from b"))
    _ok(a("sync"), "removed from origin: refs/heads/w")
    _ok(b("sync"), "new: proj (w renamed on origin, while w gained turns here: both are kept, your turns in w)",
        "pushed refs/heads/w")
    _ok(a("sync"), "new: w")
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)


def test_a_rename_beside_an_archive_of_the_same_commit_is_told_as_the_rename(pair):
    a, b, remote = pair
    _git(a.repo, "branch", "w-copy", "w")
    _ok(a("sync"), "pushed refs/heads/w-copy")
    _ok(b("sync"), "new: w-copy")
    _ok(a("rename", "w", "proj"))
    _ok(a("rm", "w-copy"))
    _ok(a("sync"))
    err = _ok(b("sync"), "renamed on origin: w -> proj", "archived on origin: w-copy")
    assert "gone from" not in err, err
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)


def test_push_pull_sync_clone_and_remote_list_say_what_they_did_as_json(pair, tmp_path: Path):
    """Their reports were lines on stderr alone: a script (cron's sync) had to parse sentences."""
    a, b, remote = pair

    def report(run, *args: str, code: int = 0) -> dict:
        r = run(*args, "--json")
        assert r.code == code and "Traceback" not in r.err and not r.err, r.err
        return r.json()

    assert report(a, "remote", "list") == [{"name": "origin", "url": str(remote)}]
    assert a("remote", "list").out == f"origin\t{remote}\n"
    old = _tip(a.repo, "w")
    _ok(a("ask", "-S", "w", "two"))
    pushed = report(a, "push")
    assert pushed["remote"] == "origin" and pushed["ok"] is True and pushed["pushed"] == ["refs/heads/w"]
    assert (pushed["failed"], pushed["diverged"], pushed["created_there"]) == ([], [], None)
    pulled = report(b, "pull")
    assert pulled["ok"] is True and pulled["updated"] == [{"session": "w", "old": old, "new": _tip(a.repo, "w")}]
    assert (pulled["created"], pulled["forks"], pulled["failed"]) == ([], [], [])

    _ok(a("ask", "-S", "w", "three from a"))
    _ok(b("ask", "-S", "w", "three from b"))
    _ok(a("push"))
    mine = _tip(b.repo, "w")
    refused = report(b, "push", code=1)
    assert refused["ok"] is False and refused["diverged"] == ["w"] and refused["pushed"] == []
    synced = report(b, "sync")
    fork = f"w-{mine[:7]}"
    assert synced["ok"] is True and synced["remote"] == "origin" and synced["rounds"] >= 1
    assert synced["pull"]["forks"] == [{"session": "w", "fork": fork, "commit": mine, "made_twice": False}]
    assert synced["push"]["pushed"] == [f"refs/heads/{fork}"]

    cloned = report(b, "clone", str(remote), str(tmp_path / "c.git"))
    assert cloned["path"] == str(tmp_path / "c.git") and cloned["remote"] == str(remote)
    assert sorted(cloned["created"]) == sorted(["w", fork])
    r = b("sync", "--watch", "--json")
    assert r.code == 2 and "--json prints one sync's report" in r.err, r.err


def test_push_with_nothing_to_send_says_it_as_sync_does(pair):
    a, _b, _remote = pair
    r = a("push")
    assert r.code == 0 and r.err == "up to date with origin\n", r.err


def test_restoring_over_a_live_session_names_the_way_out(pair):
    a, b, _remote = pair
    _ok(a("rm", "w"))
    _ok(b("ask", "-S", "w", "two from b"))
    _ok(a("sync"))
    _ok(b("sync"), "new: archive/w")  # B's turns keep w live beside the archive
    r = b("restore", "w")
    assert r.code == 1 and "Traceback" not in r.err, r.err
    assert "session 'w' already exists; restore it under another id: gs restore w --as NEW-ID" in r.err, r.err
    _ok(b("restore", "w", "--as", "w-old"))


# -- only sessions ------------------------------------------------------------------------------


def _plain_commit(repo: Path, ref: str, file: str) -> None:
    """A commit made by plain git: one file ``file`` that is not a session log."""
    blob = _git(repo, "hash-object", "-w", "--stdin", input="not a session\n").strip()
    tree = _git(repo, "mktree", input=f"100644 blob {blob}\t{file}\n").strip()
    commit = _git(repo, "-c", "user.name=x", "-c", "user.email=x@x", "commit-tree", tree, "-m", "plain").strip()
    _git(repo, "update-ref", ref, commit)


def test_refs_that_are_no_sessions_are_skipped_with_one_warning(pair):
    a, b, remote = pair
    _plain_commit(remote, "refs/heads/feature/x", "README")
    _plain_commit(remote, "refs/heads/nosess", "README")
    _plain_commit(a.repo, "refs/heads/feature/y", "main.c")
    _plain_commit(a.repo, "refs/heads/junk", "main.c")
    _ok(a("ask", "-S", "w", "two"))
    err = _ok(a("sync"), "pushed refs/heads/w")
    lines = err.splitlines()
    theirs = [line for line in lines if "refs of origin" in line]
    mine = [line for line in lines if "local refs" in line]
    assert theirs == ["skipped 2 refs of origin that are not sessions: refs/heads/feature/x (not a session id), "
                      "refs/heads/nosess (no session.jsonl in its tree)"], err
    assert mine == ["skipped 2 local refs that are not sessions: refs/heads/feature/y (not a session id), "
                    "refs/heads/junk (no session.jsonl in its tree)"], err
    r = a("sync")  # the warnings again, and nothing else to do
    assert r.code == 0 and r.err.splitlines()[-1] == "up to date with origin" and len(r.err.splitlines()) == 3, r.err
    _ok(b("sync"), "updated: w")
    assert _tip(b.repo, "w") == _tip(a.repo, "w") == _tip(remote, "w")
    assert "nosess" not in _git(b.repo, "branch") and "feature" not in _git(b.repo, "branch")
    assert "junk" not in _git(remote, "branch") and "feature/y" not in _git(remote, "branch")
    assert "feature/x" in _git(remote, "branch")  # a stranger there is left alone
    _ok(a("ask", "-S", "w", "three"))
    with GitStore(a.repo) as store:  # strangers never count as the remote moving: one round
        report = Remotes(store).sync("origin")
    assert report.rounds == 1 and report.push.pushed == ["refs/heads/w"] and report.ok


def test_push_only_sends_the_sessions_named(pair, tmp_path: Path):
    a, _b, _remote = pair
    _ok(a("ask", "-S", "other", "not shared"))
    _ok(a("ask", "-S", "old", "archived, shared"))
    _ok(a("rm", "old"))
    elsewhere = init_bare(tmp_path / "elsewhere.git")
    _plain_commit(elsewhere, "refs/heads/main", "README")  # a gist's own branch
    with GitStore(a.repo) as store:
        report = Remotes(store).push(str(elsewhere), only={"w", "old"})
    assert report.pushed == ["refs/archive/old", "refs/heads/w"] and not report.failed and not report.skipped
    assert _git(elsewhere, "for-each-ref", "--format=%(refname)").split() == [
        "refs/archive/old", "refs/heads/main", "refs/heads/w"]


def test_what_plain_git_deleted_on_one_side_is_never_lost(pair):
    a, b, remote = pair
    _ok(a("ask", "-S", "gone-there", "one"))
    _ok(a("ask", "-S", "gone-here", "one"))
    _ok(a("sync"))
    _ok(b("sync"))
    _git(remote, "update-ref", "-d", "refs/heads/gone-there")  # no other ref holds its commits
    _git(a.repo, "update-ref", "-d", "refs/heads/gone-here")
    _ok(a("sync"), "pushed refs/heads/gone-there", "new: gone-here")
    _ok(b("sync"))
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    assert "refs/heads/gone-there " in _refs(remote) and "refs/heads/gone-here " in _refs(remote)


def test_an_archive_archived_on_both_sides_with_other_turns_keeps_both(pair):
    a, b, remote = pair
    _ok(a("ask", "-S", "w", "two from a"))
    _ok(b("ask", "-S", "w", "two from b"))
    for run in (a, b):
        _ok(run("rm", "w"))
    mine = _tip(b.repo, "refs/archive/w")
    _ok(a("sync"))
    _ok(b("sync"), f"archive/w: diverged; your side is archived as w-{mine[:7]} (restore: gs restore w-{mine[:7]})")
    _ok(a("sync"), f"new: archive/w-{mine[:7]}")
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    assert _tip(remote, f"refs/archive/w-{mine[:7]}") == mine
    _all_clean(a.repo, b.repo, remote)


@pytest.mark.parametrize("transport", ["path", "file", "git"], indirect=True)
def test_a_refused_ref_is_reported_in_the_servers_words_and_the_rest_goes(transport: Transport, machines):  # noqa: F811
    a, _b = machines
    remote = init_bare(transport.root / "remote.git")
    hook = remote / "hooks" / "update"
    hook.write_text('#!/bin/sh\nif [ "$1" = refs/heads/secret ]; then echo "secret stays home" >&2; exit 1; fi\n')
    hook.chmod(0o755)
    _ok(a("ask", "-S", "w", "one"))
    _ok(a("ask", "-S", "secret", "two"))
    _ok(a("remote", "add", "origin", transport.url("remote.git")))
    r = a("sync")
    assert r.code == 1 and "pushed refs/heads/w to origin" in r.err, r.err
    assert "refused: refs/heads/secret: hook declined" in r.err and "secret stays home" in r.err, r.err
    assert _git(remote, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/w"]


# -- a live writer; a remote moving meanwhile ---------------------------------------------------


def test_a_session_with_a_live_writer_or_a_crashed_turn_waits_for_the_next_sync(pair):
    a, b, remote = pair
    _ok(a("ask", "-S", "w", "two from a"))
    _ok(a("sync"))
    before = _tip(b.repo, "w")
    with GitStore(b.repo) as store, store.lock("w"):  # origin is ahead: no failure, only a wait
        err = _ok(b("sync"), "w: will sync after the gs process writing it ends")
        assert "refused" not in err and "newer" not in err
    assert _tip(b.repo, "w") == before
    _ok(b("ask", "-S", "w", "two from b"))
    mine = _tip(b.repo, "w")
    with GitStore(b.repo) as store:
        lock = store.lock("w")
        assert lock.try_acquire()
        try:
            _ok(b("sync"), "w: will sync after the gs process writing it ends: pid ")
        finally:
            lock.release()
        assert _tip(b.repo, "w") == mine and _tip(remote, "w") == _tip(a.repo, "w")
        assert "w-" not in _git(b.repo, "branch")
        store.journal("w").begin(mine, None)  # a turn a crashed gs left behind
        store.journal("w").close()
        _ok(b("sync"), "w: will sync after the turn a stopped gs left in its journal is saved (gs show w saves it)")
        assert _tip(b.repo, "w") == mine
    _ok(b("show", "w"))  # as the line says
    assert not (b.repo / "gs" / "journal" / "w.jsonl").exists()
    _ok(b("sync"), f"w: diverged; your turns are in w-{mine[:7]}")
    _ok(a("sync"))
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)


def test_a_remote_that_moves_between_pull_and_push_gets_another_round(machines, gs, tmp_path: Path):  # noqa: F811
    a, b = machines
    root = tmp_path / "srv"
    root.mkdir()
    remote = init_bare(root / "remote.git")
    c_repo = tmp_path / "c.git"
    hook = tmp_path / "access-hook"
    mark = tmp_path / "moved"
    # git daemon runs this before each request: before B's first push, machine C pushes first
    served = tmp_path / "served"
    hook.write_text(f'#!/bin/sh\necho "$1" >> {served}\n'
                    f'if [ "$1" = receive-pack ] && [ ! -e {mark} ]; then touch {mark}; '
                    f'git -C {c_repo} push -q {remote} w >/dev/null 2>&1; fi\nexit 0\n')
    hook.chmod(0o755)
    with GitDaemon(root, access_hook=hook) as daemon:
        url = daemon.url("remote.git")
        _ok(a("ask", "-S", "w", "one"))
        _ok(a("remote", "add", "origin", url))
        mark.touch()
        _ok(a("sync"))
        _ok(b("clone", url, str(b.repo)))
        _ok(gs("--repo", str(c_repo), "clone", url, str(c_repo)))
        _ok(gs("--repo", str(c_repo), "ask", "w", "two from c"))
        _ok(b("ask", "-S", "w", "two from b"))
        mine = _tip(b.repo, "w")
        mark.unlink()
        served.unlink()
        err = _ok(b("sync"), f"w: diverged; your turns are in w-{mine[:7]}", f"pushed refs/heads/w-{mine[:7]}")
        assert mark.exists() and "refused" not in err
        # round 1: fetch, push (w moved there meanwhile: not sent); round 2: fetch, fork, push
        assert served.read_text().split() == ["upload-pack", "receive-pack", "upload-pack", "receive-pack"]
        assert _tip(remote, "w") == _tip(c_repo, "w") == _tip(b.repo, "w")
        assert _refs(b.repo) == _refs(remote)
        _ok(a("sync"))
        assert _refs(a.repo) == _refs(remote)
        _all_clean(a.repo, b.repo, remote)


# -- another gs syncing at the same time ------------------------------------------------------


def test_a_sync_base_another_gs_holds_locked_makes_another_round_not_a_crash(pair):
    a, _b, remote = pair
    _ok(a("ask", "-S", "w", "two"))
    lock = a.repo / "refs" / "remotes" / "origin" / "heads" / "w.lock"  # another gs moving it
    lock.parent.mkdir(parents=True, exist_ok=True)
    with writing(a.repo):  # the other gs, writing there since before it took the lock
        lock.write_text("")
        r = a("sync")
    assert r.code == 1 and "Traceback" not in r.err, r.err
    assert "pushed refs/heads/w to origin" in r.err and "run gs sync again" in r.err, r.err
    lock.unlink()
    r = a("sync")
    assert r.code == 0 and r.err == "up to date with origin\n", r.err
    assert _tip(a.repo, "refs/remotes/origin/heads/w") == _tip(remote, "w") == _tip(a.repo, "w")


@pytest.mark.parametrize("transport", ["path", "git"], indirect=True)
def test_a_remotes_ref_another_gs_holds_locked_waits_and_the_rest_goes(transport: Transport, machines):  # noqa: F811
    a, b = machines
    remote = init_bare(transport.root / "remote.git")
    url = transport.url("remote.git")
    _ok(a("ask", "-S", "w", "one"))
    _ok(a("remote", "add", "origin", url))
    _ok(a("push"))
    _ok(b("clone", url, str(b.repo)))
    _ok(a("ask", "-S", "w", "two"))
    _ok(a("ask", "-S", "other", "one"))
    lock = remote / "refs" / "heads" / "w.lock"  # another gs pushing w right now
    with writing(remote):  # the other gs, writing there since before it took the lock
        lock.write_text("")
        r = a("sync")
    assert r.code == 1 and "Traceback" not in r.err and "b'" not in r.err, r.err
    assert "run gs sync again" in r.err and "refused" not in r.err, r.err
    assert "refs/heads/other " in _refs(remote)
    lock.unlink()
    _ok(a("sync"), "pushed refs/heads/w")
    _ok(b("sync"), "new: other", "updated: w")
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)


# -- one refused ref does not stall the rest --------------------------------------------------


@pytest.mark.parametrize("transport", ["git"], indirect=True)
def test_a_pre_receive_hook_refusing_one_ref_lets_the_others_through(transport: Transport, machines):  # noqa: F811
    a, _b = machines
    remote = init_bare(transport.root / "remote.git")
    hook = remote / "hooks" / "pre-receive"  # runs once for the whole request: it refuses it all
    hook.write_text('#!/bin/sh\nwhile read old new ref; do case "$ref" in refs/heads/secret*) '
                    'echo "no secrets here" >&2; exit 1;; esac; done\nexit 0\n')
    hook.chmod(0o755)
    for sid in ("w", "secret", "s1"):
        _ok(a("ask", "-S", sid, "one"))
    _ok(a("remote", "add", "origin", transport.url("remote.git")))
    r = a("sync")
    assert r.code == 1 and "pushed refs/heads/w to origin" in r.err and "pushed refs/heads/s1 to origin" in r.err, r.err
    refusals = [line for line in r.err.splitlines() if line.startswith("refused:")]
    assert refusals == [
        "refused: refs/heads/secret: pre-receive hook declined (the server said: no secrets here)"], r.err
    assert _git(remote, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/s1", "refs/heads/w"]
    r = a("sync")  # the refused one alone: one request, refused again
    assert r.code == 1 and "refused: refs/heads/secret: pre-receive hook declined" in r.err, r.err


@pytest.mark.parametrize("transport", ["git"], indirect=True)
def test_a_remote_that_refuses_deletions_keeps_the_old_name_said_once(transport: Transport, machines):  # noqa: F811
    a, b = machines
    remote = init_bare(transport.root / "remote.git")
    _git(remote, "config", "receive.denyDeletes", "true")
    url = transport.url("remote.git")
    _ok(a("ask", "-S", "w", "one"))
    _ok(a("remote", "add", "origin", url))
    _ok(a("push"))
    _ok(b("clone", url, str(b.repo)))
    _ok(a("rename", "w", "proj"))
    err = _ok(a("sync"), "pushed refs/heads/proj to origin",
              "origin refuses deletions (receive.denyDeletes), so it keeps the old name refs/heads/w "
              "(its saves are in refs/heads/proj); keep them there, or run git config receive.denyDeletes false "
              "on the server, then gs push origin")
    assert "refused" not in err, err
    for _ in range(2):  # said once; the old name does not come back here
        r = a("sync")
        assert r.code == 0 and r.err == "up to date with origin\n", r.err
    assert _git(a.repo, "for-each-ref", "--format=%(refname)", "refs/heads").split() == ["refs/heads/proj"]
    _ok(b("sync"), "new: proj")
    _git(remote, "config", "receive.denyDeletes", "false")
    _ok(a("push"), "removed from origin: refs/heads/w (its saves are in refs/heads/proj)")
    _ok(b("sync"), "renamed on origin: w -> proj")
    r = a("sync")
    assert r.code == 0 and r.err == "up to date with origin\n", r.err
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)


# -- a remote named by its URL ----------------------------------------------------------------


def test_the_url_of_a_configured_remote_is_that_remote_with_its_base(pair, tmp_path: Path):
    a, b, remote = pair
    _ok(a("ask", "-S", "old", "to archive"))
    _ok(a("sync"))
    _ok(b("sync"), "new: old")
    _ok(a("rename", "w", "proj"))
    _ok(a("rm", "old"))
    err = _ok(a("sync", f"file://{remote}/"), "pushed refs/heads/proj to origin",
              "removed from origin: refs/heads/w (its saves are in refs/heads/proj)",
              "removed from origin: refs/heads/old (its saves are in refs/archive/old)")
    assert "not a configured remote" not in err, err
    _ok(b("sync", str(remote)), "renamed on origin: w -> proj", "archived on origin: old")
    r = a("sync", str(remote))
    assert r.code == 0 and r.err == "up to date with origin\n", r.err
    assert _refs(a.repo) == _refs(b.repo) == _refs(remote)
    elsewhere = init_bare(tmp_path / "elsewhere.git")
    _ok(a("push", str(elsewhere)), f"{elsewhere} is not a configured remote: renames and archives are not sent; "
                                   "add it with gs remote add NAME URL")


def test_a_pack_another_gs_is_writing_here_is_one_line_not_a_crash(pair, gs, tmp_path: Path):
    a, b, remote = pair
    _ok(b("ask", "-S", "w", "two from b"))
    _ok(b("sync"))
    twin = tmp_path / "twin.git"  # the same repo: the same fetch writes the same pack
    shutil.copytree(a.repo, twin)
    packs = set((a.repo / "objects" / "pack").glob("*.pack"))
    _ok(gs("--repo", str(twin), "pull"), "updated: w")
    new = [p for p in (twin / "objects" / "pack").glob("*.pack")
           if a.repo / "objects" / "pack" / p.name not in packs]
    assert len(new) == 1
    with writing(a.repo):  # another gs, writing there since before it took the lock
        (a.repo / "objects" / "pack" / new[0].with_suffix(".idx.lock").name).write_text("")  # it writes it
        r = a("sync")
    assert r.code == 1 and "Traceback" not in r.err, r.err
    assert "another gs is bringing the same saves here right now" in r.err and "sync again" in r.err, r.err
    (a.repo / "objects" / "pack" / new[0].with_suffix(".idx.lock").name).unlink()
    _ok(a("sync"), "updated: w")
