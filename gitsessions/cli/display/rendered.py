"""``gs show``, ``gs log -p`` and the chat's recap on a terminal: replies rendered as markdown, as the chat shows them.

The words and their order are :func:`gitsessions.cli.display.render.transcript_lines` (``gs show``) and
:func:`gitsessions.cli.display.render.compact_lines` (``gs log -p``, one block per item); here the
assistant's text is rendered as markdown (:mod:`.stream`), the labels are in colour and tool
calls, results and notes are dimmed. Each item is rendered on its own, so a long session is
never held whole as rendered text.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ...text import INTERRUPTED, clip, fold, tool_line
from .render import COMPACT_TOOL_CHARS, compact_lines, terminal_safe, transcript_item
from .stream import _Block, renders

if TYPE_CHECKING:
    from rich.console import Console

    from ...log import view
    from ...log.events import Event
    from .output import Output
    from .recap import Entry


def _console(out: Output) -> tuple[Console, io.StringIO]:
    """A console rendering, as stdout would show it, into text for the pager."""
    import shutil

    from .output import make_console

    buffer = io.StringIO()
    return make_console(buffer, color=out.color(), width=shutil.get_terminal_size().columns), buffer


def _take(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text


def transcript(events: Sequence[Event], out: Output, *, full: bool = False) -> Iterator[str]:
    """Yield ``gs show``'s transcript rendered, one item at a time (each piece ends in a newline).

    Args:
        events: the session's events.
        out: the terminal's output (its colour).
        full: show what an import kept aside whole; else it is one line, as in the plain text.
    """
    from rich.text import Text

    from ...log import view

    console, buffer = _console(out)
    for item in view.items(events):
        if _reply(item):
            assert isinstance(item, view.Message)
            _reply_lines(console, item, "assistant ›", "  ", "  ")
        else:
            style = "" if isinstance(item, view.Message) else "bold" if isinstance(item, view.TurnStart) else "dim"
            one_line = isinstance(item, view.Message) and item.imported and not full  # folded to fit: never wrapped
            for line in transcript_item(item, full=full, width=console.width):
                text = Text(terminal_safe(line), style=style)
                label, sep, _ = line.partition(" › ")
                if sep and not style:
                    text.stylize("bold cyan", 0, len(label) + 2)
                console.print(text, no_wrap=one_line, overflow="ellipsis" if one_line else None)
        yield _take(buffer)


def _reply(item: view.Item) -> bool:
    """True for a reply with text (what is rendered as markdown)."""
    from ...log import view

    return isinstance(item, view.Message) and item.role == "assistant" and not item.imported and bool(item.text)


def _reply_lines(console: Console, item: view.Message, label: str, indent: str, tools: str,
                 clipped: int | None = None) -> None:
    """Print a reply: ``label``, its text as markdown indented by ``indent``, then its tool calls, dimmed."""
    from rich.padding import Padding
    from rich.text import Text

    console.print(Text(label, style="bold green"))
    console.print(Padding(_Block(terminal_safe(item.text), gap=False), (0, 0, 0, len(indent))))
    mark = f" {INTERRUPTED}" if item.interrupted else ""
    for call in item.tool_calls:
        args = call.arguments or ""
        args = clip(fold(args), clipped) if clipped else args
        console.print(Text(terminal_safe(tools + tool_line(call.name, args) + mark), style="dim"))
    if mark and not item.tool_calls:
        console.print(Text(indent + INTERRUPTED, style="yellow"))


def compact(items: Iterable[view.Item], out: Output, indent: str = "    ") -> str:
    """``gs log -p``'s lines of ``items`` (:func:`.render.compact_items`) rendered, as one text."""
    from rich.text import Text

    from ...log import view

    console, buffer = _console(out)
    for item in items:
        if _reply(item):
            assert isinstance(item, view.Message)
            _reply_lines(console, item, f"{indent}assistant:", indent + "  ", indent, COMPACT_TOOL_CHARS)
            continue
        style = "" if isinstance(item, view.Message) else "dim"
        for line in compact_lines([item], indent):
            text = Text(terminal_safe(line), style=style)
            if not style:
                label = line[len(indent):].partition(": ")[0]
                text.stylize("cyan", len(indent), len(indent) + len(label) + 1)
            console.print(text, no_wrap=True, overflow="ellipsis" if style else "fold")
    return _take(buffer)


def recap_drawer(out: Output, render: bool, show: Callable[[str], None]) -> Callable[[Sequence[Entry]], None] | None:
    """What shows the chat's recap (:mod:`gitsessions.cli.display.recap`) on this terminal, or None for plain lines.

    Rendered as the chat renders its replies (:func:`.stream.renders`), into a text that
    ``show`` prints: the chat draws the recap behind its first prompt, in another thread,
    and prints it above the prompt. rich is imported by the first recap drawn.
    """
    if not renders(out, render):
        return None

    def draw(entries: Sequence[Entry]) -> None:
        console = out.console()
        with console.capture() as drawn:
            recap(entries, console)
        show(drawn.get())

    return draw


def recap(entries: Sequence[Entry], console: Console) -> None:
    """Print a recap's ``entries`` on ``console``, styled as ``gs show``'s transcript is.

    Replies are markdown, rendered as the chat rendered them; the turn's rule is bold, the
    prompt's label coloured, tool calls and notes dimmed, an interrupted reply said in yellow.
    """
    from rich.text import Text

    styles = {"turn": "bold", "more": "dim", "mark": "yellow", "tool": "dim", "ended": "dim"}
    for kind, raw in entries:
        safe = terminal_safe(raw)
        if kind == "reply":
            console.print(_Block(safe, gap=False))
            continue
        text = Text(safe, style=styles.get(kind, ""))
        if kind == "prompt":
            text.stylize("bold cyan", 0, len(safe.partition(" › ")[0]) + 2)
        console.print(text)
