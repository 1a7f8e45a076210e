"""A fork of a fork imported: Claude Code's copy of a ``--fork-session`` copy, Codex's fork of a fork.

Claude Code 2.1 writes ``claude --resume ID --fork-session`` as a new file repeating the
lines it resumed (same uuids, the new session's id) and names no origin. A copy of a copy
repeats the origin's lines, then the first copy's own, then goes on with its own: it is a
fork of the first copy where they part, each turn once on each line of history, and the
same commits whatever order the three files are imported in (two machines importing them
get the same sessions). Built from the files Claude Code 2.1.197 wrote (tests/data). A
Codex rollout forked from a fork (``forked_from_id``) forks that fork's session alike, and
grows on its own session: a fork's sessions keep the header of the first origin's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from test_import_codex import FORK_FILE, FORK_ID, MAIN_FILE
from test_import_codex import TITLE as CODEX_TITLE
from test_import_codex import _lines as _rollout
from test_import_codex import _write as _write_rollout

from gitsessions.ids import imported_session_id

REAL = Path(__file__).parent / "data" / "claude_code" / "real" / "projects" / "-home-user-proj"
REAL_ORIGIN, COPY_ID = "90db39e8-d010-41f7-9e46-35f238abb614", "ba86959a-5d04-4b85-95c9-4fb3424581b1"
#: The origin under an id sorting after its copy's, the copy's copy under one sorting first:
#: the files are told apart by when they were begun, not by their names.
ORIGIN_ID, COPY2_ID = "f1db39e8-d010-41f7-9e46-35f238abb614", "0c2d7a55-3e1f-4b6a-9d8c-7e6f5a4b3c2d"
TITLE = "Please run echo hi"
ORIGIN, COPY, COPY2 = (imported_session_id("claude-code", sid, TITLE) for sid in (ORIGIN_ID, COPY_ID, COPY2_ID))


def _copy_of_copy() -> str:
    """``claude --resume COPY --fork-session``: its own start, the copy's lines under its id, then its turn."""
    lines = [json.loads(line) for line in (REAL / f"{COPY_ID}.jsonl").read_text(encoding="utf-8").splitlines()]
    said = [line for line in lines if line.get("uuid")]  # the origin's lines, then the copy's own turn
    last = said[-1]
    text = json.dumps
    out = [text({"type": "mode", "mode": "normal", "sessionId": COPY2_ID}),
           text({"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-12-01T18:52:40.100Z",
                 "sessionId": COPY2_ID, "content": "A question of the copy's copy"}),
           text({"type": "queue-operation", "operation": "dequeue", "timestamp": "2026-12-01T18:52:40.101Z",
                 "sessionId": COPY2_ID})]
    out += [text({**line, "sessionId": COPY2_ID}) for line in said]
    user = {**{k: v for k, v in last.items() if k not in ("message", "requestId")}, "type": "user",
            "parentUuid": last["uuid"], "uuid": "c2c2c2c2-0000-4000-8000-000000000001",
            "timestamp": "2026-12-01T18:52:40.250Z", "sessionId": COPY2_ID,
            "message": {"role": "user", "content": "A question of the copy's copy"}}
    reply = {**user, "type": "assistant", "parentUuid": user["uuid"], "uuid": "c2c2c2c2-0000-4000-8000-000000000002",
             "timestamp": "2026-12-01T18:52:40.600Z",
             "message": {"id": "msg_c2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                         "content": [{"type": "text", "text": "Reply 4 to: A question of the copy's copy"}]}}
    out += [text(user), text(reply), text({"type": "last-prompt", "lastPrompt": TITLE, "leafUuid": reply["uuid"],
                                            "sessionId": COPY2_ID})]
    return "".join(line + "\n" for line in out)


def _folder(root: Path) -> dict[str, Path]:
    folder = root / "projects" / "-home-user-proj"
    folder.mkdir(parents=True)
    files = {"origin": folder / f"{ORIGIN_ID}.jsonl", "copy": folder / f"{COPY_ID}.jsonl",
             "copy2": folder / f"{COPY2_ID}.jsonl"}
    files["origin"].write_text((REAL / f"{REAL_ORIGIN}.jsonl").read_text(encoding="utf-8").replace(
        REAL_ORIGIN, ORIGIN_ID), encoding="utf-8")
    files["copy"].write_text((REAL / f"{COPY_ID}.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    files["copy2"].write_text(_copy_of_copy(), encoding="utf-8")
    return files


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


ORDERS = {"one run": ["origin copy copy2"], "one run, reversed": ["copy2 copy origin"],
          "three runs": ["origin", "copy", "copy2"], "three runs, reversed": ["copy2", "copy", "origin"]}


def test_a_copy_of_a_copy_forks_the_copy_the_same_whatever_the_order(gs, tmp_path):
    files = _folder(tmp_path)
    refs = {}
    for name, runs in ORDERS.items():
        repo = tmp_path / f"{name}.git"
        for run in runs:
            r = gs("import", *(str(files[f]) for f in run.split()), env={"GS_REPO": str(repo)})
            assert r.code == 0, r.err
        refs[name] = _git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
        _git(repo, "fsck", "--strict")
    assert len(set(refs.values())) == 1, refs  # the same sessions and the same commits, whatever the order
    repo = tmp_path / "one run.git"
    assert sorted(refs["one run"].split()[0::2]) == sorted(f"refs/heads/{s}" for s in (ORIGIN, COPY, COPY2))

    def subjects(sid: str) -> list[str]:
        return _git(repo, "log", "--format=%s", sid).splitlines()

    assert subjects(ORIGIN) == ["turn 2: And a second question", "turn 1: Please run echo hi",
                                f"import: claude-code {ORIGIN_ID}"]
    assert subjects(COPY)[0] == "turn 3: A forked question"
    assert subjects(COPY2)[0] == "turn 4: A question of the copy's copy"
    turns = [s.split(":")[0] for s in subjects(COPY2) if s.startswith("turn ")]
    assert turns == ["turn 4", "turn 3", "turn 2", "turn 1"]  # each turn once on its line
    copy_tip = _git(repo, "rev-parse", COPY).strip()
    assert _git(repo, "merge-base", COPY, COPY2).strip() == copy_tip  # forks the copy after its last shared line
    assert f"Forked-From: {COPY}@{copy_tip}" in _git(repo, "log", "-1", "--format=%B", f"{COPY2}~1")
    tree = gs("tree", ORIGIN, "--json", env={"GS_REPO": str(repo)}).json()
    assert tree["id"] == ORIGIN and [c["id"] for c in tree["children"]] == [COPY]
    assert [c["id"] for c in tree["children"][0]["children"]] == [COPY2]
    r = gs("import", *(str(p) for p in files.values()), env={"GS_REPO": str(repo)})
    assert r.code == 0 and "nothing new" in r.err, r.err
    assert _git(repo, "for-each-ref", "--format=%(refname) %(objectname)") == refs["one run"]


def test_a_codex_fork_of_a_fork_forks_the_fork_and_grows_on_its_own_session(gs, git, tmp_path):
    fork2_id = "0199a1b2-eeee-7e5f-8a9b-000000000002"
    lines = _rollout(FORK_FILE)
    meta = {**lines[0], "timestamp": "2025-10-06T09:09:00.000Z"}
    meta["payload"] = {**meta["payload"], "id": fork2_id, "forked_from_id": FORK_ID, "timestamp": meta["timestamp"]}
    context = next(line for line in lines if line["type"] == "turn_context")

    def turn(minute: int, prompt: str, reply: str) -> list[dict]:
        def at(second: int) -> str:
            return f"2025-10-06T09:{minute}:0{second}.000Z"
        said = [{"timestamp": at(s), "type": "response_item", "payload": {
            "type": "message", "role": role, "content": [{"type": kind, "text": text}]}}
            for s, role, kind, text in ((1, "user", "input_text", prompt), (2, "assistant", "output_text", reply))]
        return [{**context, "timestamp": at(0)}, *said,
                {"timestamp": at(3), "type": "event_msg", "payload": {"type": "task_complete"}}]

    rollout = _write_rollout(tmp_path / f"rollout-2025-10-06T09-09-00-{fork2_id}.jsonl",
                             [meta, *lines[1:], *turn(10, "And a third?", "Third.")])
    r = gs("import", str(MAIN_FILE), str(FORK_FILE), str(rollout))
    assert r.code == 0, r.err
    fork, fork2 = (imported_session_id("codex", sid, CODEX_TITLE) for sid in (FORK_ID, fork2_id))
    tip = git("rev-parse", fork).strip()
    assert git("merge-base", fork, fork2).strip() == tip  # the fork's turns are its commits, once
    assert f"Forked-From: {fork}@{tip}" in git("log", "-1", "--format=%B", f"{fork2}~1")
    assert [s for s in git("log", "--format=%s", fork2).splitlines() if s.startswith("turn ")] == [
        "turn 3: And a third?", "turn 2: Delete main.py instead.", f"turn 1: {CODEX_TITLE}"]
    grown = git("rev-parse", fork2).strip()
    _write_rollout(rollout, [meta, *lines[1:], *turn(10, "And a third?", "Third."), *turn(11, "A fourth?", "Fourth.")])
    r = gs("import", str(rollout))
    assert r.code == 0 and r.out.split() == [fork2] and f"{fork2}: 1 turn new" in r.err, r.err
    assert git("rev-parse", f"{fork2}^").strip() == grown  # a fast-forward, no second session
    assert len(git("for-each-ref", "refs/heads").splitlines()) == 3
    git("fsck", "--strict")
