"""A save's commit message: derived from its events, and as git stores it (subject and trailers).

:func:`commit_message` is the one place a save's subject and trailers come from;
:class:`CommitMessage` is the message as git stores it and :class:`Trailers` its typed trailers
(what ``gs list`` and ``gs log`` read instead of blobs), :class:`Lineage` a fork's origin.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ..ids import CommitId, SessionId, is_session_id
from .events import TURN_END_REASONS
from .request import options_text
from .transcript import SYSTEM_REMOVED, Derivation, derived
from .usage import tokens_of

if TYPE_CHECKING:
    from .events import Event

_KEY_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _one_line(text: str) -> str:
    """Fold ``text`` to one line without control characters (git fsck refuses NUL in commits)."""
    return " ".join(_CONTROL.sub(" ", text).split())


@dataclass(frozen=True)
class CommitMessage:
    """A save's commit message: a subject line and ``Key: value`` trailers (git's format)."""

    subject: str
    trailers: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        """Return the message as git stores it: subject, blank line, trailers, final newline."""
        subject = _one_line(self.subject) or "save"
        if len(subject) > 72:
            subject = subject[:71] + "…"
        lines = [subject, ""]
        for key, value in self.trailers.items():
            lines.append(f"{key}: {_one_line(str(value))}")
        return ("\n".join(lines).rstrip("\n") + "\n").encode("utf-8", "replace")

    @classmethod
    def decode(cls, raw: bytes) -> CommitMessage:
        """Parse a commit message written by :meth:`encode` (or any git commit message)."""
        text = raw.decode("utf-8", "replace")
        parts = text.split("\n\n")
        subject = parts[0].strip()
        trailers: dict[str, str] = {}
        if len(parts) > 1:
            for line in parts[-1].splitlines():
                key, sep, value = line.partition(": ")
                if sep and _KEY_RE.fullmatch(key):
                    trailers[key] = value.strip()
        return cls(subject, trailers)

    @functools.cached_property
    def fields(self) -> Trailers:
        """The typed view of :attr:`trailers` (see :class:`Trailers`), parsed on first use."""
        return Trailers.parse(self.trailers)

    def counted(self, session_id: str, events: Sequence[Event]) -> CommitMessage:
        """Return this message with the trailers a log tells (:data:`COUNTED`) derived from ``events``.

        What ``gs list`` shows of a tip whose trailers it cannot trust (plain git made the
        commit): the subject and the other trailers stay as they are.

        Args:
            session_id: the session.
            events: the log at the commit, every event.
        """
        derived = commit_message(session_id, events, len(events)).trailers
        trailers = {k: v for k, v in self.trailers.items() if k not in COUNTED}
        trailers.update({k: derived[k] for k in COUNTED if k in derived})
        return CommitMessage(self.subject, trailers)


#: The trailers a session's log can tell (a count of its turns and messages, its title).
COUNTED = ("Turn", "Messages", "Title")


#: Longest ``Title`` trailer, characters (the title itself is unbounded).
TITLE_TRAILER_MAX = 200


_EVENTS_RE = re.compile(r"(\d+)-(\d+)")


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Trailers:
    """The trailers gs writes, typed (so ``gs list`` and ``gs log`` never read blobs).

    Attributes:
        session: ``Session``: the session the commit was made in.
        turn: ``Turn``: the number of the last turn started (0 before the first).
        model: ``Model``: the model of the last reply saved in this commit (or that a ``session/model`` chose).
        tokens: ``Tokens``: the prompt and completion tokens of the requests whose replies this commit saved.
        events: ``Events: a-b``: the seq range (inclusive) this commit added.
        messages: ``Messages``: how many messages the model would see.
        title: ``Title``: the session title (at most :data:`TITLE_TRAILER_MAX` characters).
        forked_from: ``Forked-From``: the lineage, carried by every commit of a fork.
        imported_from: ``Imported-From``: the file an import read.
        ended: ``Ended``: how the turns this commit saved ended, when one did not complete
            (``aborted``, ``error``, ``max-steps``, ``interrupted``: the ``turn/end`` reason;
            several joined by ``, ``), so that ``gs log`` marks them without reading the log.
    """

    session: str | None = None
    turn: int | None = None
    model: str | None = None
    tokens: int | None = None
    events: tuple[int, int] | None = None
    messages: int | None = None
    title: str | None = None
    forked_from: Lineage | None = None
    imported_from: str | None = None
    ended: str | None = None

    @classmethod
    def parse(cls, trailers: Mapping[str, str]) -> Trailers:
        """Read the typed view of a commit's trailers; a malformed value reads as missing."""
        get = trailers.get
        events = None
        m = _EVENTS_RE.fullmatch(get("Events", ""))
        if m and int(m.group(2)) >= int(m.group(1)):
            events = (int(m.group(1)), int(m.group(2)))
        lineage = None
        if forked := get("Forked-From"):
            try:
                lineage = Lineage.parse(forked)
            except ValueError:
                pass
        return cls(session=get("Session") or None, turn=_int(get("Turn")), model=get("Model") or None,
                   tokens=_int(get("Tokens")), events=events, messages=_int(get("Messages")),
                   title=get("Title") or None, forked_from=lineage, imported_from=get("Imported-From") or None,
                   ended=get("Ended") or None)

    def format(self) -> dict[str, str]:
        """Return the trailers as git writes them, in gs's order (missing values left out)."""
        out: dict[str, str] = {}
        if self.session is not None:
            out["Session"] = self.session
        if self.turn is not None:
            out["Turn"] = str(self.turn)
        if self.model:
            out["Model"] = self.model
        if self.tokens is not None:
            out["Tokens"] = str(self.tokens)
        if self.events is not None:
            out["Events"] = f"{self.events[0]}-{self.events[1]}"
        if self.messages is not None:
            out["Messages"] = str(self.messages)
        if self.title:
            out["Title"] = self.title[:TITLE_TRAILER_MAX]
        if self.forked_from is not None:
            out["Forked-From"] = str(self.forked_from)
        if self.imported_from:
            out["Imported-From"] = self.imported_from
        if self.ended:
            out["Ended"] = self.ended
        return out


