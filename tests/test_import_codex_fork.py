"""Importing a Codex 0.171 fork: a fork of its origin's session, holding the origin's turns.

Codex 0.171 writes a fork (the TUI's ``/fork``, ``codex exec fork ID PROMPT``) without its
origin's lines: its ``session_meta`` names them (``history_base``: the origin's thread, the
ordinal of its first line after the fork and the bytes of its file before it), and its own
lines go on at that ordinal. The rollouts here are made that way, line by line; each fork
must come out as a fork of its origin's session at the turn it left it, sharing its commits,
in whatever order the files are imported.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_import_codex import _SUMMARY_LEAD, _compact

from gitsessions.ids import imported_fork_id, imported_session_id
from gitsessions.log.transcript import derive_messages
from gitsessions.store import GitStore
from gitsessions.transfer.readers import codex

ORIGIN_ID = "0199c000-0000-7000-8000-0000000000a1"
FORK_ID = "0199c000-0000-7000-8000-0000000000b2"
FORK2_ID = "0199c000-0000-7000-8000-0000000000c3"
TITLE = "Write a parser"
ORIGIN, FORK, FORK2 = (imported_session_id("codex", sid, TITLE) for sid in (ORIGIN_ID, FORK_ID, FORK2_ID))


class Rollout:
    """A rollout file Codex 0.171 writes, a line at a time, each with its ``ordinal``."""

    def __init__(self, folder: Path, sid: str, minute: int, base: dict | None = None, *, ordinals: bool = True):
        self.sid, self.minute, self.ordinals = sid, minute, ordinals
        self.path = folder / f"rollout-2025-10-08T10-{minute:02d}-00-{sid}.jsonl"
        self.ordinal = base.get("end_ordinal_exclusive", 0) if base else 0
        meta = {"id": sid, "timestamp": self.at(0), "cwd": "/w", "originator": "codex-tui", "cli_version": "0.171.0",
                "base_instructions": {"text": "You are Codex."}}
        if base:
            meta.update(forked_from_id=base["thread_id"], history_mode="paginated", history_base=base)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("", encoding="utf-8")
        self.add("session_meta", meta)

    def at(self, second: int) -> str:
        return f"2025-10-08T10:{self.minute:02d}:{second:02d}.000Z"

    def add(self, kind: str, payload: dict, second: int = 0) -> None:
        line = {"timestamp": self.at(second), "ordinal": self.ordinal, "type": kind, "payload": payload}
        if not self.ordinals:
            del line["ordinal"]
        self.ordinal += 1
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")

    def said(self, second: int, role: str, text: str) -> None:
        part = "output_text" if role == "assistant" else "input_text"
        self.add("response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]}, second)

    def turn(self, second: int, prompt: str, reply: str) -> Rollout:
        """A turn: its context, the task, the injected context, the prompt and its reply."""
        turn = f"{self.sid[-2:]}-{second}"
        self.add("turn_context", {"turn_id": turn, "cwd": "/w", "model": "gpt-5-codex",
                                  "approval_policy": {"granular": {}}}, second)
        self.add("event_msg", {"type": "task_started", "turn_id": turn}, second)
        self.said(second, "developer", "<permissions instructions>\nread-only\n</permissions instructions>")
        self.said(second, "user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")
        self.said(second + 1, "user", prompt)
        self.said(second + 2, "assistant", reply)
        self.add("event_msg", {"type": "task_complete", "turn_id": turn}, second + 2)
        self.add("world_state", {"cwd": "/w"}, second + 2)
        return self

    def base(self, *, offset: bool = True, ordinal: bool = True) -> dict:
        """Where a fork made now leaves this rollout (``history_base``)."""
        base: dict = {"thread_id": self.sid}
        if ordinal:
            base["end_ordinal_exclusive"] = self.ordinal
        if offset:
            base["end_byte_offset"] = self.path.stat().st_size
        return base


def _origin(folder: Path) -> tuple[Rollout, dict]:
    """The origin: two turns, the fork made, then a third turn of its own."""
    origin = Rollout(folder, ORIGIN_ID, 0).turn(1, TITLE, "Parsed.").turn(11, "Add tests", "Tested.")
    base = origin.base()
    origin.turn(21, "Now a lexer", "Lexed.")
    return origin, base


def _fork(folder: Path, base: dict) -> Rollout:
    return Rollout(folder, FORK_ID, 5, base).turn(1, "Use a parser generator instead", "Generated.")


def _events(repo: Path, sid: str) -> list:
    with GitStore(repo) as store:
        return store.load(sid).events


def _said(events: list) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in derive_messages(events)]


ORIGIN_TURNS = [("user", TITLE), ("assistant", "Parsed."), ("user", "Add tests"), ("assistant", "Tested.")]
FORK_TURN = [("user", "Use a parser generator instead"), ("assistant", "Generated.")]


def _check_fork(gs, git, repo_path: Path) -> None:
    """The fork forks the origin's session at its second turn, sharing those commits, and is sent them."""
    git("fsck", "--strict")
    point = git("rev-parse", f"{ORIGIN}~1").strip()  # the origin's turn 2
    assert git("merge-base", ORIGIN, FORK).strip() == point
    assert git("rev-parse", f"{FORK}~2").strip() == point  # its fork commit and own turn, on the origin's commits
    assert f"Forked-From: {ORIGIN}@{point}" in git("log", "-1", "--format=%B", FORK)
    assert git("log", "-1", "--format=%s", FORK).strip() == "turn 3: Use a parser generator instead"
    assert _said(_events(repo_path, FORK)) == [*ORIGIN_TURNS, *FORK_TURN]
    assert _said(_events(repo_path, ORIGIN)) == [*ORIGIN_TURNS, ("user", "Now a lexer"), ("assistant", "Lexed.")]
    assert f"{FORK} ← {ORIGIN}@{point[:7]}" in gs("list").out


