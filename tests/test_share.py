"""``gs share``: one session (with the history it was forked from) to a separate remote, the
question before the first share to a URL, and the receiving side cloning and continuing it."""

from __future__ import annotations

import os
import subprocess

import pexpect
from conftest import GS
from gitservers import GitHTTPServer, init_bare


def _git(repo, *args, check=True):
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if check and proc.returncode:
        raise AssertionError(f"git {' '.join(args)}: {proc.stderr}")
    return proc.stdout


def _refs(repo):
    return sorted(line.split()[1] for line in _git(repo, "show-ref", check=False).splitlines())


def _messages(run, sid):
    r = run("show", sid, "--format", "json")
    assert r.code == 0, r.err
    return [m["content"] for m in r.json()["messages"]]


def test_a_shared_fork_leaves_alone_and_the_receiver_continues_it(machine, tmp_path, fake_api):
    a, b = machine("a"), machine("b")
    key = "sk-" + "A1b2C3d4" * 4
    assert a("ask", "-S", "base", f"one, with my key {key}").code == 0
    assert a("ask", "-S", "base", "two").code == 0
    assert a("ask", "--fork", "alt", "-S", "base", "three on alt").code == 0
    assert a("ask", "-S", "private", "not for sharing").code == 0
    assert a("ask", "-S", "base", "four on base, after the fork").code == 0
    assert a("rm", "private").code == 0  # an archived session stays home too
    gist = init_bare(tmp_path / "gist.git")

    r = a("share", "alt", str(gist), "--yes")
    assert r.code == 0, r.err
    assert "session alt" in r.err and "3 turns" in r.err and "bytes" in r.err
    assert "forked from, saves of: base" in r.err
    assert f"shared alt at {_git(a.repo, 'rev-parse', '--short=7', 'alt').strip()}" in r.err

    # only the fork's branch, its commits and their ancestors: nothing else of the archive
    assert _refs(gist) == ["refs/heads/alt"]
    assert _git(gist, "rev-parse", "alt") == _git(a.repo, "rev-parse", "alt")
    for elsewhere in ("base", "refs/archive/private"):
        sha = _git(a.repo, "rev-parse", elsewhere).strip()
        assert subprocess.run(["git", "-C", str(gist), "cat-file", "-e", sha], capture_output=True).returncode != 0
    subprocess.run(["git", "-C", str(gist), "fsck", "--strict"], check=True, capture_output=True)
    shared_log = _git(gist, "show", "alt:session.jsonl")
    assert "three on alt" in shared_log and key not in shared_log  # stored redacted, sent as stored

    # the receiver lacks `base`, which alt's lineage names: log, show, list and a new turn still work
    r = b("clone", str(gist), str(b.repo))
    assert r.code == 0, r.err
    assert [row["id"] for row in b("list", "--json").json()] == ["alt"]
    assert b("log", "alt").code == 0 and b("log", "alt", "--graph").code == 0
    assert b("log", "alt", "-p").code == 0
    assert _messages(b, "alt")[-2:] == ["three on alt", "echo: three on alt"]
    fake_api.reset()
    r = b("ask", "-S", "alt", "five on b")
    assert r.code == 0, r.err
    sent = [m["content"] for m in fake_api.requests[-1]["messages"] if m["role"] == "user"]
    assert sent == [sent[0], "two", "three on alt", "five on b"] and sent[0].startswith("one, with my key")
    assert key not in sent[0]
    assert _messages(b, "alt")[-2:] == ["five on b", "echo: five on b"]
    subprocess.run(["git", "-C", str(b.repo), "fsck", "--strict"], check=True, capture_output=True)


def test_the_first_share_to_a_url_asks_and_later_ones_do_not(machine, tmp_path):
    a = machine("a")
    assert a("ask", "-S", "w", "one").code == 0
    assert a("ask", "-S", "w", "two").code == 0
    gist = init_bare(tmp_path / "gist.git")

    # no terminal and no --yes: refused, nothing sent
    r = a("share", "w", str(gist))
    assert r.code == 1 and "about to send" in r.err and "add --yes" in r.err and "nothing was sent" in r.err
    assert _refs(gist) == []
    assert "gs-share" not in (a.repo / "config").read_text()

    assert a("share", "w", str(gist), "--yes").code == 0
    assert f'[gs-share "{gist}"]' in (a.repo / "config").read_text()

    # the second share to that URL neither asks nor needs --yes
    assert a("ask", "-S", "w", "three").code == 0
    r = a("share", "w", str(gist))
    assert r.code == 0, r.err
    assert "about to send" not in r.err
    assert _git(gist, "rev-parse", "w") == _git(a.repo, "rev-parse", "w")
    r = a("share", "w", str(gist))
    assert r.code == 0 and "already has w" in r.err


