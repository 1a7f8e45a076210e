"""Revisions of a session, git's syntax on the store's primitives (what :meth:`SessionStore.resolve` does).

``SESSION``, ``SESSION~N``, ``SESSION^`` (N saves back along first parents; suffixes combine),
``SESSION@COMMIT`` (a prefix of >= 4 hex digits of a commit in its history), and git's reflog
forms ``SESSION@{N}`` (the N-th previous value of the session's ref) and ``SESSION@{DATE}``
(its value at that time), which ``~N`` and ``^`` may follow (``work@{1}~2``). The reflog rules
are git's (``git rev-parse`` agrees, a test checks): ``@{N}`` counts the ref's values newest
first, the oldest entry's old value last; ``@{DATE}`` takes the newest entry made at or before
DATE, and the oldest value when DATE is before the log began (with git's warning that the
log only goes back so far, as the :class:`Revision`'s ``note``).
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Protocol

from ..errors import BadRevision, SessionNotFound
from ..ids import REV_RE, CommitId, SessionId, check_session_id
from .values import CommitInfo, ReflogEntry, Revision

#: What a revision may look like (the message of a malformed one).
FORMS = "SESSION, SESSION~N, SESSION^, SESSION@COMMIT, SESSION@{N} or SESSION@{DATE}"
_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 7 * 86400}
_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)(?:[ t](\d\d?):(\d\d)(?::(\d\d))?)?")


class Histories(Protocol):
    """What a revision is resolved against: names, tips, reflogs and first parents (a :class:`~.base.SessionStore`)."""

    def current(self) -> SessionId | None:
        """Return the current session, or None."""
        ...

    def tip(self, session_id: str) -> CommitId | None:
        """Return a session's tip, or None."""
        ...

    def archive_ref(self, name: str) -> CommitId | None:
        """Return the commit of an archived session, or None."""
        ...

    def session_ids(self) -> list[SessionId]:
        """Return the live session ids."""
        ...

    def reflog(self, name: str, archived: bool = False) -> list[ReflogEntry]:
        """Return the moves of a session's ref, oldest first."""
        ...

    def log(self, session_id: str, start: str | None = None, limit: int | None = None) -> list[CommitInfo]:
        """Return a session's commits, newest first."""
        ...

    def first_parents(self, commit: str) -> Iterator[CommitInfo]:
        """Yield commits back along first parents from ``commit``."""
        ...


def parse_date(text: str, now: float) -> float | None:
    """Read a date as git's approxidate does for the common forms; None when it is none of them.

    ``now``/``today``, ``yesterday`` (24 hours back), ``N <unit>[s] ago`` (units second to
    year, combinable: ``1 hour 30 minutes ago``; dots for spaces: ``2.hours.ago``), and
    ``YYYY-MM-DD[ HH:MM[:SS]]`` in local time (a date alone takes the current time of day,
    as git does).

    Args:
        text: what stood between ``@{`` and ``}``.
        now: the current time, epoch seconds.

    Returns:
        Epoch seconds.
    """
    words = text.strip().lower().replace(".", " ").replace("_", " ")
    if words in ("now", "today"):
        return now
    if words == "yesterday":
        return now - 86400
    m = _ISO.fullmatch(words)
    if m:
        year, month, day = (int(g) for g in m.groups()[:3])
        if m.group(4):
            hms = (int(m.group(4)), int(m.group(5)), int(m.group(6) or 0))
        else:
            here = datetime.fromtimestamp(now)
            hms = (here.hour, here.minute, here.second)
        try:
            return datetime(year, month, day, *hms).timestamp()  # naive: local time
        except ValueError:
            return None
    parts = words.split()
    if len(parts) < 3 or len(parts) % 2 == 0 or parts[-1] != "ago":
        return None
    when, months = now, 0
    for count, unit in zip(parts[:-1:2], parts[1:-1:2], strict=True):
        unit = unit.removesuffix("s")
        if not count.isdigit() or unit not in (*_UNITS, "month", "year"):
            return None
        if unit in _UNITS:
            when -= int(count) * _UNITS[unit]
        else:
            months += int(count) * (12 if unit == "year" else 1)
    if months:  # calendar months, as git counts them
        at = datetime.fromtimestamp(when)
        year, month = divmod(at.year * 12 + at.month - 1 - months, 12)
        for day in range(at.day, 0, -1):
            try:
                return at.replace(year=year, month=month + 1, day=day).timestamp()
            except ValueError:
                continue
    return when