def test_a_fork_imported_after_its_origin_forks_its_session_where_it_left_it(gs, git, repo_path, tmp_path):
    _, base = _origin(tmp_path)
    fork = _fork(tmp_path, base)
    assert gs("import", str(tmp_path / f"rollout-2025-10-08T10-00-00-{ORIGIN_ID}.jsonl")).code == 0
    r = gs("import", str(fork.path))
    assert r.code == 0, r.err
    assert r.out.split() == [FORK]  # its origin, read again with it, is found written
    _check_fork(gs, git, repo_path)
    events = _events(repo_path, FORK)
    shared = _events(repo_path, ORIGIN)[:len(events) - 9]
    assert events[:len(shared)] == shared  # the origin's events, same seq, times and data
    r = gs("import", str(fork.path))
    assert r.code == 0 and "nothing new" in r.err, r.err


def test_a_fork_imported_first_brings_its_origin_and_gives_the_same_sessions(gs, git, repo_path, tmp_path):
    folder = tmp_path / "sessions" / "2025" / "10" / "08"
    origin, base = _origin(folder)
    fork = _fork(folder, base)
    r = gs("import", str(fork.path))  # alone: its origin is read from its own file, and written first
    assert r.code == 0, r.err
    assert r.out.split() == [ORIGIN, FORK], r.err
    _check_fork(gs, git, repo_path)
    refs = git("for-each-ref", "--format=%(refname) %(objectname)")
    r = gs("import", str(origin.path))
    assert r.code == 0 and r.out == "" and "nothing new" in r.err, r.err
    assert git("for-each-ref", "--format=%(refname) %(objectname)") == refs
    other = tmp_path / "other.git"  # the other order, in another repo: the very same commits
    assert gs("import", str(origin.path), str(fork.path), env={"GS_REPO": str(other)}).code == 0
    assert git("--git-dir", str(other), "for-each-ref", "--format=%(refname) %(objectname)") == refs


