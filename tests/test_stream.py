"""gitsessions/cli/display/stream.py: a reply shown while it streams, plain or as rendered markdown.

In-process on a rich console that is no terminal (so it draws no live region): what it
prints is every block once, and reads as the whole reply rendered at once. The real
terminal, live region and all, is tests/test_pty_render.py's.
"""

from __future__ import annotations

import io

from gitsessions.cli.display.output import make_console
from gitsessions.cli.display.stream import PlainReply, RenderedReply, _Block, blocks

REPLY = ("# Title\n\nSome **bold** and `code`, a [link](http://x.org).\n\n- one\n- two\n\n1. first\n\n2. second\n\n"
         "```python\ndef f(x):\n\n    return x + 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n> quoted\nlazy\n\n"
         "Title two\n---\nThe end.")


def test_a_block_once_done_never_changes():
    final = blocks(REPLY + "\n\nafter\n")[0]
    assert final[:3] == ["# Title", "Some **bold** and `code`, a [link](http://x.org).", "- one\n- two"]
    assert "1. first\n\n2. second" in final and "```python\ndef f(x):\n\n    return x + 1\n```" in final
    assert final[-3:] == ["> quoted\nlazy", "Title two\n---", "The end."]  # setext: the line after decides
    for cut in range(len(REPLY) + 1):  # at every point the reply can stop, what is done is final
        done, offset = blocks(REPLY[:cut])
        assert done == final[:len(done)], cut
        assert REPLY[offset:cut].strip("\n").startswith(final[len(done)][:1]) or cut == offset, cut
    # "1. first\n\n2" is not yet a paragraph after a list: the line is not complete
    assert blocks("1. first\n\n2")[0] == []
    assert blocks("1. first\n\n2. second\n\nnext\n")[0] == ["1. first\n\n2. second"]


def render_at_once(text: str) -> str:
    out = io.StringIO()
    make_console(out, color=False, width=60).print(_Block(text, gap=False))
    return out.getvalue()


