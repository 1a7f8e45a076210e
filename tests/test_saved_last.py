"""The session saved last (``gs chat -c`` when ``HEAD`` names none), and the row cache it reads.

``SessionStore.saved_last`` answers from the commit times of the ``gs list`` rows cached in
``<repo>/gs/rows`` (and whether an import wrote them: an import's commits are dated when the
conversation was said, and come after gs's saves) when every tip has one, else by the rule
``gs list`` follows. Checked here
against what the real git CLI says of the refs: with the cache missing, stale, damaged or
rewritten by other processes at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from test_store import Stores, git_bytes
from test_store_contract import Writer

from gitsessions.log.events import encode_log
from gitsessions.store import GitStore


def _at(repo: Path, sid: str, when: int, raw: bytes | None = None, trailers: str = "") -> str:
    """Commit a one-turn log of ``sid`` (or ``raw``) with plain git, dated ``when``, on ``sid``'s tip.

    ``trailers``: more trailer lines (``Imported-From: ...``: as an import writes its commits).
    """
    if not repo.exists():
        with GitStore(repo) as store:
            store.repo(create=True)
    w = Writer(Stores(repo, True), sid)
    raw = raw if raw is not None else encode_log(w.header, w.turn_events("hi"))
    blob = git_bytes(repo, "hash-object", "-w", "--stdin", input=raw).decode().strip()
    tree = git_bytes(repo, "mktree", input=f"100644 blob {blob}\tsession.jsonl\n".encode()).decode().strip()
    parent = subprocess.run(["git", "-C", str(repo), "rev-parse", "-q", "--verify", f"refs/heads/{sid}"],
                            capture_output=True, text=True).stdout.split()
    proc = subprocess.run(["git", "-C", str(repo), "commit-tree", tree, *(["-p", parent[0]] if parent else []),
                           "-m", f"turn 1: hi\n\nSession: {sid}\nTurn: 1\nMessages: 2{trailers}"],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x",
                               "GIT_COMMITTER_DATE": f"@{when} +0000", "GIT_AUTHOR_DATE": f"@{when} +0000"})
    git_bytes(repo, "update-ref", f"refs/heads/{sid}", proc.stdout.strip())
    return proc.stdout.strip()


def _git_says(repo: Path) -> str:
    """The session whose tip git dates newest (ties: the smaller name), from ``git for-each-ref``."""
    out = git_bytes(repo, "for-each-ref", "--format=%(committerdate:unix) %(refname:lstrip=2)", "refs/heads/")
    dated = [(int(t), name) for t, name in (line.split() for line in out.decode().splitlines())]
    return min(dated, key=lambda d: (-d[0], d[1]))[1]


def _saved_last(repo: Path) -> str | None:
    with GitStore(repo) as store:
        return store.saved_last()


def _stamps(repo: Path) -> dict[str, tuple[int, bool]]:
    with GitStore(repo) as store:
        return store.state.rows.stamps()


def _cached(repo: Path) -> dict[str, int]:
    return {commit: time for commit, (time, _) in _stamps(repo).items()}


def _tips(repo: Path) -> dict[str, str]:
    with GitStore(repo) as store:
        return dict(store.tips())


def test_the_newest_tip_wins_and_the_same_without_the_cache(repo_path: Path):
    """Read from git the first time (and kept), from the cache next; a tie goes to the smaller id."""
    times = {"a": 1_000, "b": 3_000, "c": 2_000}
    tips = {sid: _at(repo_path, sid, when) for sid, when in times.items()}
    assert _saved_last(repo_path) == "b" == _git_says(repo_path)
    assert _cached(repo_path) == {tips[sid]: when for sid, when in times.items()}  # every tip: the cheap way next
    assert _saved_last(repo_path) == "b"
    (repo_path / "gs" / "rows").unlink()
    assert _saved_last(repo_path) == "b"
    assert set(_cached(repo_path)) == set(tips.values())  # kept again
    _at(repo_path, "a", 3_000)
    assert _saved_last(repo_path) == "a" == _git_says(repo_path)
    with GitStore(repo_path) as store:  # as gs list finds them: none in error
        assert all(row.error is None for row in store.list_sessions())


def test_tips_moved_behind_gs_are_read_from_git(repo_path: Path):
    """A cache keyed by commit is never stale: a tip it lacks is read, whatever the cached ones say."""
    for sid, when in {"a": 1_000, "b": 3_000, "c": 2_000}.items():
        _at(repo_path, sid, when)
    assert _saved_last(repo_path) == "b"
    _at(repo_path, "b", 500)  # plain git moves b to an older-dated commit
    assert _saved_last(repo_path) == "c" == _git_says(repo_path)
    _at(repo_path, "e", 4_000)  # a session made by plain git
    assert _saved_last(repo_path) == "e" == _git_says(repo_path)
    git_bytes(repo_path, "update-ref", "-d", "refs/heads/e")  # and removed by it
    assert _saved_last(repo_path) == "c" == _git_says(repo_path)


def test_a_wrong_or_damaged_row_does_not_pick_the_session(repo_path: Path):
    """A cached time that is wrong loses to git's, and a line cut short gives no other commit a time."""
    tips = {sid: _at(repo_path, sid, when) for sid, when in {"a": 1_000, "b": 3_000, "c": 2_000}.items()}
    assert _saved_last(repo_path) == "b"
    rows = repo_path / "gs" / "rows"
    kept = [line + b"\n" for line in rows.read_bytes().splitlines() if tips["a"].encode() not in line]
    bad = b'["%s", %d, "x", {"Turn": 7}]\n'  # no row (a trailer that is no text), though it starts as one
    rows.write_bytes(b"".join(kept) + bad % (tips["a"].encode(), 9999))  # a's only line: too new
    assert _saved_last(repo_path) == "b"
    rows.unlink()
    assert _saved_last(repo_path) == "b"  # every row kept again
    rows.write_bytes(bad % (tips["b"].encode(), 1) + rows.read_bytes())  # b given an older time first
    assert _saved_last(repo_path) == "b"
    with rows.open("ab") as f:  # a write cut short: the next row is appended to its line
        f.write(b'["%s", 2000, "tu' % tips["c"].encode())
    w = Writer(Stores(repo_path, True), "w")
    w.save_turn("now")  # dated now: the newest
    assert w.tip not in _cached(repo_path)  # its row is on the torn line
    assert _saved_last(repo_path) == "w" == _git_says(repo_path)


