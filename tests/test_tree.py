"""The family tree of a session: HEAD as the current session,
gitsessions.history.tree, gs tree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from gitsessions.history.tree import Node, family, turn_saves
from gitsessions.log.events import Event, make_header
from gitsessions.store import GitStore
from gitsessions.writer.forking import fork


def _shape(node: Node) -> list[tuple[int, str, str | None, int | None, bool]]:
    return [(d, n.session_id, n.parent, n.from_turn, n.archived) for d, n in node.walk()]


def _check_family(root: Node) -> None:
    """The family :func:`forked` makes, as :func:`family` finds it from any of its members."""
    assert _shape(root) == [
        (0, "work", None, None, False),
        (1, "alt", "work", 1, True),
        (1, "work-2", "work", 2, False),
        (2, "work-2-1", "work-2", 3, False),
    ]
    work2 = root.find("work-2")
    assert work2 is not None
    assert (work2.turns, work2.prompt, work2.title) == (4, "shorter answer please", "first question")
    assert root.find("other") is None and root.turns == 3


@pytest.fixture
def forked(gs, git):
    """work (3 turns); work-2 forked after turn 2 with two of its own; alt archived; other; work-2-1 off work-2."""
    for prompt in ("first question", "second question", "third question"):
        assert gs("ask", "-S", "work", prompt).code == 0
    assert gs("ask", "-S", "work~1", "shorter answer please", "--fork", "work-2").code == 0
    assert gs("ask", "-S", "work-2", "and again").code == 0
    assert gs("fork", "work~2", "alt").code == 0
    assert gs("rm", "alt").code == 0
    assert gs("ask", "-S", "other", "unrelated").code == 0
    assert gs("fork", "work-2~1", "work-2-1").code == 0  # the current session now
    return gs


def test_the_family_is_every_session_sharing_history(forked, repo_path: Path):
    with GitStore(repo_path) as store:
        root = family(store, "work-2-1")
        assert family(store, "alt").tip == root.tip  # an archived member finds the same family
    _check_family(root)
    assert root.prompt is None


def test_the_family_is_the_same_on_any_store(any_store, say):
    """The family of the fixture above, made through the writer instead of gs: on git and in memory."""
    store = any_store.store
    say(store, "work", "first question", "second question", "third question")
    say(store, "work~1", "shorter answer please", "and again", fork_as="work-2")
    fork(store, store.resolve("work~2"), "alt")
    store.archive("alt")
    say(store, "other", "unrelated")
    fork(store, store.resolve("work-2~1"), "work-2-1")
    with any_store.again() as fresh:
        root = family(fresh, "work-2-1")
        assert family(fresh, "alt").tip == root.tip
        saves = turn_saves(fresh, root.find("work-2").tip, root.find("work-2").fork_commit,  # type: ignore[union-attr]
                           root.find("work-2").from_turn)  # type: ignore[union-attr]
    _check_family(root)
    assert [(s.turn, s.subject) for s in saves] == [(3, "turn 3: shorter answer please"), (4, "turn 4: and again")]


def test_head_names_the_session_last_saved(gs, git, repo_path: Path):
    assert gs("ask", "-S", "work", "hi").code == 0
    assert gs("ask", "-S", "other", "hello").code == 0
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/other"
    assert gs("ask", "-S", "work", "again").code == 0
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/work"
    with GitStore(repo_path) as store:
        assert store.current() == "work"
        assert family(store, "work").current
    assert git("log", "--format=%s", "-1").strip() == "turn 2: again"  # git reads HEAD as the session
    git("fsck", "--strict")


def test_a_head_that_names_no_session_is_no_current_session(gs, git, repo_path: Path):
    assert gs("ask", "-S", "work", "hi").code == 0
    git("symbolic-ref", "HEAD", "refs/heads/master")
    with GitStore(repo_path) as store:
        assert store.current() is None
    git("update-ref", "--no-deref", "HEAD", git("rev-parse", "work").strip())  # detached
    with GitStore(repo_path) as store:
        assert store.current() is None


def test_a_read_only_head_never_fails_a_save(gs, git, repo_path: Path):
    assert gs("ask", "-S", "work", "hi").code == 0
    head = repo_path / "HEAD"
    (repo_path / "HEAD.lock").write_text("held by someone else\n")  # git's lock: HEAD cannot be written now
    try:
        assert gs("ask", "-S", "other", "hello").code == 0
    finally:
        (repo_path / "HEAD.lock").unlink()
    assert head.read_text() == "ref: refs/heads/work\n"
    assert git("rev-parse", "other")


def test_commits_plain_git_made_on_top_are_understood(forked, git, repo_path: Path):
    tree = git("rev-parse", "work-2^{tree}").strip()
    top = subprocess.run(["git", "-C", str(repo_path), "commit-tree", tree, "-p", "work-2", "-m", "by hand"],
                         capture_output=True, text=True, check=True,
                         env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
                              "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin"}).stdout.strip()
    git("update-ref", "refs/heads/work-2", top)
    git("branch", "copy", "work~1")  # a branch plain git made on a session's commit: no lineage trailer
    with GitStore(repo_path) as store:
        root = family(store, "copy")
    assert _shape(root) == [
        (0, "work", None, None, False),
        (1, "alt", "work", 1, True),
        (1, "copy", "work", 2, False),
        (1, "work-2", "work", 2, False),
        (2, "work-2-1", "work-2", 3, False),
    ]
    assert root.find("work-2").prompt == "shorter answer please"  # type: ignore[union-attr]


def test_a_renamed_parent_is_still_the_parent(forked, git, repo_path: Path):
    git("branch", "copy", "work~1")  # saved in work too, before the rename: not the renamed one
    assert forked("rename", "work", "main-line").code == 0
    with GitStore(repo_path) as store:
        root = family(store, "work-2")
    assert [(n.session_id, n.parent, n.from_turn) for _d, n in root.walk()] == [
        ("main-line", None, None), ("alt", "main-line", 1), ("copy", "main-line", 2), ("work-2", "main-line", 2),
        ("work-2-1", "work-2", 3)]


def test_a_name_used_again_after_a_rename_is_not_the_old_sessions_parent(forked, repo_path: Path):
    """work-2-1 left work-2, renamed w2 since; a new work-2 (a fork of work at turn 1) does not
    hold work-2-1's fork point, so w2 is still its parent."""
    assert forked("rename", "work-2", "w2").code == 0
    assert forked("ask", "-S", "work~2", "a new one", "--fork", "work-2").code == 0
    with GitStore(repo_path) as store:
        root = family(store, "work")
    assert [(n.session_id, n.parent, n.from_turn) for _d, n in root.walk()] == [
        ("work", None, None), ("alt", "work", 1), ("work-2", "work", 1), ("w2", "work", 2),
        ("work-2-1", "w2", 3)]