def nonblank(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_streamed_piece_by_piece_it_prints_what_the_whole_reply_renders_to():
    for size in (1, 3, 17, len(REPLY)):
        out = io.StringIO()
        view = RenderedReply(make_console(out, color=False, width=60))
        for i in range(0, len(REPLY), size):
            view.text(REPLY[i:i + size])
        assert view.end() is True
        shown = out.getvalue()
        assert nonblank(shown) == nonblank(render_at_once(REPLY)), size  # every line once, in order
        assert "\n\n\n" not in shown and shown.startswith("Title".center(60).rstrip()), size
    assert "• one" in render_at_once(REPLY) and "**" not in render_at_once(REPLY)


FENCES = ("Code:\n\n````markdown\nA fence inside:\n```\nnot the end\n```\n````\n\nAfter one.\n\n"
          "  ~~~\n  tilde\n  ~~~~~\nAfter two.\n\n```\n" + "".join(f"line {i}\n" for i in range(60)) + "```\nThe end.")


def test_a_code_fence_ends_only_at_its_own_closing_fence_however_it_streams():
    """A fence being written is not parsed again for each line; it still ends where markdown ends it."""
    assert [b.split("\n")[0] for b in blocks(FENCES + "\n\nx\n")[0]] == \
        ["Code:", "````markdown", "After one.", "  ~~~", "After two.", "```", "The end."]
    for size in (1, 4, 9, len(FENCES)):
        out = io.StringIO()
        view = RenderedReply(make_console(out, color=False, width=60))
        mark = FENCES.index("line 1\n")  # by then the fences before are closed and followed: printed
        for i in range(0, len(FENCES), size):
            view.text(FENCES[i:i + size])
            if i <= mark < i + size:
                assert "not the end" in out.getvalue() and "After two." in out.getvalue(), size
        view.end()
        assert nonblank(out.getvalue()) == nonblank(render_at_once(FENCES)), size


def test_tools_are_one_clipped_line_each_and_control_characters_never_reach_the_terminal():
    out = io.StringIO()
    view = RenderedReply(make_console(out, color=False, width=200))
    view.text("Looking \x1b[31mnow.\n\n")
    view.tool("read_file", '{"path": "a.txt"}', "x" * 500 + "\nmore", False)
    view.tool("bad", "{}", "no such tool", True)
    view.text("Done.")
    view.end()
    shown = out.getvalue()
    assert "Looking ^[[31mnow." in shown and "\x1b" not in shown
    assert '⚙ read_file({"path": "a.txt"}) → ' + "x" * 40 in shown and "more" not in shown
    assert "✗ bad({}) → no such tool" in shown and shown.endswith("Done.\n")
    nothing = RenderedReply(make_console(io.StringIO(), color=False))
    assert nothing.end() is False  # a reply with no text and no tool: the caller ends the line


def test_plain_writes_as_it_comes():
    out: list[str] = []
    view = PlainReply(out.append)
    view.text("**a**")
    view.tool("t", "{}", "ok", False)
    view.text("b")
    assert view.end() is True and view.end() is False
    assert "".join(out) == "**a**\n⚙ t({}) → ok\nb\n"


def test_a_turn_that_fails_midway_closes_its_rendered_reply_and_the_next_one_renders(repo_path):
    from scripted import ScriptedProvider, cut, say, scripted_env

    from gitsessions.cli.repl.repl import Repl
    from gitsessions.errors import GitSessionsError
    from gitsessions.store import GitStore

    out = io.StringIO()
    console = make_console(out, color=False, width=60)
    lines = ["first", "second"]
    written: list[str] = []
    model = ScriptedProvider(cut("Half a **reply**", GitSessionsError("the disk went away")), say("Whole **reply**."))
    with GitStore(repo_path) as store:
        Repl(store, model, "work", scripted_env(lines, written, reply=lambda: RenderedReply(console))).run()
    assert "error: the disk went away\n" in written  # the chat went on to the second prompt
    assert nonblank(out.getvalue()) == ["Half a reply", "Whole reply."]


def test_a_long_list_is_parsed_a_bounded_number_of_times_not_once_a_line(monkeypatch):
    """Parsing the block being written costs its size: once a line made a long list quadratic."""
    import gitsessions.cli.display.stream as stream

    calls: list[int] = []
    real = stream.blocks
    monkeypatch.setattr(stream, "blocks", lambda text: calls.append(len(text)) or real(text))  # counted, not changed
    reply = "".join(f"- item {i}\n" for i in range(2000)) + "\nThe end.\n"
    out = io.StringIO()
    view = RenderedReply(make_console(out, color=False, width=60))
    for i in range(0, len(reply), 7):
        view.text(reply[i:i + 7])
    view.end()
    assert nonblank(out.getvalue()) == nonblank(render_at_once(reply))
    assert len(calls) < 100 and sum(calls) < 20 * len(reply), (len(calls), sum(calls))


def test_behind_a_reply_is_drawn_plain_while_markdown_loads_and_printed_rendered_once_it_has(monkeypatch):
    """The chat's first token waits for no import: rich's markdown loads behind it (~0.15 s)."""
    import threading

    import gitsessions.cli.display.markdown as md
    from gitsessions.later import Later

    release = threading.Event()

    def slow_load() -> bool:
        release.wait(10)
        return md._load()

    monkeypatch.setattr(md, "_LOADED", Later(slow_load, name="gs-markdown"))
    out = io.StringIO()
    view = RenderedReply(make_console(out, color=True, width=60), behind=True)  # a terminal: the live region drawn
    view.text("Some plain words")
    assert "Some plain words" in out.getvalue()  # drawn at once: plain, it looks as rendered
    release.set()  # (markdown's syntax would wait for the load: it never shows as written)
    view.text(", then **bold** text.")
    assert view.end()
    printed = out.getvalue().rsplit("\x1b[?2026h", 1)[-1]  # the last synchronized write: the block printed whole
    assert "bold" in printed and "**" not in printed and "text." in printed
