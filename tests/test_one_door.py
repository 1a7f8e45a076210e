"""Text enters a session at one door: redacted once, and every commit message
derived from the redacted events by ``rules.commit_message``, whatever path commits.

In-process: a real GitStore on a real repo, ``Session`` and ``run_turn`` with a scripted
provider; the real ``git`` CLI reads every object back.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gitsessions.chat.loop import run_turn
from gitsessions.errors import HookRefused, SessionExists
from gitsessions.ids import fork_name, new_session_id, pull_fork_name, rev_session_id, taken_by
from gitsessions.log.commits import CommitMessage, Lineage, Trailers, commit_message
from gitsessions.log.events import make_event, make_header
from gitsessions.log.turns import last_turn, next_turn, turn_number, turn_numbers, turns_of
from gitsessions.provider.client import Completion, TextDelta
from gitsessions.secrets.redact import NO_REDACTION, Redactor, from_environment
from gitsessions.secrets.redact_stream import STREAM_BATCH, StreamRedactor
from gitsessions.store import GitStore
from gitsessions.store.hooks import CommitHooks
from gitsessions.store.remote.remotes import Remotes
from gitsessions.transfer.read import read_import
from gitsessions.transfer.write import write_import
from gitsessions.writer.forking import fork
from gitsessions.writer.opening import open_revision, open_session, try_recover
from gitsessions.writer.session import Session

#: Shaped like a GitHub token and an OpenAI key; neither is real.
GHP = "ghp_" + "Q7w8E9r0T1y2U3i4O5p6" + "A7s8D9f0G1h2"
SK = "sk-" + "Zq7Xw3Rt9Yp2Lm5Nb8Vc1Kd4" + "Hf6Js0Ga"
#: A secret-named environment variable and its value (no shape any pattern knows).
ENV = {"DEPLOY_TOKEN": "plain-words-but-secret-42"}
SECRETS = (GHP, SK, ENV["DEPLOY_TOKEN"])


@pytest.fixture
def store(repo_path: Path):
    with GitStore(repo_path, hooks=CommitHooks(repo_path)) as s:
        yield s


@pytest.fixture
def redactor() -> Redactor:
    return from_environment(ENV)


def _all_objects(repo_path: Path) -> bytes:
    return subprocess.run(["git", "-C", str(repo_path), "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True).stdout


def _journals(repo_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (repo_path / "gs").rglob("*.jsonl"))


def _assert_no_secret(repo_path: Path) -> None:
    everything = _all_objects(repo_path) + _journals(repo_path)
    for secret in SECRETS:
        assert secret.encode() not in everything, secret


class Scripted:
    """A provider that streams ``text`` in the given chunks, calling ``between`` before each."""

    model = "scripted-model"

    def __init__(self, chunks: list[str], between=lambda: None):
        self.chunks = chunks
        self.between = between

    def stream(self, messages, tools=None):
        for chunk in self.chunks:
            self.between()
            yield TextDelta(chunk)
        self.between()
        yield Completion(content="".join(self.chunks), finish_reason="stop", model=self.model)


def _new(store: GitStore, sid: str = "work", redactor: Redactor = NO_REDACTION) -> Session:
    return open_session(store, sid, new_header=make_header(sid, created=1), redactor=redactor)


def _turn(store: GitStore, sid: str, prompt: str, redactor: Redactor, reply: str = "ok") -> str:
    session = open_session(store, sid, redactor=redactor) if store.tip(sid) else _new(store, sid, redactor)
    try:
        result = run_turn(session, Scripted([reply]), prompt, tools=[])
    finally:
        session.close()
    assert result.commit
    return result.commit


def _message(store: GitStore, commit: str) -> CommitMessage:
    return store.commit_info(commit).message


# -- the defects found before there was one door --------------------------------------------


def test_import_of_a_token_leaves_it_in_no_object_subject_or_title(store, repo_path, redactor, tmp_path, gs, git):
    messages = [{"role": "user", "content": f"deploy with {GHP} please\nand {ENV['DEPLOY_TOKEN']}"},
                {"role": "assistant", "content": f"done; your token {GHP} works"}]
    plan = read_import(json.dumps(messages).encode(), f"chat-{GHP}.json")
    result = write_import(store, plan, as_id="imp", redactor=redactor)
    [(sid, commit, _item)] = result.imported
    message = _message(store, commit)
    assert message.subject == "import: chat-[REDACTED:github-token].json"
    assert message.fields.title == "deploy with [REDACTED:github-token] please"
    assert message.fields.imported_from == "chat-[REDACTED:github-token].json"
    snap = store.load(sid)
    assert "[REDACTED:DEPLOY_TOKEN]" in snap.events[1].data["content"]
    _assert_no_secret(repo_path)

    # The CLI passes the redactor of its environment and config.
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages))
    r = gs("import", str(path), "--as", "cli", env=ENV)
    assert r.code == 0, r.err
    assert "[REDACTED:github-token]" in git("log", "-1", "--format=%B", "cli")
    _assert_no_secret(repo_path)
    git("fsck", "--strict")


#: Folder names holding token shapes: a GitHub token (36 characters after ghp_) and an OpenAI project key.
TOKEN_DIRS = ("work-ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A",
              "keys-sk-proj-" + "Zq7Xw3Rt9Yp2Lm5Nb8Vc1Kd4Hf6Js0Ga4Qe")
CLAUDE_FIXTURE = Path(__file__).parent / "data" / "claude_code" / "real2" / "projects" / "-home-user-proj"


def _no_token_anywhere(git, repo_path: Path) -> None:
    """No token shape of :data:`TOKEN_DIRS` in any object, commit message or diff, and a repo git finds sound."""
    held = _all_objects(repo_path) + git("log", "-p", "--all").encode()
    for name in TOKEN_DIRS:
        token = name.split("-", 1)[1]
        assert token.encode() not in held, token
    git("fsck", "--strict")


def test_a_token_in_the_working_directory_reaches_no_header(gs, git, repo_path, tmp_path, monkeypatch):
    """The header names the folder gs ran in: it passes the door the events pass."""
    for n, name in enumerate(TOKEN_DIRS):
        folder = tmp_path / name
        folder.mkdir()
        monkeypatch.chdir(folder)
        assert gs("ask", "-S", f"asked{n}", "hi").code == 0
        r = gs("chat", f"chatted{n}", input="hello\n/exit\n")
        assert r.code == 0, r.err
        with GitStore(repo_path) as store:
            assert "[REDACTED:" in store.load(f"asked{n}").header["cwd"]
    _no_token_anywhere(git, repo_path)


def test_a_token_in_an_imported_files_path_reaches_no_header(gs, git, repo_path, tmp_path):
    """--keep-paths records the file's path (another tool's) and gs's folder (gs's own file): both redacted."""
    transcripts = ("a8948df7-5ee8-473e-b3a1-9823e3e0d995.jsonl", "133f1ba2-370b-435d-b296-93b2508ae508.jsonl")
    for name, transcript in zip(TOKEN_DIRS, transcripts, strict=True):
        folder = tmp_path / name
        shutil.copytree(CLAUDE_FIXTURE, folder)
        r = gs("import", "--keep-paths", str(folder / transcript))
        assert r.code == 0 and r.out, r.err
        (folder / "mine.json").write_text(json.dumps([{"role": "user", "content": "hi"},
                                                      {"role": "assistant", "content": "hello"}]))
        assert gs("import", "--keep-paths", str(folder / "mine.json"), "--as", f"mine-{len(name)}").code == 0
    with GitStore(repo_path) as store:
        kept = [store.load(sid).header for sid in store.session_ids()]
    assert len(kept) == 5 and all(h["source_file"].startswith(f"{tmp_path}/") for h in kept), kept
    assert all("[REDACTED:" in h["source_file"] for h in kept), kept
    _no_token_anywhere(git, repo_path)


def test_every_header_gs_builds_is_built_by_the_redactor():
    """One place builds a header for gs: Redactor.header, so that no field of one bypasses the door."""
    import ast

    import gitsessions

    root = Path(gitsessions.__file__).parent
    callers = sorted(str(path.relative_to(root)) for path in root.rglob("*.py")
                     for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None))
                     == "make_header")
    assert callers == ["secrets/redact.py"]


def test_chatgpt_import_redacts_titles_ids_messages_and_tool_output(store, repo_path, redactor, git):
    def node(nid, parent, role, text, **message):
        return {"id": nid, "parent": parent, "children": [], "message": {
            "id": nid, "author": {"role": role, "name": message.pop("name", None)}, "create_time": 1.7e9,
            "content": {"content_type": "text", "parts": [text]}, **message}}

    mapping = {"r": {"id": "r", "parent": None, "children": ["u"], "message": None},
               "u": node("u", "r", "user", f"deploy with {GHP}"),
               "a": node("a", "u", "assistant", "env", recipient="python"),
               "t": node("t", "a", "tool", f"DEPLOY_TOKEN={ENV['DEPLOY_TOKEN']}", name="python"),
               "b": node("b", "t", "assistant", f"your key {SK} is set")}
    for parent, child in (("r", "u"), ("u", "a"), ("a", "t"), ("t", "b")):
        mapping[parent]["children"] = [child]
    export = [{"id": f"conv-{SK}", "title": f"token {GHP}", "create_time": 1.7e9, "mapping": mapping,
               "current_node": "b"}]
    plan = read_import(json.dumps(export).encode(), "conversations.json")
    [(conv, [(sid, how, turns)])] = write_import(store, plan, redactor=redactor).conversations
    assert (how, turns) == ("new", 1) and sid.startswith("token-redacted-github-token-")
    assert "[REDACTED:github-token]" in _message(store, store.tip(sid)).fields.title
    assert store.load(sid).header["source"]["id"] == "conv-[REDACTED:api-key]"
    _assert_no_secret(repo_path)
    git("fsck", "--strict")


def test_turn_recovered_after_a_refusing_hook_has_no_raw_key_in_its_subject(store, repo_path, redactor, git):
    # The first process ran with redaction off (or without the secret in its environment);
    # its hook refused the turn, which stayed in the journal. The next process recovers it
    # with redaction on: the blob AND the subject and trailers must be clean.
    _turn(store, "work", "a harmless first turn", NO_REDACTION)
    hook = repo_path / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho refused >&2\nexit 1\n")
    hook.chmod(0o755)
    session = open_session(store, "work")
    with pytest.raises(HookRefused):
        run_turn(session, Scripted(["noted"]), f"{SK} is my key and {ENV['DEPLOY_TOKEN']} too", tools=[])
    session._journal.close()  # the process ends without saving
    session._lock.release()
    assert SK.encode() in _journals(repo_path)  # redaction was off there

    hook.chmod(0o644)  # disabled, as git does it
    with GitStore(repo_path, hooks=CommitHooks(repo_path)) as later:
        commit = try_recover(later, "work", redactor)
        assert commit is not None
        message = _message(later, commit)
    assert message.subject == "turn 2: [REDACTED:api-key] is my key and [REDACTED:DEPLOY_TOKEN] too"
    assert message.fields.title == "a harmless first turn"
    _assert_no_secret(repo_path)
    git("fsck", "--strict")


@pytest.mark.parametrize("seed", range(4))
def test_a_key_streamed_in_small_chunks_never_sits_whole_in_the_journal(store, repo_path, redactor, seed,
                                                                         monkeypatch):
    import random

    from gitsessions.secrets import redact_stream

    monkeypatch.setattr(redact_stream, "STREAM_BATCH", 8)  # looked at often: the journal is checked at many cuts
    rnd = random.Random(seed)
    text = (f"Here is the token: {GHP}, then the env one {ENV['DEPLOY_TOKEN']} and a key "
            f"\"{SK}\" and a PEM\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n"
            "-----END RSA PRIVATE KEY-----\nthat was all.")
    chunks, at = [], 0
    while at < len(text):
        n = rnd.randint(1, 4)
        chunks.append(text[at:at + n])
        at += n
    journal = repo_path / "gs" / "journal" / "work.jsonl"
    seen: list[str] = []

    def check() -> None:
        if not journal.exists():
            return
        raw = journal.read_text("utf-8")
        streamed = "".join(json.loads(line).get("delta", "") for line in raw.splitlines()[1:])
        seen.append(streamed)
        for secret in (*SECRETS, "MIIEowIBAAKCAQEA"):
            assert secret not in raw and secret not in streamed, secret

    _turn(store, "work", "first", redactor)
    session = open_session(store, "work", redactor=redactor)
    try:
        result = run_turn(session, Scripted(chunks, check), "stream me the secrets", tools=[])
    finally:
        session.close()
    assert len(seen) == len(chunks) + 1
    assert seen[-1].startswith("Here is the token: [REDACTED:github-token], then the env one [REDACTED:DEPLOY_TOKEN]")
    reply = store.load("work").events[-3]
    assert reply.type == "assistant/message"
    for name in ("github-token", "DEPLOY_TOKEN", "api-key", "private-key"):
        assert f"[REDACTED:{name}]" in reply.data["content"]
    assert result.text == text  # the screen shows what arrived; only history is redacted
    _assert_no_secret(repo_path)


def test_stream_redactor_agrees_with_the_redactor_and_holds_little():
    redactor = from_environment(ENV)
    for text in (f"a {GHP} b", f"task-runner-configuration {SK}", f"x{GHP}", "plain text " * 20,
                 f"AKIA{'B' * 16}{ENV['DEPLOY_TOKEN']}", "-----BEGIN RSA PRIVATE KEY-----\nabc"):
        for size in (1, 3, 4):
            stream = StreamRedactor(redactor)
            out = "".join(stream.feed(text[i:i + size]) for i in range(0, len(text), size)) + stream.flush()
            whole = redactor.text(text)
            if "[REDACTED" not in whole:
                assert out == whole
            for secret in SECRETS:
                assert secret not in out or secret in whole
    # Ordinary text is journaled as it comes (in batches), not a window later.
    stream = StreamRedactor(redactor)
    released = "".join(stream.feed("lorem ipsum dolor sit amet, ") for _ in range(10))
    assert len(released) >= 10 * 28 - STREAM_BATCH


# -- every path that commits derives its message from the redacted events ------------------


def test_turn_subject_and_title_come_from_redacted_events(store, repo_path, redactor):
    commit = _turn(store, "work", f"use {GHP} for the deploy\nsecond line", redactor)
    message = _message(store, commit)
    assert message.subject == "turn 1: use [REDACTED:github-token] for the deploy"
    assert message.fields == Trailers(session="work", turn=1, model="scripted-model", events=(0, 5), messages=2,
                                      title="use [REDACTED:github-token] for the deploy")
    _assert_no_secret(repo_path)


def _leaky_old_commit(store: GitStore, sid: str, redactor: Redactor, parent: str | None) -> str:
    """A save as an older gs made it: redacted events, but the raw token in its Title trailer."""
    n = len(store.load(sid).events) if parent else 0
    data = [("session/title", {"title": f"deploy with {GHP}"})]
    events = [make_event(n + i, t, redactor.value(d)) for i, (t, d) in enumerate(data)]
    message = CommitMessage(f"title: deploy with {GHP}", {"Session": sid, "Turn": "1", "Title": f"deploy with {GHP}"})
    return store.append(sid, events, message, expected_tip=parent, header=None if parent else make_header(sid))


def test_fork_messages_come_from_the_events_not_the_parent_trailers(store, redactor, git):
    _turn(store, "work", "first", redactor)
    old = _leaky_old_commit(store, "work", redactor, store.tip("work"))
    assert GHP in git("log", "-1", "--format=%B", old)

    # gs fork
    commit = fork(store, store.resolve("work"), "copy")
    message = _message(store, commit)
    assert message.subject == f"fork: copy from work at {old[:7]}"
    assert message.fields == Trailers(session="copy", turn=1, messages=2,
                                      title="deploy with [REDACTED:github-token]",
                                      forked_from=Lineage.parse(f"work@{old}"))
    # the first write to a past revision
    session, note = open_revision(store, "work", fork_as="again", redactor=redactor)
    try:
        assert note and "again" in note
        session.set_title("a new title")
    finally:
        session.close()
    [title_commit, fork_commit] = [c.message for c in store.log("again", limit=2)]
    assert fork_commit.fields.title == "deploy with [REDACTED:github-token]"
    assert title_commit.fields.forked_from == Lineage.parse(f"work@{old}")  # every commit of a fork
    assert GHP not in git("log", "--format=%B", "work..copy") + git("log", "--format=%B", "work..again")


def test_pull_fork_message_comes_from_the_events(store, redactor, tmp_path, git):
    with GitStore(tmp_path / "remote.git") as remote:
        _turn(remote, "work", "first", redactor)
        _turn(store, "other", "so the local repo exists", redactor)
        assert Remotes(store).pull(str(remote.path)).created == ["work"]
        _turn(remote, "work", "theirs", redactor)
    base = store.tip("work")
    ours = _leaky_old_commit(store, "work", redactor, base)
    report = Remotes(store).pull(str(tmp_path / "remote.git"))
    [(sid, fork_id, commit)] = report.forks
    assert (sid, commit, fork_id) == ("work", ours, f"work-{ours[:7]}")
    message = store.log(fork_id, limit=1)[0].message
    assert message.subject == f"fork: {fork_id} from work at {base[:7]} (diverged)"
    assert message.fields.title == "deploy with [REDACTED:github-token]"
    assert message.fields.forked_from == Lineage.parse(f"work@{base}")
    assert GHP not in git("log", "-1", "--format=%B", fork_id)


def test_recovery_fork_when_the_branch_moved(store, redactor, git):
    _turn(store, "work", "first", redactor)
    _turn(store, "work", "second", redactor)
    first = store.log("work", limit=2)[1].commit
    session = open_session(store, "work", redactor=redactor)
    session.append("turn/start", {"turn": session.next_turn})
    session.append("user/message", {"content": f"half a turn with {SK}"})
    base = session.tip
    session._journal.close()  # the process dies mid-turn...
    session._lock.release()
    assert store.update_ref(b"refs/heads/work", base, first, "moved by another tool")  # ...and the branch moves
    assert try_recover(store, "work", redactor) is not None
    [turn, made] = [c.message for c in store.log("work-recovered-1", limit=2)]
    assert made.subject == f"fork: work-recovered-1 from work at {base[:7]} (an interrupted turn)"
    assert made.fields.forked_from == Lineage.parse(f"work@{base}")
    assert turn.subject == "turn 3: half a turn with [REDACTED:api-key]"
    assert turn.fields.forked_from == Lineage.parse(f"work@{base}")
    assert SK not in git("log", "--format=%B", "work-recovered-1")


# -- the rules themselves ------------------------------------------------------------------


def _events(*types_and_data):
    return [make_event(i, t, d) for i, (t, d) in enumerate(types_and_data)]


def test_turn_numbering():
    events = _events(("session/title", {"title": "t"}), ("turn/start", {"turn": 1}), ("user/message", {"content": "a"}),
                     ("turn/start", {}), ("turn/start", {"turn": True}), ("turn/start", {"turn": 7}),
                     ("turn/end", {"turn": 7, "reason": "completed"}))
    assert turn_number({"turn": 3}, 9) == 3 and turn_number({"turn": "3"}, 9) == 10
    assert turns_of(events) == [0, 1, 1, 2, 3, 7, 7]
    assert turn_numbers(events) == [1, 2, 3, 7]
    assert last_turn(events) == 7 and next_turn(events) == 8
    assert last_turn([]) == 0 and next_turn([]) == 1
    assert next_turn(_events(("turn/start", {"turn": 5}), ("turn/start", {"turn": 2}))) == 6  # never reused


def test_lineage_and_trailers_round_trip():
    commit = "a" * 40
    lineage = Lineage.parse(f"work@{commit}")
    assert (lineage.session_id, lineage.commit) == ("work", commit)
    assert Lineage.parse(str(lineage)) == lineage
    for bad in ("work", f"@{commit}", "work@abc", f"wo rk@{commit}", f"work@{'A' * 40}"):
        with pytest.raises(ValueError):
            Lineage.parse(bad)
    full = Trailers(session="w", turn=3, model="m", events=(4, 9), messages=5, title="T", forked_from=lineage,
                    imported_from="f.json")
    assert list(full.format()) == ["Session", "Turn", "Model", "Events", "Messages", "Title", "Forked-From",
                                   "Imported-From"]
    assert Trailers.parse(full.format()) == full
    decoded = CommitMessage.decode(CommitMessage("s", full.format()).encode())
    assert decoded.fields == full
    assert Trailers.parse({"Turn": "x", "Events": "9-2", "Forked-From": "junk"}) == Trailers()
    assert len(Trailers(title="é" * 500).format()["Title"]) == 200
    assert rev_session_id("work~2") == "work" and rev_session_id("work@abcd") == "work"
    assert rev_session_id("-bad") is None


def test_commit_message_kinds():
    events = _events(("turn/start", {"turn": 1}), ("user/message", {"content": "\n  hello there\nmore"}),
                     ("step/start", {"step": 1}),
                     ("assistant/message", {"content": "hi", "model": "m1", "tool_calls": []}),
                     ("step/end", {"step": 1}), ("turn/end", {"turn": 1, "reason": "completed"}))
    turn = commit_message("w", events)
    assert turn.subject == "turn 1: hello there"
    assert turn.trailers == {"Session": "w", "Turn": "1", "Model": "m1", "Events": "0-5", "Messages": "2",
                             "Title": "hello there"}
    imported = commit_message("w", events, kind="import", source="x.json")
    assert imported.subject == "import: x.json" and imported.trailers["Imported-From"] == "x.json"
    lineage = Lineage.parse(f"w@{'b' * 40}")
    forked = commit_message("w2", events, 3, kind="fork", lineage=lineage, source="origin/w", why="diverged")
    assert forked.subject == "fork: w2 from origin/w at bbbbbbb (diverged)"
    assert forked.trailers == {"Session": "w2", "Turn": "1", "Messages": "2", "Title": "hello there",
                               "Forked-From": str(lineage)}
    undo = _events(*[(e.type, e.data) for e in events], ("session/undo", {"turn": 1}))
    assert commit_message("w", undo, 6).subject == "undo: turn 1"
    with pytest.raises(ValueError):
        commit_message("w", events, kind="fork")


def test_taken_by_counts_archived_ids_and_case(store, redactor):
    _turn(store, "Work", "first", redactor)
    _turn(store, "old", "first", redactor)
    store.archive("old")
    assert taken_by(store, "Work") == "Work"
    assert taken_by(store, "WORK") == "Work"
    assert taken_by(store, "old") == "archive/old"
    assert taken_by(store, "OLD") == "archive/old"
    assert taken_by(store, "new") is None
    with pytest.raises(SessionExists):
        store.branch_from("OLD", store.tip("Work"), commit_message("OLD", [], kind="fork",
                                                                    lineage=Lineage.parse(f"Work@{store.tip('Work')}")))
    with pytest.raises(SessionExists):
        _new(store, "Old")  # a new session may not take an archived id either
    assert fork_name(store, "old") == "old-1"
    _turn(store, "OLD-1", "first", redactor)
    store.archive("OLD-1")
    assert fork_name(store, "old") == "old-2"
    assert fork_name(store, "x" * 64, "recovered") == "x" * 50 + "-recovered-1"


def test_new_ids_skip_live_and_archived_ids_in_any_case(store, redactor):
    _turn(store, "abcd1234", "first", redactor)
    _turn(store, "beef0000", "first", redactor)
    store.archive("beef0000")
    tokens = iter(["ABCD1234", "BEEF0000", "cafe5678"])
    assert new_session_id(store, lambda _n: next(tokens)) == "cafe5678"
    assert len(new_session_id(store)) == 8
    assert pull_fork_name(store, "work", "c" * 40) == "work-ccccccc"
    assert pull_fork_name(store, "w" * 64, "c" * 40) == "w" * 56 + "-ccccccc"
    assert pull_fork_name(store, "abcd1234", "cafe5678" + "0" * 32) == "abcd1234-cafe567"
    _turn(store, "abcd1234-cafe567", "something else took the name", redactor)
    assert pull_fork_name(store, "abcd1234", "cafe5678" + "0" * 32) == "abcd1234-cafe5678"
    assert pull_fork_name(store, "abcd1234", "cafe5678" + "0" * 32, holds=lambda taker: True) == "abcd1234-cafe567"


def test_a_save_of_several_turns_names_them_with_the_first_prompt():
    """Two turns saved in one commit (a refused turn saved with the next) used to get the last
    turn's number with the first turn's prompt."""
    specs = [("turn/start", {"turn": 1}), ("user/message", {"content": "one"}), ("turn/end", {"reason": "completed"}),
             ("turn/start", {"turn": 2}), ("user/message", {"content": "two"}), ("turn/end", {"reason": "completed"}),
             ("turn/start", {"turn": 3}), ("user/message", {"content": "three"}), ("turn/end", {"reason": "completed"})]
    events = [make_event(i, t, d) for i, (t, d) in enumerate(specs)]
    assert commit_message("w", events, 3).subject == "turns 2-3: two"
    assert commit_message("w", events, 6).subject == "turn 3: three"
    assert commit_message("w", events, 3).fields.turn == 3
