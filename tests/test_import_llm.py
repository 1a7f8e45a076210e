"""Importing llm's logs.db: each conversation a session, each prompt a turn, models and tokens kept.

The database is written by the real ``llm`` package (its CLI, in a subprocess) chatting with
the fake chat-completions server through llm's OpenAI plugin (``extra-openai-models.yaml``
in ``LLM_USER_PATH``): a conversation with a system prompt continued with ``-c``, and a
prompt that made the model call a tool (``--functions``), whose result llm sent back. The
conversations of llm before 0.36 (the ``responses`` table) are written into the same
database's long-standing tables, as that llm wrote them.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeapi import FakeChatServer, text, tool_calls, validate_messages

from gitsessions.ids import imported_session_id
from gitsessions.store import GitStore
from gitsessions.transfer.readers import llm_db

LLM = Path(sys.executable).with_name("llm")
ADD = "def add(a: int, b: int) -> int:\n    return a + b\n"


class _Llm:
    """The llm CLI, its user directory pointed at ``home`` and its model ``fake`` at the fake server."""

    def __init__(self, home: Path, server: FakeChatServer):
        self.home, self.server = home, server
        home.mkdir(parents=True, exist_ok=True)
        (home / "extra-openai-models.yaml").write_text(
            f"- model_id: fake\n  model_name: fake-model\n  api_base: {server.base_url}\n  supports_tools: true\n",
            encoding="utf-8")

    @property
    def db(self) -> Path:
        return self.home / "logs.db"

    def __call__(self, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LLM_"))}
        r = subprocess.run([str(LLM), *args, "--key", "x"], env={**env, "LLM_USER_PATH": str(self.home)},
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A logs.db llm wrote: two conversations (returns the directory; copy it before changing it)."""
    with FakeChatServer() as server:
        llm = _Llm(tmp_path_factory.mktemp("llm"), server)
        server.script(text("Hi there"))
        llm("-m", "fake", "-s", "Be brief.", "hello")
        server.script(text("Sure, more."))
        llm("-c", "tell me more")
        server.script(tool_calls(("call_add1", "add", '{"a": 2, "b": 3}')), text("It is 5."))
        llm("-m", "fake", "--functions", ADD, "what is 2+3?")
        yield llm.home


@pytest.fixture
def llm_home(written: Path, tmp_path: Path) -> Path:
    home = tmp_path / "llm"
    shutil.copytree(written, home)
    return home


def _threads(db: Path) -> dict[str, str]:
    with sqlite3.connect(db) as con:
        return {name: tid for tid, name in con.execute("select id, name from threads")}


def _sessions(r) -> dict[str, str]:
    return {sid.rsplit("-", 1)[0]: sid for sid in r.out.split()}


def test_each_conversation_is_a_session_and_each_prompt_a_commit(gs, git, repo_path, llm_home):
    db = llm_home / "logs.db"
    before = db.read_bytes()
    r = gs("import", str(db))
    assert r.code == 0, r.err
    sessions = _sessions(r)
    assert set(sessions) == {"hello", "what-is-2-3"}
    assert "1 file, 2 sessions written, 3 turns, 0 skipped" in r.err
    assert db.read_bytes() == before  # read only
    git("fsck", "--strict")
    hello, add = sessions["hello"], sessions["what-is-2-3"]
    assert git("log", "--format=%s", hello).splitlines() == [
        "turn 2: tell me more", "turn 1: hello", f"import: llm {_threads(db)['hello']}"]
    with sqlite3.connect(db) as con:
        said = [t for (t,) in con.execute("select datetime_utc from turns order by id")]
    dates = git("log", "--format=%aI", hello).split()
    assert [d[:19] for d in dates[:2]] == [said[1][:19], said[0][:19]]  # each turn dated when llm was asked
    with GitStore(repo_path) as store:
        first, second = store.load(hello), store.load(add)
    assert first.header["source"] == {"tool": "llm", "id": _threads(db)["hello"]}
    assert [e.data for e in first.events if e.type == "session/system"] == [{"content": "Be brief."}]
    replies = [e.data for e in first.events if e.type == "assistant/message"]
    assert [(r["content"], r["model"]) for r in replies] == [("Hi there", "fake"), ("Sure, more.", "fake")]
    assert replies[0]["usage"] == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    # One prompt, two model calls: one turn of two steps, the call and llm's result between them.
    assert [e.type for e in second.events if e.type in ("turn/start", "step/start", "tool/result")] == [
        "turn/start", "step/start", "tool/result", "step/start"]
    call = next(e.data for e in second.events if e.type == "assistant/message")
    assert call["tool_calls"] == [{"id": "call_add1", "name": "add", "arguments": '{"a": 2, "b": 3}'}]
    assert [e.data["content"] for e in second.events if e.type == "tool/result"] == ["5"]