def test_a_past_revision_is_shared_as_its_session_at_that_commit(machine, tmp_path):
    a = machine("a")
    for prompt in ("one", "two", "three"):
        assert a("ask", "-S", "w", prompt).code == 0
    gist = init_bare(tmp_path / "gist.git")
    r = a("share", "w~1", str(gist), "--yes")
    assert r.code == 0, r.err
    assert "2 turns" in r.err
    assert _refs(gist) == ["refs/heads/w"]
    assert _git(gist, "rev-parse", "w") == _git(a.repo, "rev-parse", "w~1")
    assert _git(a.repo, "rev-parse", "w") != _git(a.repo, "rev-parse", "w~1")  # nothing moved here

    # the tip is a fast-forward of it; going back sends nothing and moves nothing there, not forced
    assert a("share", "w", str(gist)).code == 0
    r = a("share", "w~2", str(gist))
    assert r.code == 0 and f"nothing to send: {gist} already holds w at" in r.err, r.err
    assert f"nothing was changed there (to share the newest save: gs share w {gist})" in r.err
    assert _git(gist, "rev-parse", "w") == _git(a.repo, "rev-parse", "w")

    r = a("share", "w~9", str(gist))
    assert r.code == 1 and "w~0 to w~2 exist" in r.err


def test_the_question_in_a_terminal(machine, tmp_path):
    a = machine("a")
    assert a("ask", "-S", "w", "one").code == 0
    gist = init_bare(tmp_path / "gist.git")
    env = dict(os.environ, TERM="xterm")

    def share():
        child = pexpect.spawn(GS[0], [*GS[1:], "--repo", str(a.repo), "share", "w", str(gist)], env=env,
                              encoding="utf-8", timeout=30)
        child.expect("about to send")
        child.expect(r"send it\? \[y/N\]")
        return child

    child = share()
    child.sendline("n")
    child.expect("nothing was sent")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1 and _refs(gist) == []

    child = share()
    child.sendline("y")
    child.expect("shared w at")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and _refs(gist) == ["refs/heads/w"]


def test_share_and_clone_over_http_with_a_password_in_the_url(machine, tmp_path, monkeypatch):
    a, b = machine("a"), machine("b")
    assert a("ask", "-S", "w", "one").code == 0
    root = tmp_path / "served"
    root.mkdir()
    init_bare(root / "gist.git")
    with GitHTTPServer(root) as server:
        r = a("share", "w", server.url("gist.git", with_password=True), "--yes")
        assert r.code == 0, r.err
        assert server.password not in r.err and server.password not in (a.repo / "config").read_text()
        assert f'[gs-share "{server.url("gist.git")}"]' in (a.repo / "config").read_text()
        # the URL without its password is the same URL: no second question
        assert a("ask", "-S", "w", "two").code == 0
        monkeypatch.setenv("GS_HTTP_USERNAME", server.username)
        monkeypatch.setenv("GS_HTTP_PASSWORD", server.password)
        assert a("share", "w", server.url("gist.git")).code == 0
        r = b("clone", server.url("gist.git"), str(b.repo))
        assert r.code == 0, r.err
        assert b("ask", "-S", "w", "three on b").code == 0
        assert _messages(b, "w")[-2:] == ["three on b", "echo: three on b"]
    subprocess.run(["git", "-C", str(root / "gist.git"), "fsck", "--strict"], check=True, capture_output=True)


