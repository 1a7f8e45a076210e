"""A new attempt at a turn: ``/retry``, ``/edit [N]`` and ``gs retry REV``.

In-process: the REPL over a real store with scripted input (tests/test_repl_inprocess.py's
``run``), the CLI through the ``gs`` fixture; the branches are read back with the real git CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scripted import ScriptedProvider
from test_repl_inprocess import Script, repl, run, subjects

from gitsessions.store import GitStore
from gitsessions.writer.redo import attempt_at


@pytest.fixture
def store(repo_path: Path):
    with GitStore(repo_path) as s:
        yield s


def heads(git) -> dict[str, str]:
    refs = git("for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads").split("\n")
    return dict(line.split() for line in refs if line)


def saved(store: GitStore, sid: str) -> str:
    from gitsessions.cli.display.render import local_time

    tip = store.log(sid, limit=1)[0]
    return f"{local_time(tip.time)} · {tip.commit[:7]}"


def user_prompts(store: GitStore, sid: str, model_view: bool = True) -> list[str]:
    """The user prompts the model sees in ``sid`` (or, ``model_view=False``, every one in its log)."""
    snap = store.load(sid)
    if model_view:
        from gitsessions.log.transcript import derive_messages

        return [m["content"] for m in derive_messages(snap.events) if m["role"] == "user"]
    return [e.data["content"] for e in snap.events if e.type == "user/message"]


def test_retry_is_a_sibling_fork_at_the_turns_parent(store, git):
    run(store, "one", "two")
    before = heads(git)
    _r, script = run(store, "/retry", "three")
    out = script.text
    assert "(turn 2 again in work-1, forked from work at " in out
    assert "the earlier attempt stays in work: /open work goes back" in out
    assert script.prompts[-1] == "work-1 › "
    assert heads(git)["work"] == before["work"]  # the earlier attempt did not move
    assert git("merge-base", "work", "work-1").strip() == git("rev-parse", "work~1").strip()
    assert subjects(store, "work-1")[:3] == ["turn 3: three", "turn 2: two", "fork: work-1 from work at "
                                             + git("rev-parse", "--short=7", "work~1").strip()]
    assert user_prompts(store, "work-1") == ["one", "two", "three"]
    git("fsck", "--strict")


def test_retry_of_a_retry_is_named_after_the_session_the_turn_left(store, git):
    run(store, "one", "two")
    run(store, "/retry", "/retry")
    assert sorted(heads(git)) == ["work", "work-1", "work-2"]
    base = git("rev-parse", "work~1").strip()
    assert git("merge-base", "work-1", "work-2").strip() == base  # siblings, both at work's turn 1
    assert f"Forked-From: work@{base}" in git("log", "-1", "--format=%B", "work-2")


def test_retry_of_turn_one_drops_it_from_what_the_model_sees(store, git):
    """Turn 1 shares the session's first save: the fork starts there, with turn 1 undone."""
    run(store, "one")
    model = ScriptedProvider()
    _r, script = run(store, "/retry", model=model)
    assert "turn 1 again in work-1" in script.text
    assert [m["content"] for m in model.requests[-1][0]] == ["one"]  # sent once, not twice
    assert git("merge-base", "work", "work-1").strip() == git("rev-parse", "work").strip()
    assert subjects(store, "work-1")[:2] == ["turn 2: one", "undo: turn 1"]
    assert user_prompts(store, "work-1") == ["one"]
    assert user_prompts(store, "work-1", model_view=False) == ["one", "one"]  # the log keeps both
    git("fsck", "--strict")


def test_edit_sends_the_changed_prompt_in_a_fork_at_the_turn_before(store, git):
    run(store, "one", "two", "three")
    seen: list[tuple[str, str, bool]] = []

    def edit(prompt: str, text: str, use_editor: bool) -> str | None:
        seen.append((prompt, text, use_editor))
        return text + "\nplus"  # a prompt of several lines

    script = Script("/edit 2 --editor", "/edit", "/exit")
    r = repl(store, ScriptedProvider(), script, edit=edit)
    r.run()
    assert seen[0] == ("edit turn 2 › ", "two", True)
    assert seen[1] == ("edit turn 2 › ", "two\nplus", False)  # in work-1 now: its last turn
    assert user_prompts(store, "work-1") == ["one", "two\nplus"]
    assert git("merge-base", "work", "work-1").strip() == git("rev-parse", "work~2").strip()
    # the second /edit tried work-1's turn 2 again: a sibling of work-1, named after work
    assert user_prompts(store, "work-2") == ["one", "two\nplus\nplus"]
    assert git("merge-base", "work-1", "work-2").strip() == git("rev-parse", "work~2").strip()
    assert subjects(store, "work")[0] == "turn 3: three"