def test_gs_tree_draws_the_family(forked):
    r = forked("tree", "work-2-1")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert [re.match(r"[│├└─ ]*\S+", line).group() for line in lines] == [  # type: ignore[union-attr]
        "work", "├─ alt", "└─ work-2", "   └─ work-2-1"]
    assert lines[0].startswith('work  "first question"  3 turns · ')
    assert "├─ alt  (from work at turn 1)  first question  1 turn · " in lines[1] and lines[1].endswith("[archived]")
    assert '└─ work-2  (from work at turn 2)  "shorter answer please"  4 turns' in lines[2]
    assert lines[3].startswith("   └─ work-2-1  (from work-2 at turn 3)") and lines[3].endswith("← current")
    assert forked("tree").out == r.out  # no SESSION: the current one's family (HEAD names work-2-1)


def test_gs_tree_json_is_the_same_tree(forked, git):
    r = forked("tree", "alt", "--json")
    assert r.code == 0, r.err
    root = r.json()
    assert (root["id"], root["parent"], root["from_turn"], root["current"]) == ("work", None, None, False)
    assert [c["id"] for c in root["children"]] == ["alt", "work-2"]
    work2 = root["children"][1]
    assert (work2["parent"], work2["from_turn"], work2["prompt"], work2["turns"]) == \
        ("work", 2, "shorter answer please", 4)
    assert work2["fork_commit"] == git("rev-parse", "work~1").strip()
    assert work2["tip"] == git("rev-parse", "work-2").strip()
    assert root["children"][0]["archived"] is True
    leaf = work2["children"][0]
    assert (leaf["id"], leaf["current"], leaf["children"]) == ("work-2-1", True, [])
    assert set(leaf) == {"id", "title", "turns", "saved", "tip", "parent", "from_turn", "fork_commit", "archived",
                         "current", "prompt", "error", "children"}