def test_a_tip_that_cannot_be_read_is_not_the_one_saved_last(repo_path: Path):
    """The rule is gs list's: a session listed in error (a log torn behind gs's back) is passed over."""
    _at(repo_path, "a", 1_000)
    good = encode_log(Writer(Stores(repo_path, True), "b").header, [])
    _at(repo_path, "b", 3_000, raw=good + b'{"seq":0,"ti')
    assert _saved_last(repo_path) == "a"
    assert _git_says(repo_path) == "b"
    git_bytes(repo_path, "update-ref", "-d", "refs/heads/a")
    assert _saved_last(repo_path) is None


def test_chat_continue_passes_over_a_session_that_cannot_be_read(gs, git, repo_path: Path):
    assert gs("ask", "-S", "work", "hi").code == 0
    assert gs("ask", "-S", "other", "hello").code == 0
    git("symbolic-ref", "HEAD", "refs/heads/master")  # names none: the session saved last
    header = encode_log(Writer(Stores(repo_path, True), "other").header, [])
    _at(repo_path, "other", 4_000_000_000, raw=header + b'{"seq":0,"ti')  # the newest, torn
    r = gs("chat", "-c", input="next\n")
    assert r.code == 0, r.err
    assert "session work saved" in r.err
    git("fsck", "--strict")


_CALLER = """
import sys
from gitsessions.store import GitStore
from gitsessions.store.state import ListRows
ListRows.SLACK_LINES = 0  # rewrite the file whenever stale rows outnumber live ones
for _ in range(int(sys.argv[2])):
    with GitStore(sys.argv[1]) as store:
        assert store.saved_last() in store.tips()
        store.list_sessions()
"""


def test_saves_and_callers_at_once_leave_the_answer_git_gives(repo_path: Path, tmp_path: Path):
    """Processes asking (and listing, which rewrites the cache) while others save lose nothing but speed."""
    writers = [Writer(Stores(repo_path, True), f"s{k}") for k in range(3)]
    for w in writers:
        w.save_turn("start")
    (repo_path / "gs" / "rows").unlink()
    script = tmp_path / "caller.py"
    script.write_text(_CALLER)
    callers = [subprocess.Popen([sys.executable, str(script), str(repo_path), "15"]) for _ in range(3)]
    for i in range(8):
        for w in writers:
            w.save_turn(f"turn {i}")
    assert [p.wait(timeout=120) for p in callers] == [0, 0, 0]
    tips = _tips(repo_path)
    assert _saved_last(repo_path) == _git_says(repo_path)
    cached = _cached(repo_path)
    for tip in set(tips.values()) & set(cached):  # whatever was kept is the commit's own time
        assert cached[tip] == int(git_bytes(repo_path, "log", "-1", "--format=%ct", tip))
    (repo_path / "gs" / "rows").unlink()
    assert _saved_last(repo_path) == _git_says(repo_path)


