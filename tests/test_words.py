"""Messages a user reads say what is wrong and what to do in plain words."""

from __future__ import annotations


def test_a_case_clash_names_the_real_id_instead_of_sending_the_user_round(gs):
    assert gs("ask", "-S", "work", "hi").code == 0
    r = gs("chat", "work", input="/new Work\n/open Work\n/exit\n")
    assert r.code == 0, r.err
    assert "use /open Work" not in r.out, r.out  # the advice that led back to the same refusal
    assert "error: session 'Work' already exists as 'work' (ids may not differ only by case); use /open work" in r.out
    assert "error: no session 'Work'; did you mean 'work'?\n" in r.out, r.out  # /open: it is not there by that name
    r = gs("chat", "WORK")
    assert (r.code, r.err) == (1, "gs: no session 'WORK'; did you mean 'work'?\n")
    r = gs("fork", "work", "WORK")
    assert r.code == 1 and "already exists as 'work'" in r.err and "choose another id" in r.err, r.err


def test_an_empty_title_is_refused_in_plain_words(gs):
    assert gs("ask", "-S", "work", "hi").code == 0
    for text in ("", "   "):
        r = gs("title", "work", text)
        assert r.code == 1 and r.err == "gs: a title needs some text; this one is empty or only spaces\n", r.err
    r = gs("chat", "work", input="/title  \n/undo\n/undo\n/exit\n")
    assert "event refused" not in r.out and "error: there is no turn to undo" in r.out, r.out


def test_restoring_what_is_not_archived_points_at_the_archived_list(gs):
    assert gs("ask", "-S", "old", "hi").code == 0 and gs("rm", "old").code == 0
    r = gs("restore", "nope")
    assert r.code == 1
    assert "no archived session 'nope'; archived: old ('gs list --archived' shows them)" in r.err, r.err


def test_a_name_in_the_wrong_case_is_met_with_the_real_one(gs):
    for sid in ("work", "hello"):
        assert gs("ask", "-S", sid, "hi").code == 0
    assert gs("rm", "hello").code == 0
    r = gs("restore", "HELLO")
    assert (r.code, r.err) == (1, "gs: no archived session 'HELLO'; did you mean 'hello'?\n")
    assert gs("rename", "work", "Work").code == 0
    for command in ("show", "log"):
        r = gs(command, "work")
        assert (r.code, r.err) == (1, "gs: no session 'work'; did you mean 'Work'?\n")
    r = gs("show", "nope")
    assert (r.code, r.err) == (1, "gs: no session 'nope'; sessions: Work\n")  # no near name: the list, as before
