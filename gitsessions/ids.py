"""Session ids: their syntax, which are taken, and the names gs makes for new sessions and forks.

Pure values and functions (no I/O). A session id is a branch name (``refs/heads/<id>``): at
most 64 characters of ``[A-Za-z0-9_-]``, beginning with a letter or digit, not ``HEAD``, and
never differing only by case from an id already there (case-insensitive file systems).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import NewType, Protocol

from .errors import InvalidSessionId, SessionExists, SessionNotFound
from .text import case_variant

#: A session id (the branch ``refs/heads/<id>``), checked by :func:`check_session_id`.
SessionId = NewType("SessionId", str)
#: A commit id: 40 lowercase hex digits.
CommitId = NewType("CommitId", str)

_ID = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
#: The session id rule: a branch name of at most 64 characters, beginning with a letter or digit.
SESSION_ID_RE = re.compile(rf"^{_ID}$")
#: A revision: ``SESSION``, ``SESSION~N``, ``SESSION^`` (suffixes combine), ``SESSION@COMMIT``, or a
#: reflog entry ``SESSION@{N}`` / ``SESSION@{DATE}`` that ``~N`` and ``^`` may follow.
REV_RE = re.compile(rf"^(?P<id>{_ID})(?P<suffix>(?:@\{{[^{{}}]*\}})?(?:~\d*|\^+)*|@(?!\{{).*)$")


def is_session_id(name: str) -> bool:
    """Whether ``name`` follows the id rules: ``^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$``, and not ``HEAD`` in any case.

    Args:
        name: a branch name, a word typed, a ref's last part.
    """
    return isinstance(name, str) and SESSION_ID_RE.match(name) is not None and name.upper() != "HEAD"


def check_session_id(session_id: str) -> SessionId:
    """Return ``session_id`` if it follows the id rules (:func:`is_session_id`).

    Raises:
        InvalidSessionId: it does not match ``^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`` or is ``HEAD``.
    """
    if not is_session_id(session_id):
        why = "HEAD is reserved by git" if isinstance(session_id, str) and session_id.upper() == "HEAD" \
            else "not allowed"
        raise InvalidSessionId(str(session_id), why)
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

    Ids may not differ only by case (case-insensitive file systems), and an archived session keeps
    its id (``gs restore`` brings it back under it), so both count, in any case.

    Args:
        ids: the store (its live and archived ids).
        session_id: the id to check.

    Returns:
        The live id it clashes with (itself or a case variant), or ``archive/<name>``.
    """
    return _taken_in(session_id, ids.session_ids(), ids.archived_ids())


def check_free(ids: KnownIds, session_id: str, *, opening: bool = False, moving: str | None = None) -> None:
    """Refuse an id that :func:`taken_by` finds taken, in the one wording of a clash; then apply the store's rule.

    Every path that makes a name asks here (a new session, a fork, a rename, a restore, an
    import), so a clash reads the same wherever and whenever it is met: before a writer
    takes its lock or after. A store's own rule for new ids is applied here too
    (:func:`check_new_id`): the CLI gives its store one that refuses an id that looks like a
    secret (a session id is a ref name, pushed with the session).

    Args:
        ids: the store (its live and archived ids).
        session_id: the id to be made.
        opening: the caller opens ``session_id`` and makes it only when it is free (``gs chat
            ID``): a live session in another case is then the one meant, which is not there
            under this name (:class:`SessionNotFound`: did you mean ...?). Else a clash is
            :class:`SessionExists`.
        moving: what :func:`taken_by` names the session about to take ``session_id`` when it
            has a name already (a rename: its id; a restore: ``archive/<name>``): no clash
            with itself, and a name it keeps is no new one for the store's rule.

    Raises:
        SessionExists: it is taken (by a session, also by case, or an archived one).
        SessionNotFound: ``opening``, and a live session has it in another case.
        InvalidSessionId: the store's rule refuses it.
    """
    other = taken_by(ids, session_id)
    if other is not None and other != moving:
        if opening and not other.startswith("archive/"):
            raise SessionNotFound(session_id, ids.session_ids())
        raise SessionExists(session_id, other)
    if moving is None or moving.removeprefix("archive/") != session_id:
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

    The rule (the README's "Sync"): the remote's side keeps the name, the local
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

    Deterministic, so that history stays faithful across machines: the hash is of ``<tool>:<source id>``, so
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
