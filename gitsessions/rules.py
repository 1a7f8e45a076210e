"""The session rules, each written once: ids, lineage, the commit message and its trailers.

Pure values and functions (no I/O): the store, the services and the CLI all take these rules
from here. Where a rule comes from: design.md, "On disk" (ids, subject, trailers) and issue 8
("one home for every rule").
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NewType, Protocol

from .commitmsg import CommitMessage, Trailers
from .errors import InvalidSessionId, SessionExists
from .request import options_text
from .text import case_variant
from .transcript import SYSTEM_REMOVED, Derivation, derived
from .usage import tokens_of

if TYPE_CHECKING:
    from .events import Event

#: A session id (the branch ``refs/heads/<id>``), checked by :func:`check_session_id`.
SessionId = NewType("SessionId", str)
#: A commit id: 40 lowercase hex digits.
CommitId = NewType("CommitId", str)

_ID = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
#: Session id rule (design.md, "On disk").
SESSION_ID_RE = re.compile(rf"^{_ID}$")
#: A revision: ``SESSION``, ``SESSION~N``, ``SESSION^`` (suffixes combine), ``SESSION@COMMIT``, or a
#: reflog entry ``SESSION@{N}`` / ``SESSION@{DATE}`` that ``~N`` and ``^`` may follow.
REV_RE = re.compile(rf"^(?P<id>{_ID})(?P<suffix>(?:@\{{[^{{}}]*\}})?(?:~\d*|\^+)*|@(?!\{{).*)$")
#: Model requests one turn may take before it ends with reason ``max-steps`` (config ``max_steps``).
DEFAULT_MAX_STEPS = 8


def check_session_id(session_id: str) -> SessionId:
    """Return ``session_id`` if it follows the id rules.

    Raises:
        InvalidSessionId: it does not match ``^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`` or is ``HEAD``.
    """
    if not isinstance(session_id, str) or not SESSION_ID_RE.match(session_id):
        raise InvalidSessionId(str(session_id), "not allowed")
    if session_id.upper() == "HEAD":
        raise InvalidSessionId(session_id, "HEAD is reserved by git")
    return SessionId(session_id)


def rev_session_id(rev: str) -> str | None:
    """Return the session id a revision names (``work`` of ``work~2``), or None when malformed."""
    m = REV_RE.match(rev)
    return m.group("id") if m else None


# -- ids that are taken, new ids, fork names -----------------------------------------------


class KnownIds(Protocol):
    """The id lists "is this id free?" needs (a session store has both)."""

    def session_ids(self) -> Sequence[str]:
        """Return the live session ids."""
        ...

    def archived_ids(self) -> Sequence[str]:
        """Return the archived session names."""
        ...


def _taken_in(session_id: str, live: Iterable[str], archived: Iterable[str]) -> str | None:
    live, archived = list(live), list(archived)
    sid = session_id if session_id in live else case_variant(session_id, live)
    if sid is not None:
        return sid
    name = session_id if session_id in archived else case_variant(session_id, archived)
    return None if name is None else f"archive/{name}"


def taken_by(ids: KnownIds, session_id: str) -> str | None:
    """Return what already uses ``session_id``, else None.

    Ids may not differ only by case (design.md, "On disk"), and an archived session keeps
    its id (``gs restore`` brings it back under it), so both count, in any case.

    Args:
        ids: the store (its live and archived ids).
        session_id: the id to check.

    Returns:
        The live id it clashes with (itself or a case variant), or ``archive/<name>``.
    """
    return _taken_in(session_id, ids.session_ids(), ids.archived_ids())


def check_free(ids: KnownIds, session_id: str) -> None:
    """Refuse an id that :func:`taken_by` finds taken, or that the store's ``new_id_rule`` refuses.

    Every new id passes here (a new session, a fork, a rename, an import), so a store's own
    rule for new ids is applied here: the CLI gives its store one that refuses an id that
    looks like a secret (a session id is a ref name, pushed with the session).

    Raises:
        SessionExists: it is taken (by a session, also by case, or an archived one).
        InvalidSessionId: the store's rule refuses it.
    """
    other = taken_by(ids, session_id)
    if other is not None:
        raise SessionExists(session_id, other)
    check_new_id(ids, session_id)


def check_new_id(ids: KnownIds, session_id: str) -> None:
    """Apply the store's own rule for new ids, its ``new_id_rule`` (when it has one).

    Raises:
        InvalidSessionId: the rule refuses it.
    """
    rule: Callable[[str], None] | None = getattr(ids, "new_id_rule", None)
    if rule is not None:
        rule(session_id)


def new_session_id(ids: KnownIds, token_hex: Callable[[int], str] = secrets.token_hex) -> SessionId:
    """Return a fresh id of 8 hex digits that no session or archived session uses (any case).

    Args:
        ids: the store.
        token_hex: the random source (``secrets.token_hex``; tests pass their own).
    """
    live, archived = ids.session_ids(), ids.archived_ids()
    while True:
        sid = token_hex(4)
        if _taken_in(sid, live, archived) is None:
            return SessionId(sid)


def fork_name(ids: KnownIds, session_id: str, kind: str = "", skip: Collection[str] = ()) -> SessionId:
    """Return ``<id>-<n>`` (``<id>-<kind>-<n>`` with ``kind``), the lowest free n >= 1.

    The id part is shortened so the result stays within the 64-character id limit.

    Args:
        ids: the store.
        session_id: the session forked.
        kind: why (``recovered`` for a turn kept apart by a recovery), or "".
        skip: names taken although no session has them yet (another writer holds their lock).
    """
    prefix = f"{session_id[:50]}-{kind}" if kind else session_id[:60]
    live, archived = ids.session_ids(), ids.archived_ids()
    n = 1
    while _taken_in(f"{prefix}-{n}", live, archived) is not None or f"{prefix}-{n}" in skip:
        n += 1
    return SessionId(f"{prefix}-{n}")


def pull_fork_name(ids: KnownIds, session_id: str, commit: str,
                   holds: Callable[[str], bool] = lambda _sid: False) -> SessionId:
    """Return the name sync gives the local side of a diverged session: ``<id>-<short commit>``.

    The rule (design.md "Sync", README "Sync"): the remote's side keeps the name, the local
    side becomes this fork. It names no remote, so every machine ends up with the same name.
    The short commit is 7 hex digits, more while the name is taken by something else; what
    ``holds`` says already keeps this side (an earlier sync made it) is no "something else",
    and its name is returned.

    Args:
        ids: the store (its live and archived ids).
        session_id: the diverged session.
        commit: the local tip (40 hex digits).
        holds: ``holds(taker)``, ``taker`` as :func:`taken_by` names it (``<id>`` or
            ``archive/<name>``): True when it already holds this side.
    """
    for digits in range(7, len(commit) + 1):
        name = f"{session_id[:63 - digits]}-{commit[:digits]}"
        other = taken_by(ids, name)
        if other is None or holds(other):
            return SessionId(name)
    raise ValueError(f"no free fork name for {session_id} at {commit}")


#: Longest title slug in an imported session's id, characters (the hash follows it).
IMPORT_SLUG_MAX = 40


def _digest(text: str, digits: int) -> str:
    import hashlib  # here: every command imports this module, few make an imported id (hashlib costs ~5 ms)

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:digits]


def imported_session_id(tool: str, source_id: str, title: str = "") -> SessionId:
    """Return the id of a conversation imported from another tool: ``<title slug>-<8 hex>``.

    Deterministic (issue 14, "Faithful history"): the hash is of ``<tool>:<source id>``, so
    the same conversation imported on two machines gets the same name and a re-import finds
    it; the slug (lowercase ASCII letters and digits, ``-`` between words, at most
    :data:`IMPORT_SLUG_MAX` characters) only makes it readable. A title without letters
    or digits gives the tool's name.

    Args:
        tool: the source tool (``chatgpt``).
        source_id: the conversation's id in that tool.
        title: its title, already redacted (the id is stored in ref names and trailers).
    """
    import unicodedata

    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    if len(slug) > IMPORT_SLUG_MAX:
        cut = slug[:IMPORT_SLUG_MAX + 1]
        slug = (cut.rsplit("-", 1)[0] if "-" in cut else cut[:IMPORT_SLUG_MAX]).strip("-")
    slug = slug or re.sub(r"[^a-z0-9]+", "-", tool.lower()).strip("-") or "imported"
    return check_session_id(f"{slug}-{_digest(f'{tool}:{source_id}', 8)}")


def imported_fork_id(session_id: str, branch: str) -> SessionId:
    """Return the id of a branch of an imported conversation: ``<session id>-<6 hex of branch>``.

    Args:
        session_id: the conversation's :func:`imported_session_id`.
        branch: what names the branch in the source (ChatGPT: the leaf message's id).
    """
    return check_session_id(f"{session_id[:57]}-{_digest(branch, 6)}")


# -- lineage and trailers --------------------------------------------------------------------


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
        if not sep or not SESSION_ID_RE.match(sid) or not re.fullmatch(r"[0-9a-f]{40}", commit):
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

    Subjects (design.md): a turn ``turn N: <first line of the prompt>``, else ``title: T``,
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
    )
    return CommitMessage(subject, trailers.format())