def test_commands_without_a_rev_use_the_current_session(forked, git):
    assert forked("ask", "-S", "work", "fourth question").code == 0
    assert git("symbolic-ref", "--short", "HEAD").strip() == "work"
    assert forked("show").out == forked("show", "work").out
    assert forked("log", "--oneline").out == forked("log", "work", "--oneline").out
    assert forked("export", "-f", "jsonl").out == forked("export", "work", "-f", "jsonl").out


def test_without_a_current_session_a_command_says_what_to_do(gs, git):
    assert gs("ask", "-S", "work", "hi").code == 0
    git("symbolic-ref", "HEAD", "refs/heads/master")
    for command in ("show", "log", "tree", "export", "status", "reflog"):
        r = gs(command)
        assert r.code == 1 and f"gs {command} SESSION" in r.err and "Traceback" not in r.err, (command, r.err)


def test_opening_a_session_makes_it_current_before_anything_is_saved(gs, git):
    assert gs("ask", "-S", "work", "hi").code == 0
    assert gs("ask", "-S", "other", "hello").code == 0
    tips = git("for-each-ref", "refs/heads")
    assert gs("chat", "work", input="/exit\n").code == 0  # opened, nothing sent
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/work"
    assert git("for-each-ref", "refs/heads") == tips  # no ref moved
    git("fsck", "--strict")


def test_chat_continue_resumes_the_current_session(gs, git):
    assert gs("ask", "-S", "work", "hi").code == 0
    assert gs("ask", "-S", "other", "hello").code == 0
    git("symbolic-ref", "HEAD", "refs/heads/work")  # as an open of work leaves it
    r = gs("chat", "-c", input="next\n")
    assert r.code == 0, r.err
    assert "session work saved" in r.err
    git("symbolic-ref", "HEAD", "refs/heads/master")  # names none: the session saved last
    assert gs("ask", "-S", "other", "again").code == 0
    git("symbolic-ref", "HEAD", "refs/heads/master")
    r = gs("chat", "-c", input="more\n")
    assert "session other saved" in r.err


def test_status_says_where_the_current_session_stands(gs, git, tmp_path: Path, repo_path: Path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    assert gs("ask", "-S", "work", "one").code == 0
    r = gs("status")
    assert r.code == 0, r.err
    tip = git("rev-parse", "work").strip()
    assert r.out.splitlines() == [
        "current session: work", f"tip: {tip[:7]} turn 1: one ({r.out.split('(')[1].split(')')[0]})",
        "journal: empty (every turn is saved)", "remotes: none track this session (gs push sends it)"]
    assert gs("remote", "add", "origin", str(remote)).code == 0 and gs("push").code == 0
    assert "origin: up to date with origin/heads/work" in gs("status").out
    assert gs("ask", "-S", "work", "two").code == 0 and gs("ask", "-S", "work", "three").code == 0
    assert "origin: 2 saves ahead, 0 behind origin/heads/work (gs sync origin)" in gs("status").out
    theirs = subprocess.run(["git", "-C", str(repo_path), "commit-tree", "work~2^{tree}", "-p", "work~2", "-m", "x"],
                            capture_output=True, text=True, check=True,
                            env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
                                 "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin"}).stdout.strip()
    git("update-ref", "refs/remotes/origin/heads/work", theirs)  # what a fetch saw another machine save
    assert "origin: 2 saves ahead, 1 behind origin/heads/work (gs sync origin)" in gs("status").out
    assert gs("ask", "-S", "other", "hi").code == 0
    r = gs("status", "work", "--json")
    assert r.json()["current"] is False
    assert r.json()["remotes"] == {"origin": {"tip": theirs, "ahead": 2, "behind": 1, "shared_history": True}}
    assert "session: work (the current session is other)" in gs("status", "work").out
    journal = repo_path / "gs" / "journal" / "work.jsonl"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_text("")
    assert gs("status", "work", "--json").json()["journal"] is True