def test_an_imported_conversation_continues_against_the_strict_server(gs, fake_api, llm_home):
    sessions = _sessions(gs("import", str(llm_home / "logs.db")))
    for name, sid in sessions.items():
        fake_api.reset()
        r = gs("ask", "-S", sid, "one more")
        assert r.code == 0, r.err
        messages = fake_api.requests[-1]["messages"]
        assert validate_messages(messages) is None
        assert messages[-1] == {"role": "user", "content": "one more"}
        if name == "hello":  # llm's system prompt is the session's
            assert messages[0] == {"role": "system", "content": "Be brief."}


def test_again_nothing_new_and_a_continued_conversation_fast_forwards(gs, git, llm_home):
    db = llm_home / "logs.db"
    sessions = _sessions(gs("import", str(db)))
    refs = git("for-each-ref", "--format=%(refname) %(objectname)")
    r = gs("import", str(db))
    assert r.code == 0 and r.out == "" and "nothing new in logs.db" in r.err
    assert git("for-each-ref", "--format=%(refname) %(objectname)") == refs
    tip = git("rev-parse", sessions["hello"]).strip()
    with FakeChatServer() as server:
        llm = _Llm(llm_home, server)
        server.script(text("Once more."))
        llm("-c", "--cid", _threads(db)["hello"], "again")
    r = gs("import", str(db))
    assert r.code == 0, r.err
    assert r.out.split() == [sessions["hello"]] and "1 turn new" in r.err
    assert git("rev-parse", f"{sessions['hello']}^").strip() == tip
    git("fsck", "--strict")


def _legacy(db: Path, cid: str, name: str, rows: list[dict], calls=(), results=()) -> None:
    """Write a conversation into the long-standing tables, as llm before 0.36 did."""
    with sqlite3.connect(db) as con:
        con.execute("insert into conversations (id, name, model) values (?, ?, ?)", (cid, name, "gpt-4o-mini"))
        for row in rows:
            row = {"model": "gpt-4o-mini", "conversation_id": cid, "options_json": "{}", **row}
            con.execute(f"insert into responses ({', '.join(row)}) values ({', '.join('?' * len(row))})",
                        list(row.values()))
        for rid, call_id, fn, args in calls:
            con.execute("insert into tool_calls (response_id, name, arguments, tool_call_id) values (?, ?, ?, ?)",
                        (rid, fn, args, call_id))
        for rid, call_id, fn, output in results:
            con.execute("insert into tool_results (response_id, name, output, tool_call_id) values (?, ?, ?, ?)",
                        (rid, fn, output, call_id))