def test_a_fork_of_a_fork_forks_the_fork_where_it_left_it(gs, git, repo_path, tmp_path):
    folder = tmp_path / "sessions" / "2025" / "10" / "08"
    _, base = _origin(folder)
    fork = _fork(folder, base)
    base2 = fork.base()
    fork.turn(31, "And a grammar file", "Written.")  # the fork goes on after its own fork was made
    fork2 = Rollout(folder, FORK2_ID, 9, base2).turn(1, "Hand-write it after all", "Hand-written.")
    r = gs("import", str(fork2.path))
    assert r.code == 0, r.err
    assert r.out.split() == [ORIGIN, FORK, FORK2], r.err
    git("fsck", "--strict")
    point = git("rev-parse", f"{FORK}~1").strip()  # the fork's first own turn
    assert git("merge-base", FORK, FORK2).strip() == point == git("rev-parse", f"{FORK2}~2").strip()
    assert f"Forked-From: {FORK}@{point}" in git("log", "-1", "--format=%B", FORK2)
    assert git("merge-base", ORIGIN, FORK).strip() == git("rev-parse", f"{ORIGIN}~1").strip()
    assert _said(_events(repo_path, FORK2)) == [*ORIGIN_TURNS, *FORK_TURN, ("user", "Hand-write it after all"),
                                                ("assistant", "Hand-written.")]
    assert _said(_events(repo_path, FORK))[-2:] == [("user", "And a grammar file"), ("assistant", "Written.")]
    assert f"{FORK2} ← {FORK}@{point[:7]}" in gs("list").out
    for path in sorted(folder.glob("rollout-*.jsonl")):
        r = gs("import", str(path))
        assert r.code == 0 and "nothing new" in r.err, r.err


@pytest.mark.parametrize("told_by", ["ordinal", "offset"])
def test_the_fork_point_is_told_by_ordinals_or_bytes_and_the_origin_found_where_codex_keeps_it(gs, git, repo_path,
                                                                                             tmp_path, told_by):
    """A fork copied elsewhere finds its origin in ``$CODEX_HOME/sessions``. Where the fork left it is
    told by the ordinal (however the origin's bytes changed since), or the byte offset where lines have none."""
    home = tmp_path / "codex-home"
    origin = Rollout(home / "sessions" / "2025" / "10" / "08", ORIGIN_ID, 0, ordinals=told_by == "ordinal")
    origin.turn(1, TITLE, "Parsed.").turn(11, "Add tests", "Tested.")
    base = origin.base(offset=told_by == "offset")
    if told_by == "ordinal":
        base["end_byte_offset"] = 10 ** 6  # the size Codex saw, before the file was rewritten
    origin.turn(21, "Now a lexer", "Lexed.")
    fork = _fork(tmp_path / "copied", base)
    r = gs("import", str(fork.path), env={"CODEX_HOME": str(home)})
    assert r.code == 0, r.err
    _check_fork(gs, git, repo_path)


def test_a_fork_whose_origin_is_not_here_is_imported_alone_and_completed_once_it_is(gs, git, repo_path, tmp_path):
    """Its own turns alone, said so, and read again every time (never taken as imported whole); once the
    origin's rollout is there, the whole fork is a new session forking the origin's, the first kept as it was."""
    _, base = _origin(tmp_path / "elsewhere")
    fork = _fork(tmp_path / "here", base)
    alone = imported_session_id("codex", FORK_ID, "Use a parser generator instead")
    r = gs("import", str(fork.path))
    assert r.code == 0, r.err
    assert r.out.split() == [alone] and f"its history begins in codex session {ORIGIN_ID}" in r.err
    assert "Forked-From" not in git("log", "--format=%B", alone)
    assert _said(_events(repo_path, alone)) == FORK_TURN
    kept = git("rev-parse", alone).strip()
    r = gs("import", str(fork.path))  # read again (it says why nothing is new), not passed over
    assert r.code == 0 and "nothing new" in r.err and f"its history begins in codex session {ORIGIN_ID}" in r.err
    shutil.copy(tmp_path / "elsewhere" / f"rollout-2025-10-08T10-00-00-{ORIGIN_ID}.jsonl", tmp_path / "here")
    r = gs("import", str(fork.path))
    assert r.code == 0, r.err
    whole = imported_fork_id(alone, FORK_ID)
    assert r.out.split() == [ORIGIN, whole], r.err
    git("fsck", "--strict")
    assert git("rev-parse", alone).strip() == kept  # nothing of it rewritten, nothing lost
    point = git("rev-parse", f"{ORIGIN}~1").strip()
    assert git("merge-base", ORIGIN, whole).strip() == point
    assert f"Forked-From: {ORIGIN}@{point}" in git("log", "-1", "--format=%B", whole)
    assert _said(_events(repo_path, whole)) == [*ORIGIN_TURNS, *FORK_TURN]
    fork.turn(31, "And a grammar file", "Written.")
    r = gs("import", str(fork.path))  # it grows on the whole one
    assert r.code == 0 and r.out.split() == [whole] and f"{whole}: 1 turn new" in r.err, r.err
    assert git("rev-parse", alone).strip() == kept