def test_a_plain_clone_of_the_repo_checks_out_the_current_session(gs, git, tmp_path: Path):
    assert gs("ask", "-S", "work", "hi").code == 0
    assert gs("ask", "-S", "other", "hello").code == 0
    clone = tmp_path / "clone"
    r = subprocess.run(["git", "clone", "-q", str(git("rev-parse", "--absolute-git-dir").strip()), str(clone)],
                       capture_output=True, text=True, check=True)
    assert "warning" not in r.stderr
    assert subprocess.run(["git", "-C", str(clone), "branch", "--show-current"], capture_output=True, text=True,
                          check=True).stdout.strip() == "other"
    assert '"id":"other"' in (clone / "session.jsonl").read_text()


def test_a_diverged_pull_stays_in_the_family(machine, tmp_path: Path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    a, b = machine("a"), machine("b")
    assert a("ask", "-S", "w", "one").code == 0 and a("remote", "add", "origin", str(remote)).code == 0
    assert a("push").code == 0
    assert b("clone", str(remote), str(b.repo)).code == 0
    assert b("ask", "-S", "w", "two on b").code == 0 and b("push").code == 0
    assert a("ask", "-S", "w", "two on a").code == 0 and a("ask", "-S", "w", "three on a").code == 0
    assert a("pull").code == 0
    root = a("tree", "w", "--json").json()
    assert root["id"] == "w" and root["turns"] == 2  # the remote's side keeps the name
    (mine,) = root["children"]
    assert mine["id"].startswith("w-") and (mine["from_turn"], mine["turns"], mine["prompt"]) == (1, 3, "two on a")


def test_archiving_the_current_session_makes_the_one_saved_last_current(gs, git, tmp_path: Path):
    assert gs("ask", "-S", "work", "hi").code == 0
    assert gs("ask", "-S", "other", "hello").code == 0
    assert gs("ask", "-S", "e", "echo").code == 0
    r = gs("rm", "e")
    now = git("symbolic-ref", "--short", "HEAD").strip()
    assert now in ("work", "other")  # saved last (within one second: either)
    assert r.code == 0 and f"the current session is now {now}" in r.err, r.err
    assert git("log", "--format=%s", "-1").strip() == git("log", "--format=%s", "-1", now).strip()
    clone = tmp_path / "clone"
    r2 = subprocess.run(["git", "clone", "-q", git("rev-parse", "--absolute-git-dir").strip(), str(clone)],
                        capture_output=True, text=True, check=True)
    assert "warning" not in r2.stderr
    assert gs("rename", now, "renamed").code == 0  # a rename: HEAD follows the new name
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/renamed"
    assert gs("show").out == gs("show", "renamed").out
    git("fsck", "--strict")


def test_without_a_current_session_the_message_says_why(gs, git):
    assert gs("ask", "-S", "e", "echo").code == 0
    assert gs("rm", "e").code == 0  # the last session: HEAD still names it
    for command in ("show", "log", "status", "tree", "reflog", "export"):
        r = gs(command)
        assert r.code == 1 and "the current session e was archived" in r.err and "gs restore e" in r.err, r.err
        assert "yet" not in r.err
    assert gs("ask", "-S", "w", "hi").code == 0
    git("update-ref", "--no-deref", "HEAD", git("rev-parse", "w").strip())
    r = gs("show")
    assert r.code == 1 and "HEAD is detached" in r.err and "gs show SESSION" in r.err, r.err
    git("symbolic-ref", "HEAD", "refs/archive/e")
    r = gs("tree")
    assert r.code == 1 and "the current session e was archived" in r.err and "gs restore e" in r.err, r.err
    git("symbolic-ref", "HEAD", "refs/heads/master")
    assert "HEAD names refs/heads/master, which is no session" in gs("log").err


def test_the_archive_named_is_the_current_session_s_own(gs, git):
    assert gs("ask", "-S", "work", "hi").code == 0 and gs("fork", "work", "work-1").code == 0
    assert gs("rm", "work-1").code == 0 and gs("rm", "work").code == 0  # both archived, work-1 is another session
    r = gs("show")
    assert "the current session work was archived" in r.err and "'gs restore work'" in r.err, r.err
    git("branch", "work", "refs/archive/work")  # a work again (plain git may reuse an archived name)
    assert gs("rm", "work").code == 0  # archived too: as work-2
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/work"
    assert "'gs restore work-2'" in gs("show").err


def test_an_empty_repo_says_there_are_no_sessions_yet(gs):
    for args in (("show",), ("status",), ("chat", "-c")):
        r = gs(*args)
        assert r.code == 1 and "there are no sessions yet: start one with 'gs chat'" in r.err, r.err
        assert "(most recent)" not in r.err


def test_status_sees_a_first_turn_that_is_only_in_the_journal(gs, repo_path: Path):
    assert gs("ask", "-S", "work", "hi").code == 0
    with GitStore(repo_path) as store:  # what kill -9 during the first turn of 'gs ask jr "kill me"' leaves
        journal = store.journal("jr")
        journal.begin(None, make_header("jr", created=1))
        for i, (kind, data) in enumerate([("turn/start", {"turn": 0}), ("user/message", {"content": "kill me"})]):
            journal.append_event(Event(i, 1_700_000_000_000 + i, kind, data))
        journal.close()
    r = gs("status", "jr")
    assert r.code == 0, r.err
    assert r.out.splitlines()[:3] == ["session: jr (the current session is work)",
                                      "tip: none yet (its first turn is not saved)",
                                      "journal: a turn not yet saved (opening the session saves it: gs chat jr)"]
    row = gs("status", "jr", "--json").json()
    assert (row["tip"], row["subject"], row["saved"], row["journal"]) == (None, None, None, True)


def test_tree_reflog_and_status_take_a_session_id_and_know_archived_ones(forked):
    for command in ("tree", "reflog", "status"):
        r = forked(command, "work@{1}")
        assert r.code == 1 and f"gs {command} takes a session id, not a revision: 'work@{{1}}'" in r.err, r.err
        assert f"gs {command} work" in r.err
    r = forked("status", "alt")
    assert r.code == 1 and "session 'alt' is archived" in r.err and "gs restore alt" in r.err, r.err
    assert forked("tree", "alt").out == forked("tree", "work").out  # its family, drawn with it


def _commit_by_hand(repo: Path, tree: str, parent: str, message: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "commit-tree", tree, "-p", parent, "-m", message],
                          capture_output=True, text=True, check=True,
                          env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
                               "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin"}).stdout.strip()