def test_edit_behind_a_pipe_reads_the_next_line(store, git):
    run(store, "one", "two")
    _r, script = run(store, "/edit 1", "uno", "/edit 1", "", "/edit x", "/edit 9", "/retry now")
    out = script.text
    assert "(turn 1 was: one; the next line replaces it)" in out
    assert "turn 1 edited in work-1" in out
    assert "(edit cancelled: nothing was sent)" in out
    assert "usage: /edit [N] [--editor]" in out
    assert "error: work-1 has no turn 9: its turns are 1 to 2" in out
    assert "usage: /retry" in out
    assert user_prompts(store, "work-1") == ["uno"]
    assert sorted(heads(git)) == ["work", "work-1"]


def test_nothing_to_retry_in_a_new_session(store):
    _r, script = run(store, "/retry", "/edit")
    assert script.text.splitlines() == ["error: nothing to try again yet: the session has no saved turns",
                                        "error: nothing to edit yet: the session has no saved turns"]
    assert store.tip("work") is None


def test_retry_from_a_past_revision_opened_read_only(store, git):
    run(store, "one", "two", "three")
    before = heads(git)
    _r, script = run(store, "/open work~1", "/retry")
    assert "turn 2 again in work-1" in script.text
    assert heads(git)["work"] == before["work"]
    assert sorted(heads(git)) == ["work", "work-1"]  # the past revision opened wrote nothing
    assert user_prompts(store, "work-1") == ["one", "two"]


def test_attempt_at_names_the_turn_and_its_fork_point(store, git):
    run(store, "one", "two")
    tip = store.resolve("work")
    attempt = attempt_at(store, tip, 2)
    assert (attempt.turn, attempt.prompt, attempt.undo) == (2, "two", ())
    assert attempt.base.commit == git("rev-parse", "work~1").strip()
    first = attempt_at(store, tip, 1)
    assert (first.prompt, first.undo, first.base.commit) == ("one", (1,), git("rev-parse", "work~1").strip())


def test_gs_retry_on_the_command_line(gs, git):
    assert gs("ask", "-S", "w", "one").code == 0
    assert gs("ask", "-S", "w", "two").code == 0
    tip = git("rev-parse", "w").strip()
    r = gs("retry", "w")
    assert r.code == 0, r.err
    assert r.out == "echo: two\n"
    assert "turn 2 again in w-1" in r.err and "gs chat w goes back" in r.err
    assert git("rev-parse", "w").strip() == tip
    assert git("merge-base", "w", "w-1").strip() == git("rev-parse", "w~1").strip()
    r = gs("retry", "w~1", "--fork", "alt")
    assert r.code == 0, r.err
    assert "turn 1 again in alt" in r.err
    r = gs("retry", "nope")
    assert r.code == 1 and "no session 'nope'" in r.err
    git("fsck", "--strict")


def test_tree_lists_the_family_and_jumps_to_a_past_turn(store, git):
    run(store, "one", "two")
    run(store, "/retry")
    printed = run(store, "/tree", session="work-1")[1].text
    assert printed.splitlines() == [
        f'  work  "one"  2 turns · {saved(store, "work")}',
        "  │    turn 1: one",
        "  │    turn 2: two",
        f'> └─ work-1  (from work at turn 1)  "two"  2 turns · {saved(store, "work-1")}  ← current',  # the chat
        "          turn 2: two",
    ]

    offered: list = []

    def pick_turn_one(spots, selected):
        offered.append((spots, selected))
        return next(s for s in spots if s.session_id == "work" and s.label.strip(" │").startswith("turn 1"))

    before = heads(git)
    script = Script("/tree", "from the past", "/exit")
    repl(store, ScriptedProvider(), script, session="work-1", pick_spot=pick_turn_one).run()
    spots, selected = offered[0]
    assert spots[selected].session_id == "work-1" and spots[selected].commit is None
    assert "what you send goes to new session work-2, forked from work at" in script.text
    assert f"(work@{git('rev-parse', 'work~1').strip()[:12]} is not the tip of work" in script.text  # not 40 hex
    assert script.prompts == ["work-1 › ", "work-2 › ", "work-2 › "]
    after = heads(git)
    assert {k: after[k] for k in before} == before  # nothing moved
    assert git("merge-base", "work", "work-2").strip() == git("rev-parse", "work~1").strip()
    assert user_prompts(store, "work-2") == ["one", "from the past"]


