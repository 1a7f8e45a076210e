"""What gs draws on a terminal fits it: ``gs list`` rows, the chat's footer, the note beside the prompt.

``gs list`` runs in a real pseudo-terminal of 80 columns over the longest ids gs makes
(imported Claude Code and Codex sessions and their forks); piped, it is unchanged.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import pexpect
from conftest import GS

from gitsessions.log.events import make_event
from gitsessions.log.usage import footer
from gitsessions.text import cut_words, elide

DATA = Path(__file__).parent / "data"
#: What a terminal shows of a styled line: the text without its colour escapes.
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _on_terminal(*args: str, columns: int) -> list[str]:
    """``gs <args>`` in a pty ``columns`` wide: its lines, as drawn (escapes and line ends taken off)."""
    env = {**os.environ, "TERM": "xterm", "LINES": "200"}
    env.pop("COLUMNS", None)  # the pty's size tells it
    child = pexpect.spawn(GS[0], [*GS[1:], *args], env=env, dimensions=(200, columns), encoding="utf-8",
                          timeout=30)
    out = child.read()
    child.close()
    assert child.exitstatus == 0, out
    return [_SGR.sub("", line) for line in out.replace("\r\n", "\n").splitlines()]


def test_gs_list_fits_80_columns_with_the_longest_imported_ids(gs):
    for tool, files in (("claude-code", [DATA / "claude_code" / "real2" / "projects" / "-home-user-proj"]),
                        ("codex", sorted((DATA / "codex" / "real").rglob("rollout-*.jsonl")))):
        r = gs("import", "--from", tool, *map(str, files))
        assert r.code == 0, r.err
    piped = gs("list").out.splitlines()
    assert max(len(line) for line in piped) > 100  # what the table would take unfitted
    assert any(" ← " in line for line in piped)  # forks, with their lineage
    drawn = _on_terminal("list", columns=80)
    assert len(drawn) == len(piped)  # one line a row: none wrapped
    assert max(len(line) for line in drawn) < 80, "\n".join(drawn)
    assert drawn[0].startswith("SESSION") and drawn[0].split()[-1] == "TITLE"
    ids = {row["id"] for row in gs("list", "--json").json()}
    for line in drawn[1:]:
        name = line.split()[0]
        assert name in ids or "…" in name  # whole, or its middle elided
        title = line.split("  ")[-1]
        assert not title.endswith("…") or title[-2] != " "  # cut at a word
    assert any(line.split()[1] == "←" for line in drawn[1:])  # the lineage still said where it fits
    assert gs("list").out.splitlines() == piped  # piped: every column whole, as before


def test_a_narrow_terminal_loses_the_msgs_column_before_the_ids(gs):
    long = "a" * 30 + "-" + "b" * 30
    assert gs("ask", "-S", long, "a prompt of several words to cut").code == 0
    drawn = _on_terminal("list", columns=60)
    assert "MSGS" not in drawn[0] and "TURNS" in drawn[0]
    assert max(len(line) for line in drawn) < 60
    assert drawn[1].split()[0] == elide(long, len(drawn[1].split()[0]))


def test_elide_and_cut_words():
    assert elide("claude-code-3f2a9c1d-fork", 12) == "claude…-fork" and len(elide("x" * 100, 9)) == 9
    assert elide("short", 9) == "short" and elide("abc", 1) == "…"
    assert cut_words("hello there my friend", 12) == "hello there…"
    assert cut_words("hello there my friend", 11) == "hello…"
    assert cut_words("supercalifragilistic", 8) == "superca…"


def _usage_events(total: int, compacted: bool = False) -> list:
    events = [make_event(0, "user/message", {"content": "hi"}),
              make_event(1, "assistant/message", {"content": "x", "model": "m", "usage": {
                  "prompt_tokens": total - 10, "completion_tokens": 10, "total_tokens": total}})]
    if compacted:
        events.append(make_event(2, "compaction/summary", {"summary": "s", "through": 1}))
    return events


def test_the_footer_is_one_line_of_the_terminal_s_width():
    model = "a-rather-long-model-name-served-by-a-local-gateway-v2"
    full = footer(model, _usage_events(1000, compacted=True), 4000)
    assert "before the compaction" in full and len(full) > 100
    for width in (100, 80, 60, 40, 20):
        line = footer(model, _usage_events(1000, compacted=True), 4000, width)
        assert len(line) <= width and "\n" not in line, (width, line)
    assert footer("gpt-4o", _usage_events(1000), 4000, 60) == footer("gpt-4o", _usage_events(1000), 4000)  # it fits
    line = footer(model, _usage_events(1000), None, 80)  # the window unknown: its long hint goes first
    assert len(line) <= 80 and line.startswith(model) and "tokens" in line, line
    assert footer("m", _usage_events(1000), 4000, 200) == "m · context 25% of 4,000 · 1,000 tokens this session"
    assert footer("m", _usage_events(1000), 4000, 30) == "m · context 25% of 4,000"


def test_the_note_beside_the_prompt_shortens_or_goes_rather_than_wrap():
    from prompt_toolkit import PromptSession
    from prompt_toolkit.document import Document
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput  # 80 columns

    from gitsessions.cli.repl.prompt import _note

    def note() -> str:
        return "forked from a-session-of-a-long-name at 1a2b3c4"

    async def drawn_notes() -> None:  # a buffer's change callbacks want a running loop
        with create_pipe_input() as pipe:
            for message, typed, want in (
                    ("work › ", "", "forked from a-session-of-a-long-name at 1a2b3c4 "),
                    ("work-2-with-a-much-longer-name-here › ", "", "← a-session-of-a-long-name@1a2b3c4 "),
                    ("work › ", "x" * 60, "")):
                session: PromptSession[str] = PromptSession(message=message, input=pipe, output=DummyOutput(),
                                                            complete_while_typing=False)
                session.default_buffer.document = Document(typed)
                drawn = _note(note, session)
                assert (drawn[0][1] if drawn else "") == want, (message, typed)

    asyncio.run(drawn_notes())


def test_a_long_message_wraps_at_words_on_a_terminal_and_stays_one_line_piped(gs):
    long = "a-session-whose-name-is-long-" + "x" * 20
    assert gs("ask", "-S", long, "one").code == 0
    env = {**os.environ, "TERM": "xterm"}
    child = pexpect.spawn(GS[0], [*GS[1:], "rename", long, "a b"], env=env, dimensions=(24, 50), encoding="utf-8",
                          timeout=30)
    out = child.read().replace("\r\n", "\n")
    child.close()
    assert child.exitstatus != 0
    lines = out.splitlines()
    assert len(lines) > 1 and all(len(line) < 50 or " " not in line.strip() for line in lines), out
    words = gs("rename", long, "a b").err.split()
    assert out.split() == words  # the same words, none broken: only where the lines end moved
    assert len(gs("rename", long, "a b").err.splitlines()) == 1  # piped: one line