def test_the_tree_orders_forks_as_people_count_and_places_plain_branches(gs, git, repo_path: Path):
    assert gs("ask", "-S", "work", "one").code == 0
    for i in (2, 10, 3):
        assert gs("fork", "work", f"work-{i}").code == 0
    assert gs("ask", "-S", "work", "two").code == 0 and gs("fork", "work", "kid").code == 0
    assert gs("ask", "-S", "kid", "kid turn").code == 0
    git("branch", "plain", "kid")  # plain git on a fork's tip: a branch of kid, not of work
    blob = subprocess.run(["git", "-C", str(repo_path), "hash-object", "-w", "--stdin"], input="{not json\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    broken = subprocess.run(["git", "-C", str(repo_path), "mktree"], input=f"100644 blob {blob}\tsession.jsonl\n",
                            capture_output=True, text=True, check=True).stdout.strip()
    git("update-ref", "refs/heads/junk", _commit_by_hand(repo_path, broken, git("rev-parse", "kid").strip(), "oops"))
    root = gs("tree", "work", "--json").json()
    assert [c["id"] for c in root["children"]] == ["work-2", "work-3", "work-10", "kid"]
    kid = root["children"][3]
    assert sorted(c["id"] for c in kid["children"]) == ["junk", "plain"]
    junk = next(c for c in kid["children"] if c["id"] == "junk")
    assert junk["error"] and junk["parent"] == "kid"
    r = gs("tree", "junk")
    assert r.code == 0, r.err
    assert "junk  (from kid at turn 3)" in r.out and "[unreadable: " in r.out, r.out