@dataclass(frozen=True)
class Lineage:
    """Where a fork came from: a commit of a session (the ``Forked-From`` trailer).

    Attributes:
        session_id: the session forked.
        commit: the fork point (40 hex digits).
    """

    session_id: SessionId
    commit: CommitId

    @classmethod
    def parse(cls, text: str) -> Lineage:
        """Parse ``<session>@<commit>``.

        Raises:
            ValueError: not a session id, ``@`` and 40 hex digits.
        """
        sid, sep, commit = text.strip().partition("@")
        if not sep or not is_session_id(sid) or not re.fullmatch(r"[0-9a-f]{40}", commit):
            raise ValueError(f"not <session>@<commit>: {text!r}")
        return cls(SessionId(sid), CommitId(commit))

    def __str__(self) -> str:
        """Return ``<session>@<commit>``, the trailer's value."""
        return f"{self.session_id}@{self.commit}"


#: The subject of a save that changes a setting, from the log after it.
_SETTINGS: dict[str, Callable[[Derivation], str]] = {
    "session/title": lambda log: f"title: {log.title}",
    "session/system": lambda log: f"system prompt: {log.system}" if log.system else SYSTEM_REMOVED,
    "session/model": lambda log: f"model: {log.model}",
    "session/options": lambda log: f"options: {options_text(log.options) or '(the server defaults)'}",
}


#: What kind of save a commit is: a turn (or any save of new events, a recovery too), an
#: import, or a fork (a new branch on an existing commit, adding no events).
SaveKind = Literal["turn", "import", "fork"]