def test_the_long_standing_tables_are_read_and_preferred_where_both_hold_it(gs, repo_path, llm_home):
    db = llm_home / "logs.db"
    _legacy(db, "01hx0000000000000000000000", "Weather", [
        {"id": "01hx0000000000000000000001", "prompt": "Weather in Paris?", "system": "You are terse.",
         "response": "", "datetime_utc": "2024-05-01T10:00:00.000001", "input_tokens": 30, "output_tokens": 8,
         "token_details": json.dumps({"prompt_tokens_details": {"cached_tokens": 16}})},
        {"id": "01hx0000000000000000000002", "prompt": "", "system": "You are terse.", "response": "Sunny, 21 C.",
         "datetime_utc": "2024-05-01T10:00:02.000001+00:00", "input_tokens": 45, "output_tokens": 6},
        {"id": "01hx0000000000000000000003", "prompt": "And tomorrow?", "system": "You are terse.",
         "response": "Rain.", "datetime_utc": "2024-05-01T10:05:00.000001", "resolved_model": "gpt-4o-mini-2024"},
    ], calls=[("01hx0000000000000000000001", "call_w1", "weather", '{"city": "Paris"}')],
        results=[("01hx0000000000000000000002", "call_w1", "weather", "sunny 21")])
    # The dual-write era: the first thread again, in the old tables, with less of it.
    hello = _threads(db)["hello"]
    _legacy(db, hello, "hello", [{"id": "01hx0000000000000000000009", "prompt": "hello", "system": "Be brief.",
                                  "response": "Hi there", "datetime_utc": "2024-06-01T10:00:00+00:00"}])
    r = gs("import", str(db))
    assert r.code == 0, r.err
    sessions = _sessions(r)
    assert set(sessions) == {"weather", "hello", "what-is-2-3"}
    with GitStore(repo_path) as store:
        weather, greeting = store.load(sessions["weather"]), store.load(sessions["hello"])
    assert [e.data["content"] for e in weather.events if e.type == "user/message"] == ["Weather in Paris?",
                                                                                        "And tomorrow?"]
    replies = [e.data for e in weather.events if e.type == "assistant/message"]
    assert replies[0]["tool_calls"] == [{"id": "call_w1", "name": "weather", "arguments": '{"city": "Paris"}'}]
    assert replies[0]["usage"] == {"prompt_tokens": 30, "completion_tokens": 8, "total_tokens": 38,
                                   "prompt_tokens_details": {"cached_tokens": 16}}
    assert [r["model"] for r in replies] == ["gpt-4o-mini", "gpt-4o-mini", "gpt-4o-mini-2024"]
    assert [e.data["content"] for e in weather.events if e.type == "tool/result"] == ["sunny 21"]
    assert [e.data for e in weather.events if e.type == "session/system"] == [{"content": "You are terse."}]
    assert weather.events[0].time == 1714557600000  # naive times are UTC, as llm wrote them
    assert sum(e.type == "turn/start" for e in greeting.events) == 2  # the thread holds more: it is read


def test_the_database_is_read_while_llm_holds_it_for_writing(gs, llm_home):
    with sqlite3.connect(llm_home / "logs.db", isolation_level=None) as con:
        con.execute("begin immediate")
        con.execute("insert into threads (id, name) values ('01zz', 'pending')")
        r = gs("import", str(llm_home / "logs.db"))
        con.execute("rollback")
    assert r.code == 0, r.err
    assert len(r.out.split()) == 2


def test_a_database_that_is_not_llms_is_refused(gs, repo_path, tmp_path):
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as con:
        con.execute("create table notes (id integer primary key, body text)")
    r = gs("import", str(other))
    assert r.code == 1 and "cannot import other.db" in r.err and "without llm's conversations" in r.err
    assert not repo_path.exists()
    broken = tmp_path / "broken.db"
    broken.write_bytes(llm_db.MAGIC + b"\x00" * 80)
    r = gs("import", str(broken))
    assert r.code == 1 and "cannot import broken.db" in r.err


def test_from_stdin_the_bytes_are_read(gs, llm_home):
    r = gs("import", "--from", "llm", "-", input=(llm_home / "logs.db").read_bytes())
    assert r.code == 0, r.err
    assert len(r.out.split()) == 2


def test_default_paths_honour_llm_user_path_and_the_platform_directory(tmp_path):
    home = tmp_path / "h"
    linux = home / ".config" / "io.datasette.llm"
    mine = tmp_path / "mine"
    for d in (linux, mine):
        d.mkdir(parents=True)
        (d / "logs.db").write_bytes(llm_db.MAGIC)
    assert llm_db.default_paths({}, home) == [linux / "logs.db"]
    assert llm_db.default_paths({"LLM_USER_PATH": str(mine)}, home) == [mine / "logs.db"]
    assert llm_db.default_paths({"XDG_CONFIG_HOME": str(tmp_path / "none")}, home) == []
    assert llm_db.default_paths({"LLM_USER_PATH": str(tmp_path / "none")}, home) == []
    assert llm_db.user_dir({}, home) == linux  # where discovery says it looked
    assert llm_db.user_dir({"LLM_USER_PATH": str(tmp_path / "none")}, home) == tmp_path / "none"


