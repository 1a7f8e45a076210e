"""``gs ask`` as ``llm`` users expect it: piped stdin, attachments, a system prompt, and which word is the session."""

from __future__ import annotations

import re
from pathlib import Path

from fakeapi import text

#: A secret shape the redactor knows (see tests/test_redact.py).
SK = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"


def _sent(fake_api) -> list[dict]:
    """The messages of the last request the model got."""
    return fake_api.requests[-1]["messages"]


def _prompt(fake_api) -> str:
    return _sent(fake_api)[-1]["content"]


def _words(err: str) -> str:
    """A usage error's text on one line, without the box drawn around it."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", err).split())


def test_piped_text_follows_the_prompt_after_a_blank_line_without_its_trailing_newlines(gs, fake_api):
    r = gs("ask", "explain", input="def f():\n    return 1\n\n\n")
    assert r.code == 0, r.err
    assert _prompt(fake_api) == "explain\n\ndef f():\n    return 1"


def test_piped_text_is_the_prompt_of_a_named_session_and_joins_a_new_word(gs, fake_api):
    assert gs("ask", "-S", "work", "first").code == 0
    # an existing session as the one word: stdin is the prompt, sent in that session (the issue: it was ignored)
    r = gs("ask", "work", input="hi\n")
    assert r.code == 0, r.err
    assert [m["content"] for m in _sent(fake_api)] == ["first", "echo: first", "hi"]
    # a word that names no session is the prompt, in a new session
    r = gs("ask", "summarize", input="some notes\n")
    assert r.code == 0, r.err
    assert [m["content"] for m in _sent(fake_api)] == ["summarize\n\nsome notes"]
    assert gs("list", "--json").json().__len__() == 2  # work, and the new one (no session "summarize")
    assert gs("log", "summarize").code != 0


def test_stdin_alone_is_the_prompt_and_a_revision_names_its_session(gs, fake_api):
    r = gs("ask", input="just stdin\n")
    assert r.code == 0, r.err
    assert _prompt(fake_api) == "just stdin"
    gs("ask", "-S", "w", "one")
    gs("ask", "w", "two")
    r = gs("ask", "w~1", input="from the past\n")  # a revision: forked, as gs ask w~1 PROMPT does
    assert r.code == 0, r.err
    assert [m["content"] for m in _sent(fake_api)] == ["one", "echo: one", "from the past"]
    assert "forked" in r.err or "w-1" in r.err


def test_words_whose_first_names_no_session_are_all_the_prompt_and_s_names_a_new_one(gs, fake_api):
    """As llm reads them: ``gs ask fresh "review this"`` made a session ``fresh``; -S says so."""
    r = gs("ask", "fresh", "review this", input="diff --git a b\n")
    assert r.code == 0, r.err
    assert _prompt(fake_api) == "fresh review this\n\ndiff --git a b"
    assert gs("log", "fresh").code != 0  # no session of that name
    r = gs("ask", "-S", "fresh", "review this", input="diff --git a b\n")
    assert r.code == 0, r.err
    assert _prompt(fake_api) == "review this\n\ndiff --git a b"
    assert gs("log", "fresh", "--oneline").out.count("turn 1: review this") == 1
    r = gs("ask", "fresh", "and again")  # it exists now: the first word names it
    assert r.code == 0 and [m["content"] for m in _sent(fake_api)][-1] == "and again"
    assert gs("ask", "-S", "fresh").code == 2  # no prompt
    assert gs("ask", "-S", "fresh", "--new", "x").code == 2


def test_more_words_are_the_prompt_of_an_existing_session_or_of_a_new_one(gs, fake_api):
    """As llm reads them: ``gs ask what is a ref`` was a usage error (exit 2, "quote the prompt")."""
    gs("ask", "-S", "work", "first")
    r = gs("ask", "work", "hello", "world")
    assert r.code == 0, r.err
    assert _prompt(fake_api) == "hello world"
    r = gs("ask", "what", "is", "a", "ref")
    assert r.code == 0, r.err
    assert [m["content"] for m in _sent(fake_api)] == ["what is a ref"]  # a new session, all of it the prompt
    [new] = [s for s in gs("list", "--json").json() if s["id"] != "work"]
    assert new["title"] == "what is a ref" and new["id"] != "what"
    assert f"[{new['id']} " in r.err  # its id, said


def test_new_makes_every_word_the_prompt(gs, fake_api):
    gs("ask", "-S", "work", "first")
    r = gs("ask", "--new", "work", input="is this a session?\n")
    assert r.code == 0, r.err
    assert [m["content"] for m in _sent(fake_api)] == ["work\n\nis this a session?"]
    r = gs("ask", "--new", "work", "on", "it")
    assert r.code == 0, r.err
    assert [m["content"] for m in _sent(fake_api)] == ["work on it"]
    assert gs("ask", "--new", "--fork", "x", "hi").code == 2


def test_no_prompt_at_all_is_a_usage_error(gs, fake_api):
    for args, stdin in (((), None), ((), "\n\n"), (("-S", "work", "  "), None)):
        r = gs("ask", *args, input=stdin)
        assert r.code == 2, (args, r.err)
        assert "prompt" in r.err.lower()
    assert not fake_api.requests


def test_attached_text_files_are_inlined_under_their_names(gs, fake_api, tmp_path: Path):
    (tmp_path / "notes.md").write_text("# Notes\n```py\nx = 1\n```\n")
    (tmp_path / "b.txt").write_text("bee\n")
    r = gs("ask", "-a", str(tmp_path / "notes.md"), "--attach", str(tmp_path / "b.txt"), "compare",
           input="piped\n")
    assert r.code == 0, r.err
    assert _prompt(fake_api) == ("compare\n\npiped\n\n"
                                 "notes.md:\n````\n# Notes\n```py\nx = 1\n```\n````\n\n"  # a fence longer than its own
                                 "b.txt:\n```\nbee\n```")


def test_an_attachment_alone_is_the_prompt_as_piped_text_is(gs, fake_api, tmp_path: Path):
    (tmp_path / "f.py").write_text("x = 1\n")
    assert gs("ask", "-S", "work", "first").code == 0
    r = gs("ask", "-a", str(tmp_path / "f.py"), "work")
    assert r.code == 0, r.err
    assert [m["content"] for m in _sent(fake_api)] == ["first", "echo: first", "f.py:\n```\nx = 1\n```"]
    assert gs("ask", "-a", str(tmp_path / "f.py")).code == 0
    assert [m["content"] for m in _sent(fake_api)] == ["f.py:\n```\nx = 1\n```"]


def test_a_binary_or_missing_attachment_is_refused_with_the_reason(gs, fake_api, tmp_path: Path):
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    r = gs("ask", "-a", str(tmp_path / "image.png"), "describe")
    assert r.code == 1 and "image.png" in r.err and "binary" in r.err and "text files" in r.err, r.err
    r = gs("ask", "-a", str(tmp_path / "latin1.txt"), "read")
    assert r.code == 1 and "not UTF-8 text" in r.err, r.err
    r = gs("ask", "-a", str(tmp_path / "nope.txt"), "read")
    assert r.code == 1 and "cannot attach" in r.err and "No such file" in r.err, r.err
    assert "Traceback" not in r.err
    assert not fake_api.requests


def test_piped_text_and_attachments_are_redacted_like_any_prompt(gs, git, fake_api, tmp_path: Path):
    (tmp_path / "env.txt").write_text(f"OPENAI_API_KEY={SK}\n")
    r = gs("ask", "-S", "s", "-a", str(tmp_path / "env.txt"), "check", input=f"token {SK}\n")
    assert r.code == 0, r.err
    assert SK not in git("show", "s:session.jsonl")
    assert SK not in _prompt(fake_api)  # the model sees what the log holds


def test_a_system_prompt_is_saved_and_the_session_continues_with_it(gs, git, fake_api, tmp_path: Path):
    (tmp_path / "config.yaml").write_text("system: the config's default\n")
    r = gs("ask", "-s", "You are a pirate.", "-S", "work", "hello")
    assert r.code == 0, r.err
    assert _sent(fake_api)[0] == {"role": "system", "content": "You are a pirate."}
    assert [m["role"] for m in _sent(fake_api)] == ["system", "user"]
    # the next turn, without -s, still has it (it is in the log, not the command line)
    assert gs("ask", "work", "again").code == 0
    assert [m["role"] for m in _sent(fake_api)] == ["system", "user", "assistant", "user"]
    assert _sent(fake_api)[0]["content"] == "You are a pirate."
    # the same one again adds nothing; a new one replaces it
    before = git("rev-list", "--count", "work")
    assert gs("ask", "work", "--system", "You are a pirate.", "third").code == 0
    assert int(git("rev-list", "--count", "work")) == int(before) + 1
    assert gs("ask", "work", "--system", "You are terse.", "fourth").code == 0
    assert [m["content"] for m in _sent(fake_api) if m["role"] == "system"] == ["You are terse."]
    # a new session starts with the config's (its first event)
    assert gs("ask", "-S", "other", "hi").code == 0
    assert _sent(fake_api)[0] == {"role": "system", "content": "the config's default"}
    assert "system prompt: You are terse." in git("log", "--format=%s", "work")  # its own save, said in words
    shown = gs("show", "work").out
    assert "system prompt › You are a pirate." in shown and "system prompt › You are terse." in shown
    git("fsck", "--strict")


def test_a_retry_keeps_the_system_prompt_of_the_turn(gs, fake_api):
    assert gs("ask", "-s", "Answer in French.", "-S", "work", "hello").code == 0
    r = gs("retry", "work")
    assert r.code == 0, r.err
    assert _sent(fake_api)[0] == {"role": "system", "content": "Answer in French."}


def test_the_system_prompt_is_redacted(gs, git, fake_api):
    assert gs("ask", "-s", f"use the key {SK}", "-S", "s", "hi").code == 0
    assert SK not in git("show", "s:session.jsonl")
    assert SK not in _sent(fake_api)[0]["content"]


def test_a_piped_prompt_from_a_real_pipe(gs_proc, fake_api):
    fake_api.script(text("done"))
    r = gs_proc("ask", "summarize", input=b"line one\nline two\n")
    assert r.code == 0, r.err
    assert r.out == "done\n"
    assert _prompt(fake_api) == "summarize\n\nline one\nline two"


def test_help_writes_the_rules(gs):
    r = gs("ask", "--help")
    assert r.code == 0
    out = " ".join(r.out.split())
    for words in ("piped into stdin follows the prompt after a blank line", "--new", "--attach", "--system",
                  "Trailing newlines are trimmed", "every word is the prompt, in a new session",
                  "-S NAME names the session",
                  'cat f.py | gs ask "explain"'):
        assert words in out, words


def test_which_words_name_a_session(gs, repo_path):
    from gitsessions.cli.ask_prompt import names_session
    from gitsessions.store import GitStore

    assert gs("ask", "-S", "work", "one").code == 0 and gs("ask", "work", "two").code == 0
    with GitStore(repo_path) as store:
        named = {w: names_session(store, w) for w in ("work", "work~1", "work^", "work@{1}", "@{1}", "Work",
                                                         "nope", "nope~1", "work~9", "what's 2^3?", "ada@example.com")}
    assert named == {"work": True, "work~1": True, "work^": True, "work@{1}": True, "@{1}": True, "Work": False,
                     "nope": False, "nope~1": False, "work~9": False, "what's 2^3?": False, "ada@example.com": False}


def test_a_session_with_nothing_piped_is_a_missing_prompt_not_a_prompt(gs, fake_api):
    """``echo | gs ask work`` (an empty diff piped in, a forgotten prompt) sent "work" to a new session."""
    assert gs("ask", "-S", "work", "hi").code == 0
    for piped in ("\n", "", "  \n\n"):
        r = gs("ask", "work", input=piped)
        assert r.code == 2, (piped, r.err)
        assert "'work' is a session and nothing came in on stdin" in r.err and 'gs ask work "..."' in r.err
    assert [s["id"] for s in gs("list", "--json").json()] == ["work"]  # no session made of its name
    assert len(fake_api.requests) == 1


def test_a_closed_stdin_reads_as_empty(gs_env, fake_api):
    """``gs ask hi <&-`` was an internal error (exit 70): Python gives no sys.stdin at all then."""
    import os
    import subprocess

    from conftest import GS

    proc = subprocess.run([*GS, "ask", "hi"], preexec_fn=lambda: os.close(0), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "echo: hi\n"