def test_an_origin_that_does_not_read_is_named(gs, repo_path, tmp_path):
    _, base = _origin(tmp_path)
    path = tmp_path / f"rollout-2025-10-08T10-00-00-{ORIGIN_ID}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[3] = "{oops\n"
    path.write_text("".join(lines), encoding="utf-8")
    r = gs("import", str(_fork(tmp_path, base).path))
    assert r.code == 1 and f"{path.name} (where its history begins), line 4: not JSON" in r.err, r.err
    assert not repo_path.exists()


def test_a_fork_made_after_compact_is_sent_what_the_origin_kept(gs, git, repo_path, tmp_path):
    """``/compact``, then ``/fork``: the summary opens the fork's first turn as it opens the origin's next."""
    origin = Rollout(tmp_path, ORIGIN_ID, 0).turn(1, TITLE, "Parsed.").turn(11, "Add tests", "Tested.")
    for line in _compact(15, "A parser with tests.", [TITLE, "Add tests"]):
        origin.add(line["type"], line["payload"], 16)
    base = origin.base()
    origin.turn(21, "Now a lexer", "Lexed.")
    fork = _fork(tmp_path, base)
    assert gs("import", str(fork.path)).code == 0
    git("fsck", "--strict")
    assert git("merge-base", ORIGIN, FORK).strip() == git("rev-parse", f"{ORIGIN}~1").strip()  # at turn 2
    lead = f"Summary of the conversation so far:\n{_SUMMARY_LEAD}\nA parser with tests."
    assert _said(_events(repo_path, FORK)) == [("user", TITLE), ("user", "Add tests"), ("user", lead), *FORK_TURN]
    assert _said(_events(repo_path, ORIGIN))[:3] == [("user", TITLE), ("user", "Add tests"), ("user", lead)]


def test_an_origin_is_looked_for_beside_the_fork_in_its_sessions_folder_and_where_codex_archives(tmp_path):
    home = tmp_path / ".codex"
    day = home / "sessions" / "2025" / "10" / "08"
    fork = day / f"rollout-2025-10-08T10-05-00-{FORK_ID}.jsonl"
    archived = home / "archived_sessions" / f"rollout-2025-10-01T10-00-00-{ORIGIN_ID}.jsonl"
    archived.parent.mkdir(parents=True)
    archived.write_text("", encoding="utf-8")
    assert codex.find_rollout(ORIGIN_ID, fork) == archived
    elsewhere = tmp_path / "copy" / fork.name
    assert codex.find_rollout(ORIGIN_ID, elsewhere) is None
    assert codex.find_rollout(ORIGIN_ID, elsewhere, [home / "sessions"]) == archived
    earlier = home / "sessions" / "2025" / "10" / "01" / archived.name
    earlier.parent.mkdir(parents=True)
    earlier.write_text("", encoding="utf-8")
    assert codex.find_rollout(ORIGIN_ID, fork) == earlier  # the live one before the archived one
    assert codex.find_rollout("../../*", fork) is None  # no id of a thread: never a pattern