def test_a_thread_forked_in_llm_is_a_fork_of_its_origins_session(gs, git, llm_home):
    """Written with llm's own store API: a fork is a new thread at an existing message (llm's CLI makes none)."""
    import sqlite_utils
    from llm import parts
    from llm.logs import LogStore

    db = llm_home / "logs.db"
    origin = _threads(db)["hello"]
    with sqlite3.connect(db) as con:
        (first_reply,) = con.execute("select tip_message_hash from turns where thread_id = ? order by id limit 1",
                                     (origin,)).fetchone()
    store = LogStore(sqlite_utils.Database(db))
    fork_id = store.fork(first_reply, name="hello", forked_from=origin)
    store.append(fork_id, [parts.user("what else?"), parts.assistant("Nothing else.")])
    store.db.close()
    r = gs("import", str(db))
    assert r.code == 0, r.err
    hello, fork = imported_session_id("llm", origin, "hello"), imported_session_id("llm", fork_id, "hello")
    assert sorted(r.out.split()) == sorted([hello, fork, imported_session_id("llm", _threads(db)["what is 2+3?"],
                                                                               "what is 2+3?")])
    turn1 = git("rev-parse", f"{hello}~1").strip()
    assert git("merge-base", hello, fork).strip() == turn1
    assert f"Forked-From: {hello}@{turn1}" in git("log", "-1", "--format=%B", fork)
    assert git("log", "-1", "--format=%s", fork).strip() == "turn 2: what else?"
    assert gs("import", str(db)).out == ""  # found again


def test_a_turn_waiting_for_a_tools_result_is_left_for_the_next_import(gs, git, repo_path, llm_home, tmp_path):
    """llm logs the model's call before the tool has run: until the next call logs the result, the turn waits."""
    db = llm_home / "logs.db"
    full = shutil.copy(db, tmp_path / "full.db")
    thread = _threads(db)["what is 2+3?"]
    with sqlite3.connect(db) as con:
        (tip, first) = con.execute("select tip_message_hash, id from turns where thread_id = ? order by id limit 1",
                                   (thread,)).fetchone()
        con.execute("update threads set tip_message_hash = ? where id = ?", (tip, thread))
        con.execute("delete from turns where thread_id = ? and id != ?", (thread, first))
    r = gs("import", str(db))
    assert r.code == 0, r.err
    assert "its last turn waits for a tool's result" in r.err
    assert len(r.out.split()) == 1  # the tool conversation has no finished turn yet
    shutil.copy(full, db)
    r = gs("import", str(db))
    assert r.code == 0 and "waits for a tool" not in r.err, r.err
    sid = imported_session_id("llm", thread, "what is 2+3?")
    assert r.out.split() == [sid]
    with GitStore(repo_path) as store:
        events = store.load(sid).events
    assert [e.data for e in events if e.type == "turn/end"] == [{"turn": 1, "reason": "completed"}]
    assert [e.data["content"] for e in events if e.type == "tool/result"] == ["5"]


def test_from_llm_without_a_file_reads_llm_user_path_and_says_what_it_found(gs, llm_home, tmp_path):
    r = gs("import", "--from", "llm", env={"LLM_USER_PATH": str(llm_home)})
    assert r.code == 0, r.err
    assert f"found 1 llm logs database in {llm_home}" in r.err
    assert len(r.out.split()) == 2
    r = gs("import", "--from", "llm", env={"LLM_USER_PATH": str(tmp_path / "none")})
    assert r.code == 1 and "no llm folder here" in r.err and "set LLM_USER_PATH" in r.err


def test_the_test_extra_installs_the_llm_these_tests_run():
    # pip install -e '.[test]' must be enough for this file: its databases are written by the llm CLI.
    tomllib = pytest.importorskip("tomllib")
    extra = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    names = [req.split(">")[0].split("=")[0].split("[")[0].strip() for req in extra["optional-dependencies"]["test"]]
    assert "llm" in names


def test_a_conversation_renamed_in_llm_is_retitled_on_the_next_import(gs, git, llm_home):
    db = llm_home / "logs.db"
    hello = _sessions(gs("import", str(db)))["hello"]
    tid = _threads(db)["hello"]
    with sqlite3.connect(db) as con:  # what renaming it in llm's store leaves
        for table in ("threads", "conversations"):
            if con.execute("select 1 from sqlite_master where name = ?", (table,)).fetchone():
                con.execute(f"update {table} set name = 'Greetings' where id = ?", (tid,))  # noqa: S608
    r = gs("import", str(db))
    assert r.code == 0 and r.out.split() == [hello] and f"{hello}: titled 'Greetings'" in r.err, r.err
    assert git("log", "-1", "--format=%s", hello).strip() == "title: Greetings"
    assert "nothing new" in gs("import", str(db)).err