def test_tree_jump_to_a_session_and_cancel(store):
    run(store, "one", "two")
    run(store, "/retry")
    picks = iter([lambda spots: next(s for s in spots if s.session_id == "work" and s.commit is None),
                  lambda spots: None])
    script = Script("/tree", "/tree", "/exit")
    repl(store, ScriptedProvider(), script, session="work-1",
         pick_spot=lambda spots, _sel: next(picks)(spots)).run()
    assert "(opened work: 4 messages)" in script.text
    assert script.prompts == ["work-1 › ", "work › ", "work › "]


def test_resume_needs_a_terminal_and_no_other_session(gs):
    assert gs("ask", "-S", "w", "one").code == 0
    r = gs("chat", "-r")  # stdin is no terminal here
    assert r.code == 2 and "--resume picks from a list on a terminal" in r.err
    r = gs("chat", "-r", "w")
    assert r.code == 2 and "give one of SESSION, --continue and --resume" in r.err


def test_edit_forks_as_gs_ask_on_the_revision_before_the_turn(gs, git):
    """/edit N and ``gs ask REV~k --fork NEW`` make the same fork: one implementation (open_revision)."""
    for q in ("one", "two", "three"):
        assert gs("ask", "-S", "w", q).code == 0
    assert gs("ask", "-S", "w~1", "--fork", "by-ask", "TWO").code == 0
    r = gs("chat", "w", input="/edit 3\nTWO\n/exit\n")
    assert r.code == 0, r.err

    def shape(sid: str) -> list[str]:  # subjects and lineage of what the fork added, and its fork point
        added = git("log", "--format=%s%n%(trailers:key=Forked-From)", f"w..{sid}").replace(sid, "NEW")
        return [*added.split("\n"), git("merge-base", "w", sid)]

    assert shape("w-1") == shape("by-ask")
    assert gs("show", "w-1", "--format", "json").json()["messages"] == \
        gs("show", "by-ask", "--format", "json").json()["messages"]


# -- the picker of gs chat -r, /open and /tree, in-process (prompt_toolkit's pipe input) ----------


def picked(keys: str, rows: list[str], **kw):
    from prompt_toolkit.application import create_app_session
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from gitsessions.cli.display.picker import pick

    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        pipe.send_text(keys)
        return pick(rows, lambda r: r, title="pick", **kw)


def test_picker_moves_filters_and_cancels():
    rows = [f"session-{i:05d}" for i in range(10_000)]
    assert picked("\r", rows) == "session-00000"
    assert picked("\x1b[B\x1b[B\r", rows) == "session-00002"
    assert picked("\x1b[B\x1b[A\x1b[A\r", rows) == "session-00000"  # the cursor stops at the top
    assert picked("09999\r", rows) == "session-09999"
    assert picked("0999\x1b[B\r", rows) == "session-09990"  # session-00999, then 09990: the second
    assert picked("\r", rows, selected=7) == "session-00007"
    assert picked("no such\r\x1b", rows) is None  # Enter on nothing does nothing; Esc cancels
    with pytest.raises(KeyboardInterrupt):  # Ctrl+C interrupts, as everywhere in gs (exit 130)
        picked("\x03", rows)


def test_picker_adds_what_the_search_finds_and_enter_waits_for_it():
    asked: list[str] = []

    def search(query: str) -> set[str]:
        asked.append(query)
        return {"beta"} if query == "durian" else set()

    rows = ["alpha", "beta", "gamma"]
    assert picked("durian\r", rows, search=search) == "beta"
    assert asked[-1] == "durian"  # (a shorter start of it, when typing was slow, before)
    del asked[:]
    assert picked("al\r", rows, search=search) == "alpha"  # two characters: no search
    assert asked == []