#: What an import's commits carry (``Imported-From``), and a date an export's skewed clock gave (2096).
IMPORTED, FUTURE = "\nImported-From: claude-code 5f0c6a1e", 4_000_000_000


def test_an_imports_commit_comes_after_every_save_of_gs_whatever_its_date(repo_path: Path):
    """An import dates its commits, the commit time too, when the conversation was said (two machines
    make the same commits): the newest save of gs's wins, the newest import only when no save is left."""
    tips = {"a": _at(repo_path, "a", 2_000), "b": _at(repo_path, "b", 1_000),
            "i": _at(repo_path, "i", FUTURE, trailers=IMPORTED), "j": _at(repo_path, "j", 3_000, trailers=IMPORTED)}
    assert _saved_last(repo_path) == "a"  # read from git (and kept)
    assert _stamps(repo_path) == {tips["a"]: (2_000, False), tips["b"]: (1_000, False), tips["i"]: (FUTURE, True),
                                  tips["j"]: (3_000, True)}
    assert _saved_last(repo_path) == "a"  # from the cache
    rows = repo_path / "gs" / "rows"
    lines = {line[2:42].decode(): line for line in rows.read_bytes().splitlines()}
    cut_a = lines[tips["a"]][:lines[tips["a"]].index(b'"Turn"')]
    cut_i = lines[tips["i"]][:lines[tips["i"]].index(b'"Imported-From"')]
    # a's line cut short, i's row appended to it: the key on that line is i's, not a's
    rows.write_bytes(lines[tips["b"]] + b"\n" + lines[tips["j"]] + b"\n" + cut_a + lines[tips["i"]] + b"\n")
    assert _stamps(repo_path) == {tips["a"]: (2_000, False), tips["b"]: (1_000, False), tips["j"]: (3_000, True)}
    assert _saved_last(repo_path) == "a"
    # i's line cut before its key: the cache takes it for a save of gs's, and its commit says otherwise
    rows.write_bytes(b"".join(lines[tips[s]] + b"\n" for s in "abj") + cut_i)
    assert _stamps(repo_path)[tips["i"]] == (FUTURE, False)
    assert _saved_last(repo_path) == "a"
    for sid in "ab":
        git_bytes(repo_path, "update-ref", "-d", f"refs/heads/{sid}")
    assert _saved_last(repo_path) == "i" == _git_says(repo_path)  # imports alone: the newest
    rows.unlink()
    assert _saved_last(repo_path) == "i"


def test_chat_continue_and_rm_pass_over_an_import_dated_in_the_future(gs, git, repo_path: Path, fake_api, tmp_path):
    """``gs chat -c`` goes on with the session the user saved last, and ``gs rm`` of it makes the
    one saved before it current: an imported conversation dated in the future is neither."""
    assert gs("ask", "-S", "work", "hi").code == 0
    assert gs("ask", "-S", "other", "hello").code == 0
    transcript = tmp_path / "future.jsonl"
    fixture = Path(__file__).parent / "data" / "claude_code" / "session.jsonl"
    transcript.write_text(fixture.read_text(encoding="utf-8").replace('"timestamp":"2026-', '"timestamp":"2096-'),
                          encoding="utf-8")
    r = gs("import", str(transcript))
    assert r.code == 0 and len(r.out.split()) == 3, r.err
    assert all(int(git("log", "-1", "--format=%ct", sid)) > FUTURE - 10**8 for sid in r.out.split())
    git("symbolic-ref", "HEAD", "refs/heads/master")  # names none: the session saved last
    r = gs("chat", "-c", input="next\n")
    assert r.code == 0 and "session other saved" in r.err, r.err
    assert [m["content"] for m in fake_api.requests[-1]["messages"] if m["role"] == "user"] == ["hello", "next"]
    r = gs("rm", "other")
    assert r.code == 0 and "the current session is now work" in r.err, r.err
    (repo_path / "gs" / "rows").unlink()  # the rule itself, not the cache
    r = gs("rm", "work")
    newest = _git_says(repo_path)  # imports alone: the newest of them
    assert r.code == 0 and f"the current session is now {newest}" in r.err, r.err
    git("fsck", "--strict")