def commit_message(session_id: str, events: Sequence[Event], first_new: int = 0, *,
                   kind: SaveKind = "turn", lineage: Lineage | None = None, source: str | None = None,
                   why: str | None = None) -> CommitMessage:
    """Derive the commit message of a save from its events: THE one place subjects and trailers come from.

    ``events`` are already redacted (redaction happens where text enters a session), so
    nothing here can bring a secret back into history.

    Subjects: a turn ``turn N: <first line of the prompt>``, else ``title: T``,
    ``system prompt: S``, ``model: M``, ``options: temperature=0.2``, ``compact: the
    conversation up to turn N`` (`` (automatic)`` when gs compacted it itself), ``undo: turn N`` or
    ``save: <event types>``; an import ``import: <source>``; a fork
    ``fork: <id> from <source or session> at <short commit>[ (<why>)]``. Trailers: see
    :class:`Trailers` (a fork adds no events, so it has no ``Events`` and no ``Model``).

    Args:
        session_id: the session the commit is made in.
        events: every event of the session after this save, in seq order.
        first_new: index of the first event this save adds (a fork adds none).
        kind: ``turn``, ``import`` or ``fork``.
        lineage: the fork point; required for ``fork``, carried by every commit of a fork.
        source: for ``import`` the file read; for ``fork`` how to name where it came from
            (``origin/work`` for a pull), default the lineage's session; for a ``turn``
            saved by an import, the conversation it came from (an ``Imported-From`` trailer).
        why: for ``fork``, a note in parentheses (``diverged``).

    Returns:
        The message.

    Raises:
        ValueError: a ``fork`` without ``lineage`` or an ``import`` without ``source``.
    """
    if kind == "fork":
        first_new = len(events)
    new = events[first_new:]
    log = derived(events)  # the session's growing list: only the new events are read again
    turn, title = log.turn, log.title
    if kind == "fork":
        if lineage is None:
            raise ValueError("a fork needs its lineage")
        note = f" ({why})" if why else ""
        subject = f"fork: {session_id} from {source or lineage.session_id} at {lineage.commit[:7]}{note}"
    elif kind == "import":
        if not source:
            raise ValueError("an import needs its source")
        subject = f"import: {source}"
    else:
        prompts = [(log.turns[first_new + i], str(e.data.get("content", ""))) for i, e in enumerate(new)
                   if e.type == "user/message"]
        if prompts:
            # The subject names the turn whose prompt it shows; a save of several turns (a
            # refused one saved with the next) names them all: "turns 6-7: <prompt of 6>".
            first, prompt = prompts[0]
            numbers = f"turn {first}" if prompts[-1][0] == first else f"turns {first}-{prompts[-1][0]}"
            subject = f"{numbers}: " + (prompt.strip().split("\n", 1)[0] or "(empty prompt)")
        elif named := next((e.type for e in new if e.type in _SETTINGS), None):
            subject = _SETTINGS[named](log)
        elif summary := next((e for e in new if e.type == "compaction/summary"), None):
            upto = summary.data.get("through")
            covered = log.turns[upto] if isinstance(upto, int) and 0 <= upto < len(log.turns) else turn
            automatic = " (automatic)" if summary.data.get("auto") else ""
            subject = f"compact: the conversation up to turn {covered}{automatic}"
        elif any(e.type == "session/undo" for e in new):
            subject = "undo: turn " + ", ".join(str(e.data.get("turn")) for e in new if e.type == "session/undo")
        else:
            subject = "save: " + ", ".join(sorted({e.type for e in new}))
    models = [e.data.get("model") for e in new if e.type in ("assistant/message", "session/model", "compaction/summary")
              and e.data.get("model")]  # a summary names the model that wrote it
    tokens = tokens_of(new)
    ended = list(dict.fromkeys(  # gs's words only: a reason another tool wrote is no trailer's text
        str(reason) if reason in TURN_END_REASONS else "other" for reason in
        (e.data.get("reason") for e in new if e.type == "turn/end") if reason not in (None, "completed")))
    trailers = Trailers(
        session=session_id,
        turn=turn,
        model=str(models[-1]) if models else None,
        tokens=tokens.total if tokens.requests else None,
        events=(new[0].seq, new[-1].seq) if new else None,
        messages=len(log.messages()),
        title=title or None,
        forked_from=lineage,
        imported_from=source if kind != "fork" else None,
        ended=", ".join(ended) or None,
    )
    return CommitMessage(subject, trailers.format())


