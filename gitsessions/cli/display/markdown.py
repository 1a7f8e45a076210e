"""Markdown on the screen: the parser rich's ``Markdown`` uses, and loading both behind the chat.

rich's markdown, markdown_it and pygments take ~0.15 s to import: the chat loads them in a
background thread (:func:`load_behind`), and what draws a reply meanwhile draws plain text
(:func:`loading`), so the first token waits for nothing but the model.
"""

from __future__ import annotations

from typing import Any

from ...later import Later

_PARSER: list[Any] = []


def parser() -> Any:
    """The markdown parser rich's :class:`~rich.markdown.Markdown` uses (CommonMark, tables, strikethrough)."""
    if not _PARSER:
        from markdown_it import MarkdownIt

        _PARSER.append(MarkdownIt().enable("strikethrough").enable("table"))
    return _PARSER[0]


def markdown(text: str) -> Any:
    """``text`` (already terminal-safe) as a rich renderable: links show their URL, code is highlighted."""
    from rich.markdown import Markdown

    return Markdown(text, hyperlinks=False)


def _load() -> bool:
    from rich.markdown import Markdown  # noqa: F401 (imported for the renders to come)

    parser()
    return True


_LOADED: Later[bool] = Later(_load, name="gs-markdown")


def load_behind() -> None:
    """Start importing rich's markdown and building the parser in a daemon thread (a no-op once started)."""
    _LOADED.start()


def loading() -> bool:
    """True while that load runs behind (started now if it was not): rendering now would wait for it.

    False once it has ended; also when it failed, so that rendering raises its error in place.
    """
    if _LOADED.made() is None:
        _LOADED.start()
        return _LOADED.pending()
    return False