# -- what a new attempt sends: only the turns the model should see (the undos name their turn) ----


def sent(fake_api) -> list[str]:
    """The contents of the last request's messages (the system prompt left out)."""
    return [m["content"] for m in fake_api.requests[-1]["messages"] if m["role"] != "system"]


def test_edit_of_turn_one_after_undoing_every_turn_sends_only_the_edit(gs, fake_api):
    assert gs("ask", "-S", "u", "A").code == 0 and gs("ask", "-S", "u", "B").code == 0
    r = gs("chat", "u", input="/undo\n/undo\n/edit 1\nA2\n")
    assert r.code == 0, r.err
    assert sent(fake_api) == ["A2"]
    shown = gs("show", "u-1", "--format", "json").json()["messages"]
    assert [m["content"] for m in shown if m["role"] == "user"] == ["A2"]


def test_edit_of_turn_one_in_a_fork_that_undid_it_sends_only_the_edit(gs, fake_api, git):
    assert gs("ask", "-S", "m", "A").code == 0
    assert gs("chat", "m", input="/edit 1\nA2\n").code == 0
    assert sent(fake_api) == ["A2"]
    r = gs("chat", "m-1", input="/edit 1\nA3\n")
    assert r.code == 0, r.err
    assert "turn 1 edited in m-2" in r.err + r.out
    assert sent(fake_api) == ["A3"]
    assert git("log", "-1", "--skip=1", "--format=%s", "m-2").strip() == "undo: turn 1"


@pytest.mark.parametrize(("typed", "last"), [("/edit 2\nT2-NEWER\n", "T2-NEWER"), ("/retry\n", "T2")])
def test_an_imported_turn_tried_again_after_an_undo_drops_it_and_the_ones_after(gs, fake_api, git, tmp_path,
                                                                                typed, last):
    path = tmp_path / "three.json"
    path.write_text(json.dumps([{"role": r, "content": c} for r, c in
                                (("user", "T1"), ("assistant", "R1"), ("user", "T2"), ("assistant", "R2"),
                                 ("user", "T3"), ("assistant", "R3"))]))
    assert gs("import", str(path), "--as", "imp").code == 0
    r = gs("chat", "imp", input="/undo\n" + typed)
    assert r.code == 0, r.err
    assert sent(fake_api) == ["T1", "R1", last]
    added = git("log", "--format=%s", "imp..imp-1").split("\n")
    assert added[1:3] == ["undo: turn 2", "undo: turn 3"]  # newest first: 3 was dropped, then 2


# -- the names and the lock of a fork gs picked itself -------------------------------------------


def test_a_default_fork_name_whose_lock_another_writer_holds_is_passed_over(store, gs, git):
    assert gs("ask", "-S", "cc", "one").code == 0 and gs("ask", "-S", "cc", "two").code == 0
    assert gs("retry", "cc").code == 0  # cc-1
    script = Script()  # its /open below holds cc-2, which it announces, while the chat runs
    chat = repl(store, ScriptedProvider(), script, session="cc")
    chat.command("/open cc~1")
    assert "goes to new session cc-2" in script.text
    try:
        r = gs("retry", "cc")
        assert r.code == 0, r.err
        assert "turn 2 again in cc-3" in r.err
        r = gs("retry", "cc", "--fork", "cc-2")  # a name the user gives waits for its lock, then is refused
        assert r.code == 1 and "session 'cc-2' is being written by pid" in r.err
    finally:
        chat.session.close()
    assert "cc-2" not in heads(git)


def test_an_empty_fork_name_is_refused(gs, git):
    assert gs("ask", "-S", "w", "one").code == 0
    r = gs("retry", "w", "--fork", "")
    assert r.code != 0 and "session id" in r.err
    assert sorted(heads(git)) == ["w"]


# -- turn 1 tried again: the fork holds it undone, so the new attempt is its turn 2 -----------------


def title_trailer(git, sid: str) -> str:
    return git("log", "-1", "--format=%(trailers:key=Title,valueonly)", sid).strip()