def entry_at(name: str, entries: Sequence[ReflogEntry], at: str, now: float,
             tip: str | None) -> tuple[CommitId, str | None]:
    """Return the commit ``NAME@{AT}`` names in a reflog (git's rule, see the module doc) and a warning.

    Args:
        name: the session (for messages).
        entries: its reflog, oldest first.
        at: what stood between the braces: a number or a date.
        now: the current time, epoch seconds.
        tip: the ref's value (``@{0}`` of a ref without a reflog).

    Returns:
        The commit, and None or the warning that DATE is before the log began (git's "log for
        'work' only goes back to ...": the commit is the oldest state recorded, not DATE's).

    Raises:
        ValueError: no such entry, or ``at`` is neither a number nor a date (the reason).
    """
    if at.isdigit():
        values = ([e.new for e in reversed(entries)] + [entries[0].old]) if entries else [tip]
        n = int(at)
        found = values[n] if n < len(values) else None
        if found is not None:
            return CommitId(found), None
        if not entries:
            raise ValueError(f"{name!r} has no reflog, so only {name}@{{0}} (its tip) exists")
        have = len(values) - (values[-1] is None)  # the states @{0} to @{have-1} name
        exist = f"{name}@{{0}} to {name}@{{{have - 1}}}" if have > 1 else f"only {name}@{{0}}"
        raise ValueError(f"the reflog of {name!r} only has {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, "
                         f"so {exist} exist{'s' if have == 1 else ''} (see 'gs reflog {name}')")
    when = parse_date(at, now)
    if when is None:
        raise ValueError(f"{at!r} is neither an entry number nor a date (try {name}@{{1}}, {name}@{{yesterday}}, "
                         f"{name}@{{2 hours ago}} or {name}@{{2026-11-30}})")
    if not entries:
        raise ValueError(f"{name!r} has no reflog")
    for entry in reversed(entries):
        if entry.time <= when and entry.new is not None:
            return entry.new, None
    oldest = entries[0]
    found = oldest.old or oldest.new
    if found is None:
        raise ValueError(f"the reflog of {name!r} holds no commit")
    began = datetime.fromtimestamp(oldest.time).strftime("%Y-%m-%d %H:%M")
    return found, (f"the reflog of {name!r} only goes back to {began}: {name}@{{{at}}} is its oldest recorded "
                   f"state, from then, not one from {at}")


def resolve(store: Histories, rev: str) -> Revision:
    """Resolve ``rev`` (any of :data:`FORMS`) to a commit of its session.

    A reflog form also reads an archived session's reflog (``refs/archive/<name>``): what
    ``gs restore`` brings back.

    Raises:
        BadRevision: malformed, or names no commit (the message names what exists).
        SessionNotFound: no such session.
    """
    if rev.startswith("@{") and (current := store.current()) is not None:
        rev = current + rev  # git's @{1}: the current session's
    m = REV_RE.match(rev)
    if not m:
        raise BadRevision(rev, f"expected {FORMS}")
    sid, suffix = check_session_id(m.group("id")), m.group("suffix")
    tip = store.tip(sid)
    archived = tip is None and suffix.startswith("@{") and store.archive_ref(sid) is not None
    if tip is None and not archived:
        if store.archive_ref(sid):
            raise BadRevision(rev, f"session {sid!r} is archived; restore it with 'gs restore {sid}'")
        raise SessionNotFound(sid, store.session_ids())
    start: str | None = tip
    note = None
    if suffix.startswith("@{"):
        at, _brace, suffix = suffix[2:].partition("}")
        try:
            start, note = entry_at(sid, store.reflog(sid, archived=archived), at, time.time(),
                                   tip or store.archive_ref(sid))
        except ValueError as exc:
            raise BadRevision(rev, str(exc)) from None
    assert start is not None
    if not suffix:
        return Revision(SessionId(sid), CommitId(start), start == tip, note)
    if suffix.startswith("@"):
        prefix = suffix[1:].lower()
        if not re.fullmatch(r"[0-9a-f]{4,40}", prefix):
            raise BadRevision(rev, "a commit after @ is 4 to 40 hex digits")
        hits = [c.commit for c in store.log(sid) if c.commit.startswith(prefix)]
        if not hits:
            raise BadRevision(rev, f"no commit {prefix} in the history of {sid!r} (see 'gs log {sid}')")
        if len(hits) > 1:
            raise BadRevision(rev, f"{prefix} is ambiguous: " + ", ".join(h[:12] for h in hits))
        return Revision(sid, hits[0], hits[0] == tip)
    back = 0
    for step in re.findall(r"~\d*|\^+", suffix):
        back += (int(step[1:]) if step[1:] else 1) if step.startswith("~") else len(step)
    history = list(itertools.islice(store.first_parents(start), back + 1))
    if len(history) <= back:
        n = sum(1 for _ in store.first_parents(start))
        base = rev[: len(rev) - len(suffix)]
        exist = f"so {base}~0 to {base}~{n - 1} exist" if n > 1 else f"so only {base}~0 exists"
        raise BadRevision(rev, f"{base!r} has {n} save{'s' if n != 1 else ''}, {exist}")
    return Revision(sid, history[back].commit, history[back].commit == tip, note)