def test_re_sharing_after_the_receiver_continued_it_says_how_to_bring_their_turns(machine, tmp_path):
    a, b = machine("a"), machine("b")
    assert a("ask", "-S", "w", "one").code == 0
    gist = init_bare(tmp_path / "gist.git")
    assert a("share", "w", str(gist), "--yes").code == 0
    assert b("clone", str(gist), str(b.repo)).code == 0
    assert b("ask", "-S", "w", "two on b").code == 0 and b("push").code == 0
    assert a("ask", "-S", "w", "two on a").code == 0
    r = a("share", "w", str(gist))
    assert r.code == 1 and "Traceback" not in r.err, r.err
    assert f"not sent: {gist} has turns on w that w does not hold" in r.err, r.err
    assert f"gs pull {gist} brings them here" in r.err and f"gs fork w NEW-ID, then gs share NEW-ID {gist}" in r.err
    mine = _git(a.repo, "rev-parse", "w").strip()
    r = a("pull", str(gist))  # as the message says
    assert r.code == 0 and f"your turns are in w-{mine[:7]}" in r.err, r.err
    r = a("share", f"w-{mine[:7]}", str(gist))
    assert r.code == 0 and f"shared w-{mine[:7]}" in r.err, r.err
    assert _messages(a, "w")[-2] == "two on b" and _messages(a, f"w-{mine[:7]}")[-2] == "two on a"


def test_nothing_to_send_when_only_the_receiver_continued_it_is_success(machine, tmp_path):
    a, b = machine("a"), machine("b")
    assert a("ask", "-S", "w", "one").code == 0
    gist = init_bare(tmp_path / "gist.git")
    assert a("share", "w", str(gist), "--yes").code == 0
    assert b("clone", str(gist), str(b.repo)).code == 0
    assert b("ask", "-S", "w", "two on b").code == 0 and b("push").code == 0
    theirs = _git(gist, "rev-parse", "w")
    r = a("share", "w", str(gist))
    assert r.code == 0, r.err
    mine = _git(a.repo, "rev-parse", "w").strip()
    assert r.err == (f"nothing to send: {gist} already holds w at {mine[:7]}, and newer saves of it (it was "
                     f"continued there); to bring them here: gs pull {gist}\n")
    r = a("share", "w", str(gist), "--json")
    assert r.code == 0 and r.json()["sent"] is False and r.json()["newer_there"] is True
    assert _git(gist, "rev-parse", "w") == theirs  # nothing changed there
    assert a("pull", str(gist)).code == 0 and _messages(a, "w")[-2] == "two on b"


def test_sharing_to_a_repository_with_other_sessions_says_so(machine, tmp_path):
    a = machine("a")
    assert a("ask", "-S", "w", "one").code == 0
    assert a("ask", "-S", "other", "not shared").code == 0
    origin = init_bare(tmp_path / "origin.git")
    assert a("remote", "add", "origin", str(origin)).code == 0 and a("push").code == 0
    assert a("ask", "-S", "w", "two").code == 0
    r = a("share", "w", str(origin), "--yes")
    assert r.code == 0, r.err
    assert (f"note: {origin} already held 1 other session (gs share is meant for an empty repository or a gist); "
            "only w was sent, nothing there was changed or removed") in r.err, r.err
    assert _refs(origin) == ["refs/heads/other", "refs/heads/w"]
    assert _git(origin, "rev-parse", "w") == _git(a.repo, "rev-parse", "w")
    r = a("share", "w", str(init_bare(tmp_path / "empty.git")), "--yes")
    assert r.code == 0 and "note:" not in r.err, r.err


def test_share_says_what_it_sent_as_json(machine, tmp_path):
    a = machine("a")
    assert a("ask", "-S", "w", "one").code == 0
    assert a("ask", "-S", "other", "not shared").code == 0
    origin = init_bare(tmp_path / "origin.git")
    assert a("remote", "add", "origin", str(origin)).code == 0 and a("push").code == 0
    assert a("ask", "-S", "w", "two").code == 0
    tip = _git(a.repo, "rev-parse", "w").strip()
    r = a("share", "w", str(origin), "--yes", "--json")
    assert r.code == 0 and "about to send" in r.err and "note:" not in r.err, r.err  # the offer is still said
    assert r.json() == {"session": "w", "commit": tip, "url": str(origin), "sent": True, "others_there": 1,
                      "newer_there": False}
    r = a("share", "w", str(origin), "--json")
    assert r.code == 0 and not r.err, r.err
    assert r.json() == {"session": "w", "commit": tip, "url": str(origin), "sent": False, "others_there": 1,
                      "newer_there": False}
