"""What ``gs ask`` sends: its words, a piped stdin and attached files made one prompt.

The rules are ``llm``'s, whose users pipe files in all the time (``cat notes.md | llm
"summarize"``), and they are written once here and in ``gs ask --help``:

- stdin is read when it is not a terminal (``-`` as the prompt reads it too); a prompt
  argument and the stdin text are joined by a blank line; trailing newlines are trimmed.
- the first word names the session only when it is an existing session or a revision of
  one; otherwise every word is the prompt, of a new session, as ``llm`` reads them
  (``gs ask what is a ref``); with one word and no stdin that word is the prompt, unless it
  names a session (then the prompt is missing: an empty pipe, a forgotten prompt).
- ``-S NAME`` (``--session``): the session is ``NAME``, new or existing (or a revision), and
  every word is the prompt (``gs ask -S work "hi"`` creates ``work``).
- ``--new``: every word is prompt, in a new session.
- each ``--attach FILE`` is inlined after the rest, under its name, in a code fence, and
  counts as piped text (``gs ask -a f.py work`` sends it in session ``work``).
- text read as a prompt — piped stdin (of ``gs ask`` and of a piped ``gs chat``) and an
  attached file alike — must be UTF-8 text: bytes that are not, or a NUL byte, are refused
  with the offset of the first one (:func:`prompt_text`), never replaced.

This is the face (it reads stdin and files); the text it builds enters the session by the
one door (:meth:`gitsessions.writer.session.Session.append`), redacted there like any prompt.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import typer

from ..errors import GitSessionsError
from ..ids import rev_session_id
from ..log.events import clean_text
from ..store import SessionStore
from ..text import fence


@dataclass(frozen=True)
class AskWords:
    """How the words of ``gs ask`` split.

    Attributes:
        session: the session (or revision) to send in; None: a new session.
        prompt: the prompt's words (None: the prompt is stdin alone).
    """

    session: str | None
    prompt: str | None


def split_words(words: Sequence[str], *, piped: bool, new: bool, names_session: Callable[[str], bool],
                session: str | None = None) -> AskWords:
    """Tell the session from the prompt in the words of ``gs ask`` (see the module docstring).

    Args:
        words: the positional arguments, in order.
        piped: text came in on stdin, or is attached (it is part of the prompt).
        new: ``--new`` was given: no word is a session.
        names_session: True for a word naming an existing session or a revision of one.
        session: ``-S NAME``: the session, new or existing; every word is the prompt.

    Returns:
        The split.

    Raises:
        typer.BadParameter: no prompt at all.
    """
    if session is not None:
        if not words and not piped:
            raise typer.BadParameter(f"give the PROMPT after -S {session} (gs ask -S {session} \"...\"), "
                                     "or pipe text in")
        return AskWords(session, " ".join(words) if words else None)
    if new or not words:
        if not words and not piped:
            raise typer.BadParameter("give a PROMPT, or pipe text in (echo hi | gs ask)")
        return AskWords(None, " ".join(words) if words else None)
    first, rest = words[0], list(words[1:])
    if not rest:
        if names_session(first):
            if piped:
                return AskWords(first, None)  # echo hi | gs ask work
            raise typer.BadParameter(f"{first!r} is a session and nothing came in on stdin: give the PROMPT "
                                     f"after it (gs ask {first} \"...\"), or pipe text in")
        return AskWords(None, first)
    if names_session(first):
        return AskWords(first, " ".join(rest))
    return AskWords(None, " ".join(words))  # gs ask what is a ref: llm's reading


def prompt_text(data: bytes, what: str, fix: str, *, offset: int = 0) -> str:
    """Bytes given as a prompt (stdin, a piped chat's line, an attached file) as text: the one rule.

    Args:
        data: the bytes.
        what: what they are, for the message (``cannot read {what}``: ``stdin``, ``attach f.py``).
        fix: what the user can do instead, ending the message.
        offset: where ``data`` starts in what was read, in bytes (a piped chat's line), so
            that the message names the offset in the whole input.

    Returns:
        The text (a UTF-8 byte order mark kept: the caller drops it where it starts a file).

    Raises:
        GitSessionsError: a NUL byte (binary data) or bytes that are not UTF-8; the message
            names the first such byte's offset.
    """
    nul = data.find(b"\0")
    if nul >= 0:
        raise GitSessionsError(f"cannot read {what}: it is binary data (byte {offset + nul} is NUL); {fix}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GitSessionsError(f"cannot read {what}: it is not UTF-8 text (byte {offset + exc.start} is not); "
                               f"{fix}") from None


#: What a user does with stdin that is no UTF-8 text.
STDIN_FIX = "convert it first (iconv -f LATIN1 -t UTF-8), or give a text file with --attach"


def read_stdin() -> str:
    """The text piped into stdin (read over ``sys.stdin``'s bytes).

    Raises:
        GitSessionsError: it is not UTF-8 text (:func:`prompt_text`).
    """
    # sys.stdin's buffer, not fd 0: an in-process run that replaced sys.stdin is read too
    return prompt_text(sys.stdin.buffer.read(), "stdin", STDIN_FIX)


def attachment(path: Path) -> str:
    """The text ``gs ask --attach`` inlines for ``path``: its name, then its text in a code fence.

    Raises:
        GitSessionsError: the file cannot be read, or is not text (a NUL byte, or not UTF-8):
            the message says which.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise GitSessionsError(f"cannot attach {path}: {exc.strerror or exc}") from None
    text = prompt_text(data, f"attachment {path}", "only text files are attached")
    return f"{path.name}:\n{fence(text.removeprefix(chr(0xFEFF)).rstrip(chr(10)))}"


def join_prompt(prompt: str | None, stdin: str | None, attached: Sequence[str] = ()) -> str:
    """The one prompt ``gs ask`` sends: the words, the stdin text and the attachments, a blank line between.

    Trailing newlines (of stdin, of the whole) are trimmed, lone surrogates cleaned; a part
    that is empty is left out.
    """
    parts = [p.rstrip("\r\n") for p in (prompt, stdin, *attached) if p is not None]
    return clean_text("\n\n".join(p for p in parts if p.strip()))


def names_session(store: SessionStore, word: str) -> bool:
    """True when ``word`` names an existing session, or a revision of one (``work~1``, ``work@1a2b``, ``@{1}``)."""
    if word == rev_session_id(word):
        return store.tip(word) is not None
    if rev_session_id(word) is None and not word.startswith("@{"):
        return False  # no revision's syntax: a prompt's word ("what's up?")
    try:
        store.resolve(word)
    except GitSessionsError:
        return False
    return True


def ask_input(words: Sequence[str], attach: Sequence[str], *, new: bool, fork_as: str | None,
              names_session: Callable[[str], bool], session: str | None = None) -> tuple[str | None, str]:
    """Read what ``gs ask`` sends: the session its words name and the whole prompt.

    Reads stdin when it is not a terminal, and the attached files.

    Args:
        words: the positional arguments.
        attach: the files of ``--attach``, in order.
        new: ``--new`` was given.
        fork_as: the ``--fork`` id, if any (it needs a session).
        names_session: see :func:`split_words`.
        session: ``-S NAME``, if given (see :func:`split_words`).

    Returns:
        ``(session, prompt)``: the session or revision to send in (None: a new one) and the
        whole prompt (not empty).

    Raises:
        typer.BadParameter: no prompt, an empty one, words that need quoting, or ``--fork``
            without a session.
        GitSessionsError: an attached file that cannot be read or is not text.
    """
    if new and fork_as is not None:
        raise typer.BadParameter("--fork NEW forks SESSION, and --new names none: give one of them")
    if new and session is not None:
        raise typer.BadParameter(f"-S {session} names the session, and --new asks for a new one: give one of them")
    dash = bool(words) and words[-1] == "-"  # stdin is the prompt: read it from a terminal too
    stdin = read_stdin() if dash or not sys.stdin.isatty() else None
    attached = [attachment(Path(name)) for name in attach]
    piped = bool(stdin and stdin.strip()) or bool(attached)  # an attachment reads as piped text does
    split = split_words(words, piped=piped, new=new, names_session=names_session, session=session)
    prompt = join_prompt(None if split.prompt == "-" else split.prompt, stdin, attached)
    if not prompt.strip():
        raise typer.BadParameter("the prompt is empty")
    if fork_as is not None and split.session is None:
        raise typer.BadParameter("--fork NEW forks SESSION: name the SESSION (gs ask -S SESSION --fork NEW PROMPT)")
    return split.session, prompt