def test_a_new_attempt_at_turn_one_says_its_number_and_is_titled_by_its_own_prompt(gs, git):
    assert gs("ask", "-S", "solo", "first try").code == 0
    r = gs("retry", "solo")
    assert r.code == 0, r.err
    assert "turn 1 again in solo-1, forked from solo at " in r.err
    assert "; it is turn 2 there, after the first attempt, which its log keeps undone; the earlier attempt " \
        "stays in solo: gs chat solo goes back" in r.err
    assert "(" not in r.err.split("turn 1 again")[1].split("\n")[0]  # no parentheses nested in parentheses
    assert gs("chat", "solo", input="/edit 1\nsecond try\n").code == 0
    assert title_trailer(git, "solo-2") == "second try"  # not the undone turn 1's
    assert title_trailer(git, "solo") == "first try"
    assert git("log", "-1", "--format=%s", "solo-2").strip() == "turn 2: second try"


def test_a_new_attempt_at_a_later_turn_keeps_its_number(gs):
    assert gs("ask", "-S", "w", "one").code == 0 and gs("ask", "-S", "w", "two").code == 0
    r = gs("retry", "w")
    assert "turn 2 again in w-1, forked" in r.err and "it is turn" not in r.err


# -- the chat's own session, /edit's input behind a pipe, the messages ---------------------------


def test_opening_the_current_sessions_tip_by_a_revision_is_already_being_there(store):
    run(store, "one")
    _r, script = run(store, "/open work~0", "/open work@{0}", "/open work")
    assert script.text.count("(already in work)") == 3
    assert "error" not in script.text


def test_a_command_read_in_place_of_an_edited_prompt_cancels_the_edit_and_runs(store, git):
    run(store, "one", "two")
    model = ScriptedProvider()
    r, script = run(store, "/edit 1", "/retry", "/edit 1", "/exit", "never read", model=model)
    out = script.text
    assert "(edit cancelled: /retry is a command; nothing was sent)" in out
    assert "(turn 2 again in work-1" in out
    assert [m["content"] for m in model.requests[-1][0] if m["role"] == "user"] == ["one", "two"]
    assert "(edit cancelled: /exit is a command; nothing was sent)" in out
    assert script.lines == ["never read"]  # /exit ended the chat
    assert sorted(heads(git)) == ["work", "work-1"]


def test_an_edit_that_changes_nothing_is_the_same_prompt_again(store):
    run(store, "one", "two")
    script = Script("/edit 2", "/exit")
    repl(store, ScriptedProvider(), script, edit=lambda _p, text, _e: text + "\n").run()
    assert "(unchanged: turn 2 again in work-1, forked from work at " in script.text
    assert "edited" not in script.text
    _r, piped = run(store, "/edit 2", "two")
    assert "(unchanged: turn 2 again in work-2" in piped.text
    assert user_prompts(store, "work-2") == ["one", "two"]


def test_messages_name_the_session_in_the_prompt_and_tree_takes_no_argument(store):
    run(store, "one", "two")
    _r, script = run(store, "/open work~1", "/edit 3", "/tree foo")
    assert script.prompts[1:3] == ["work-1 › ", "work-1 › "]
    assert "error: work-1 has no turn 3: its turns are 1 to 1" in script.text
    assert "usage: /tree (it shows this session's family)" in script.text


def test_ctrl_c_in_a_picker_of_the_chat_cancels_the_list_not_the_chat(store):
    run(store, "one")

    def interrupted(*_args):
        raise KeyboardInterrupt

    from gitsessions.cli.faces import _ctrl_c_cancels  # how gs chat hands its pickers to the chat

    script = Script("/open", "/tree", "two", "/exit")
    repl(store, ScriptedProvider(), script, pick_session=_ctrl_c_cancels(interrupted),
         pick_spot=_ctrl_c_cancels(interrupted)).run()
    assert "(nothing opened)" in script.text
    assert script.prompts == ["work › "] * 4  # the chat went on: "two" was sent
    assert user_prompts(store, "work") == ["one", "two"]


def test_with_every_turn_undone_edit_and_retry_say_so_in_their_own_words(store):
    _r, script = run(store, "one", "/undo", "/edit", "/retry")
    lines = [line for line in script.text.splitlines() if line.startswith("error:")]
    assert lines == ["error: work has no turn to try again or edit (none was sent, or all are undone): "
                     "send a prompt first"] * 2