def test_a_fork_without_turns_of_its_own_shows_its_inherited_title_unquoted(gs):
    assert gs("ask", "-S", "work", "first question").code == 0 and gs("ask", "-S", "work", "second").code == 0
    assert gs("restore", "work@{1}").code == 0
    line = next(line for line in gs("tree", "work").out.splitlines() if "work-1" in line)
    assert "(from work at turn 1)  first question  1 turn" in line and '"' not in line, line


def test_help_names_the_optional_session_once(gs):
    for command in ("tree", "reflog", "status"):
        r = gs(command, "--help")
        assert r.code == 0 and f"{command} [OPTIONS] [SESSION]" in r.out and "[[SESSION]]" not in r.out, r.out


def _list_rows(run) -> dict[str, tuple[str, str]]:
    """``gs list``'s table: session -> (what follows its id: the lineage, title as shown)."""
    r = run("list")
    assert r.code == 0, r.err
    header, *lines = r.out.splitlines()
    start = header.index("TITLE")
    rows = {}
    for line in lines:
        name = line.split()[0]
        lineage = line.split("  ")[0].removeprefix(name).strip()
        rows[name] = (lineage, line[start:].strip())
    return rows


def test_gs_list_names_a_fork_by_its_own_prompt_and_its_parent_by_its_name_now(forked, git):
    """One rule with gs tree: forks of work do not all read "first question", and a rename is followed."""
    short = {n: git("rev-parse", "--short=7", f"{n}").strip() for n in ("work~1", "work-2~1")}
    rows = _list_rows(forked)
    assert rows["work"] == ("", "first question")
    assert rows["work-2"] == (f"← work@{short['work~1']}", "shorter answer please")
    assert rows["work-2-1"] == (f"← work-2@{short['work-2~1']}", "first question")  # none of its own yet
    assert rows["other"] == ("", "unrelated")
    assert forked("title", "work-2", "Short answers").code == 0  # a title of its own wins
    assert forked("rename", "work", "main-line").code == 0
    rows = _list_rows(forked)
    assert rows["work-2"] == (f"← main-line@{short['work~1']}", "Short answers")
    assert rows["work-2-1"][0] == f"← work-2@{short['work-2~1']}"
    assert forked("ask", "-S", "work", "a new session of the old name").code == 0  # not work-2's parent
    assert _list_rows(forked)["work-2"][0] == f"← main-line@{short['work~1']}"
    [row] = [r for r in forked("list", "--json").json() if r["id"] == "work-2"]
    assert row["forked_from"].startswith("work@")  # JSON: the trailer, as it was written


def test_sharing_a_renamed_session_names_no_fork_and_a_fork_names_its_parent_now(forked, tmp_path):
    from gitservers import init_bare

    assert forked("rename", "work", "project").code == 0
    r = forked("share", "project", str(init_bare(tmp_path / "one.git")), "--yes")
    assert r.code == 0 and "forked from" not in r.err, r.err
    r = forked("share", "work-2-1", str(init_bare(tmp_path / "two.git")), "--yes")
    assert r.code == 0 and "with the history it was forked from, saves of: project, work-2\n" in r.err, r.err
