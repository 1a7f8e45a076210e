"""The family tree of a session: every session sharing its history, as a tree of fork points.

A session's family is every session, live and archived, connected to it through shared
history. The links are read from the tip commits' trailers, as
``gs list`` reads its rows, so a family is found without walking every session's log:

- ``Forked-From: <session>@<commit>`` (every commit of a fork carries it, see
  :class:`~gitsessions.log.commits.Lineage`): the session left ``<session>`` at ``<commit>``;
- otherwise ``Session: <other>`` on its tip: the tip was saved in another session (a branch
  made by plain git on a session's commit), so it left ``<other>`` at their merge base.

A name the trailers give that no session has any more (renamed since) is found again as the
session whose tip still carries it in its ``Session`` trailer. Commits plain git made on top
of gs's (no trailers) are stepped over to the newest commit gs wrote. Only the family's own
commits are read beyond the tips: its fork points, and each fork's commits back to its fork
point for the first prompt it added.

Nothing here prints or writes; :mod:`gitsessions.cli.history` turns a :class:`Node` into text
and JSON, the chat's ``/tree`` into a picker.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import NoCurrentSession, SessionNotFound
from ..log.commits import Lineage, Trailers
from ..store import SessionInfo, SessionStore
from ..text import iso_time
from .reading import merge_base

#: Commits plain git may have made on top of a session's last gs commit, stepped over to find it.
_GIT_COMMITS_MAX = 50
#: The subject of a turn's commit: ``turn 3: <first line of the prompt>`` (``turns 6-7: ...``).
_TURN_SUBJECT = re.compile(r"^turns? \d+(?:-\d+)?: (.*)$")


@dataclass
class Node:
    """One session of a family and the sessions that left it.

    Attributes:
        session_id: the id (an archived session's archive name).
        title: the session's title (its ``Title`` trailer; "" when it has none).
        turns: its number of turns.
        saved: its tip's commit time, epoch seconds.
        tip: its tip commit.
        parent: the session it left (None for the root).
        from_turn: the turn of ``parent`` it left at (the fork point's turn; 0 before the first).
        fork_commit: the commit of ``parent`` it left at.
        archived: it is archived (``gs rm``; ``gs restore`` brings it back).
        current: it is the repo's current session (``HEAD``).
        children: the sessions that left this one, by fork point, then id (digits as numbers: work-2
            before work-10).
        prompt: the first line of the first prompt it added after leaving ``parent`` (None: none yet).
        error: why its log cannot be read (a branch plain git made with a damaged ``session.jsonl``),
            else None; it is drawn all the same, marked.
    """

    session_id: str
    title: str
    turns: int
    saved: int
    tip: str
    parent: str | None = None
    from_turn: int | None = None
    fork_commit: str | None = None
    archived: bool = False
    current: bool = False
    children: list[Node] = field(default_factory=list)
    prompt: str | None = None
    error: str | None = None

    def walk(self) -> Iterable[tuple[int, Node]]:
        """Yield ``(depth, node)`` for this node and every descendant, depth first, in order."""
        stack = [(0, self)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, child) for child in reversed(node.children))

    def find(self, session_id: str, archived: bool = False) -> Node | None:
        """Return the node of ``session_id`` in this tree, or None."""
        return next((n for _d, n in self.walk() if n.session_id == session_id and n.archived == archived), None)

    def to_json(self) -> dict[str, Any]:
        """Return the ``gs tree --json`` object: every attribute (``saved`` ISO 8601), ``children`` likewise."""
        return {"id": self.session_id, "title": self.title, "turns": self.turns, "saved": iso_time(self.saved),
                "tip": self.tip, "parent": self.parent, "from_turn": self.from_turn,
                "fork_commit": self.fork_commit, "archived": self.archived, "current": self.current,
                "prompt": self.prompt, "error": self.error, "children": [c.to_json() for c in self.children]}



def rev_or_current(store: SessionStore, rev: str | None, command: str) -> str:
    """Return ``rev``, or the current session when it is None (a command run without REV).

    Args:
        store: the session store.
        rev: what the user gave, or None.
        command: the command's name, for the message.

    Raises:
        NoCurrentSession: ``rev`` is None and ``HEAD`` names no session (the error says why:
            archived, detached, no sessions yet, or a ref that is no session).
    """
    if rev is not None:
        return rev
    current = store.current()
    if current is None:
        raise no_current(store, command)
    return current


def no_current(store: SessionStore, command: str) -> NoCurrentSession:
    """Return the :class:`NoCurrentSession` that says why ``HEAD`` names no session, and what to do."""
    head = store.head_ref()
    name = head.rsplit("/", 1)[-1] if head and head.startswith(("refs/heads/", "refs/archive/")) else None
    archived = None
    if head and name and head.startswith("refs/archive/"):
        archived = name if store.archive_ref(name) is not None else None
    elif name:  # archived as <name>, or <name>-N when that was taken: the latest archive of it
        archived = _archive_of(store, name)
    return NoCurrentSession(command, head, archived, sessions=bool(store.session_ids()))


def _archive_of(store: SessionStore, session_id: str) -> str | None:
    """The archive name of the latest ``gs rm`` of ``session_id`` (its reflog says ``archive: <id>``), or None."""
    moves = []
    for n in store.archived_ids():
        if n == session_id or re.fullmatch(re.escape(session_id) + r"-\d+", n):
            log = store.reflog(n, archived=True)
            last = log[-1] if log else None
            if last is not None and last.reason == f"archive: {session_id}":
                moves.append((last.time, _natural(n), n))
    if moves:
        return max(moves)[2]
    return session_id if store.archive_ref(session_id) is not None else None


@dataclass
class _Member:
    """A session of the repo as the family search sees it."""

    info: SessionInfo
    archived: bool
    fields: Trailers  # of the newest commit gs wrote (the tip, unless plain git committed on top)
    turn_fields: Trailers  # what gs's counts say (the list row's, derived from the log when needed)
    gs_tip: str  # the commit ``fields`` are read from

    @property
    def key(self) -> _Key:
        return (self.info.session_id, self.archived)


#: A member by name and whether it is archived (an archived name may equal a live id).
_Key = tuple[str, bool]
#: member -> the member it left and the commit it left at (None: their merge base, found later).
_Links = dict[_Key, tuple[_Member, "str | None"]]


def _member(store: SessionStore, info: SessionInfo, archived: bool) -> _Member:
    """``info`` with the trailers of the newest commit gs wrote in its history (stepping over plain git's)."""
    tip_fields = fields = info.message.fields  # parsed on each access: once here
    gs_tip = info.tip
    if fields.session is None and fields.forked_from is None:
        try:
            for n, ci in enumerate(store.first_parents(info.tip)):
                fields, gs_tip = ci.message.fields, ci.commit
                if fields.session is not None or fields.forked_from is not None or n >= _GIT_COMMITS_MAX:
                    break
        except store.unreadable:
            fields, gs_tip = tip_fields, info.tip
    return _Member(info, archived, fields, tip_fields, gs_tip)


def family(store: SessionStore, session_id: str, rows: Sequence[SessionInfo] | None = None) -> Node:
    """Return the root of the family of ``session_id``: every session sharing its history.

    Args:
        store: the session store.
        session_id: a live session, else an archived one's name.
        rows: the live sessions' list rows when the caller has them (``store.list_sessions()``).

    Returns:
        The root :class:`Node`; ``session_id`` is somewhere in it.

    Raises:
        SessionNotFound: no live or archived session of that name.
    """
    live = list(rows) if rows is not None else store.list_sessions()
    members, parent = _links(store, live)
    by_key = {m.key: m for m in members}
    start = by_key.get((session_id, False)) or by_key.get((session_id, True))
    if start is None:
        raise SessionNotFound(session_id, store.session_ids())
    children: dict[_Key, list[_Member]] = defaultdict(list)
    for key, (p, _fork) in parent.items():
        children[p.key].append(by_key[key])
    root, seen = start, {start.key}
    while root.key in parent and parent[root.key][0].key not in seen:
        root = parent[root.key][0]
        seen.add(root.key)
    parent.pop(root.key, None)  # a cycle of odd trailers: cut it at the root
    current = store.current()
    return _build(store, root, None, parent, children, current, set())


def _links(store: SessionStore, live: Sequence[SessionInfo],
           only: set[str] | None = None) -> tuple[list[_Member], _Links]:
    """Every session, live and archived, and the session each one left (see :func:`_parent_of`).

    Args:
        store: the session store.
        live: the live sessions' list rows.
        only: the live session ids whose parents are wanted (None: every session's).
    """
    members = [_member(store, i, False) for i in live]  # unreadable ones too: drawn, marked
    members += [_member(store, i, True) for i in store.archived_sessions()]
    named: dict[str, list[_Member]] = defaultdict(list)  # a name -> who has it, live first
    saved_in: dict[str, list[_Member]] = defaultdict(list)  # a name -> whose tip was saved in it
    for m in members:
        named[m.info.session_id].append(m)
        if m.fields.session:
            saved_in[m.fields.session].append(m)
    parent: _Links = {}
    for m in members:
        if only is not None and (m.archived or m.info.session_id not in only):
            continue
        link = _parent_of(store, m, named, saved_in)
        if link is not None:
            parent[m.key] = link
    return members, parent


class Place:
    """Where a live session stands in its family, as every listing names it (``gs list``, the picker).

    Attributes:
        parent: the session it left, by its name now (a rename since is followed; an archived
            one is ``archive/<name>``).
        fork: the commit it left at (None: a branch plain git made: their merge base).
    """

    def __init__(self, store: SessionStore, info: SessionInfo, parent: str, fork: str | None, title: str,
                 parent_title: str) -> None:
        self.parent, self.fork = parent, fork
        self._store, self._info, self._title, self._parent_title = store, info, title, parent_title
        self._label: str | None = None

    @property
    def label(self) -> str:
        """What names it: :func:`fork_label` of its title, its first own prompt and its parent's title.

        Read on first use (a fork's own commits, back to its fork point), so that a listing
        reads them for the rows it shows only.
        """
        if self._label is None:
            prompt = None
            if self.fork is not None and self._title == self._parent_title:
                try:
                    prompt = first_prompt(self._store, self._info.tip, self.fork)
                except self._store.unreadable:
                    prompt = None
            self._label = fork_label(self._title, prompt, self._parent_title)
        return self._label


def places(store: SessionStore, live: Sequence[SessionInfo]) -> dict[str, Place]:
    """The :class:`Place` of each live session of ``live`` that left another (roots are not in it).

    A fork whose ``Forked-From`` names a live session left it (no commit is read); the others
    — their parent renamed or archived since, or a branch plain git made on a session's
    commit (its tip's ``Session`` names another) — are linked by :func:`family`'s rules, so
    that a fork of a renamed session names it by its new name.

    Args:
        store: the session store.
        live: the live sessions' list rows (``store.list_sessions()``).

    Returns:
        Session id -> its place.
    """
    by_id = {i.session_id: i for i in live}

    def title(fields: Trailers) -> str:
        return fields.title or ""

    out: dict[str, Place] = {}
    hard: set[str] = set()
    for info in live:
        if info.error is not None:
            continue
        fields = info.message.fields
        lineage, saved_in = fields.forked_from, fields.session
        if saved_in is not None and saved_in != info.session_id:
            hard.add(info.session_id)
        elif lineage is not None and _still_named(store, by_id.get(lineage.session_id), lineage.commit):
            up = by_id[lineage.session_id]
            out[info.session_id] = Place(store, info, up.session_id, lineage.commit, title(fields),
                                         title(up.message.fields))
        elif lineage is not None:
            hard.add(info.session_id)
    if hard:
        members, parent = _links(store, live, hard)
        by_key = {m.key: m for m in members}
        for key, (up_m, fork) in parent.items():
            m = by_key[key]
            out[key[0]] = Place(store, m.info, ("archive/" if up_m.archived else "") + up_m.info.session_id, fork,
                                m.turn_fields.title or m.fields.title or "",
                                up_m.turn_fields.title or up_m.fields.title or "")
    return out


def _still_named(store: SessionStore, up: SessionInfo | None, fork: str) -> bool:
    """Whether live session ``up`` is the one a fork left at ``fork``, told from two commits' trailers.

    The fork point was saved in ``up`` (its ``Session``) on the same line of forks as ``up``'s
    tip (the same ``Forked-From``): a name given again since a rename has other saves. A root
    (no ``Forked-From``) is checked by walking its history, where a new root of the old name
    would pass the trailers' test.
    """
    if up is None or up.error is not None:
        return False
    try:
        point = store.commit_info(fork).message.fields
    except store.unreadable:
        return False
    tip = up.message.fields
    if point.session != up.session_id or point.forked_from != tip.forked_from:
        return False
    return tip.forked_from is not None or _holds(store, up.tip, fork)


def fork_label(title: str, prompt: str | None, parent_title: str | None) -> str:
    """What names a session among its family (``gs tree``, ``/tree``, ``gs list``, the session picker).

    Its title, or a fork's first own prompt while its title is still its parent's (a fork
    starts with its parent's title, so every fork of ``work`` would read the same) or empty
    (every turn it had is undone).

    Args:
        title: the session's title.
        prompt: the first line of the first prompt it sent after leaving its parent (None: none yet).
        parent_title: its parent's title (None: no parent, a root).
    """
    return prompt if prompt and (not title or (parent_title is not None and title == parent_title)) else title


def _parent_of(store: SessionStore, m: _Member, named: dict[str, list[_Member]],
               saved_in: dict[str, list[_Member]]) -> tuple[_Member, str | None] | None:
    """The session ``m`` left and the commit it left at (None: their merge base), or None for a root.

    A tip saved in another session (a branch plain git made on its commit) left that session,
    even when that session is itself a fork (its commits carry its ``Forked-From``); otherwise
    the tip's lineage says where it left.
    """
    lineage = m.fields.forked_from
    session = m.fields.session
    if session is not None and session != m.info.session_id:
        found = _holder(store, m, session, None, lineage, named, saved_in)
        if found is not None or lineage is None:
            return found
    return _holder(store, m, lineage.session_id, lineage.commit, lineage, named, saved_in) if lineage else None


def _holder(store: SessionStore, m: _Member, hint: str, fork: str | None, lineage: Lineage | None,
            named: dict[str, list[_Member]], saved_in: dict[str, list[_Member]]) -> tuple[_Member, str | None] | None:
    """The session named ``hint`` that ``m`` left (at ``fork``; None: their merge base), or None.

    The parent holds the fork point (for a plain branch: the newest commit gs wrote on it), so a
    name used again after a rename is not taken for the session that had it.
    """
    plain = fork is None  # a branch on a session's commit, found through its Session trailer
    point = fork or m.gs_tip
    candidates = [c for c in named.get(hint, []) if c is not m and _holds(store, c.info.tip, point)]
    if not candidates:  # renamed since: whoever's tip was still saved under that name (not a sibling fork)
        candidates = [c for c in saved_in.get(hint, [])
                      if c is not m and not (lineage is not None and c.fields.forked_from == lineage)]
        if plain:  # m too was saved under that name, as its renamed original: a longer one is the parent
            candidates = [c for c in candidates if _rank(c) > _rank(m)]
        candidates = [c for c in candidates if _holds(store, c.info.tip, point)]
    return (max(candidates, key=_rank), fork) if candidates else None


def _rank(m: _Member) -> tuple[int, str]:
    """An order of sessions saved in one name: more turns first (the original, not a copy of its past)."""
    return (m.turn_fields.turn or m.fields.turn or 0, m.info.session_id)


def _holds(store: SessionStore, tip: str, commit: str) -> bool:
    try:
        return any(ci.commit == commit for ci in store.first_parents(tip))
    except store.unreadable:
        return False


def _build(store: SessionStore, m: _Member, up: _Member | None, parent: _Links,
           children: dict[_Key, list[_Member]], current: str | None, done: set[_Key]) -> Node:
    done.add(m.key)
    info = m.info
    node = Node(info.session_id, m.turn_fields.title or m.fields.title or "", m.turn_fields.turn or m.fields.turn or 0,
                info.time, info.tip, archived=m.archived, current=not m.archived and info.session_id == current,
                error=info.error)
    if up is not None:
        fork = parent[m.key][1]
        try:
            if fork is None:
                fork = merge_base(store, info.tip, up.info.tip)
            node.parent, node.fork_commit = up.info.session_id, fork
            if fork is not None:
                node.from_turn = store.commit_info(fork).message.fields.turn or 0
                node.prompt = first_prompt(store, info.tip, fork)
        except store.unreadable:
            node.parent = up.info.session_id
    kids = [_build(store, c, m, parent, children, current, done) for c in children.get(m.key, []) if c.key not in done]
    node.children = sorted(kids, key=lambda n: (n.from_turn if n.from_turn is not None else -1,
                                                _natural(n.session_id), n.archived))
    return node


def _natural(text: str) -> list[tuple[int, int | str]]:
    """A sort key reading digits as numbers: work-2 before work-10 (as people count forks)."""
    return [(1, int(part)) if part.isdigit() else (0, part) for part in re.split(r"(\d+)", text) if part]


def first_prompt(store: SessionStore, tip: str, fork: str) -> str | None:
    """The first line of the oldest prompt in the commits from ``tip`` back to ``fork`` (exclusive)."""
    prompt = None
    for ci in store.first_parents(tip):
        if ci.commit == fork:
            break
        m = _TURN_SUBJECT.match(ci.message.subject)
        if m:
            prompt = m.group(1)
    return prompt


@dataclass(frozen=True)
class TurnSave:
    """Where a session stood after one of its turns: a place ``/tree`` can jump to.

    Attributes:
        turn: the turn number.
        commit: the last save before the next turn (a title set after the turn included).
        subject: the subject of the save that holds the turn (``turn 3: <prompt>``).
    """

    turn: int
    commit: str
    subject: str


def turn_saves(store: SessionStore, tip: str, fork_commit: str | None = None,
               from_turn: int | None = None) -> list[TurnSave]:
    """The turns a session saved itself, oldest first, from its commits' trailers (no log read).

    Args:
        store: the session store.
        tip: the session's tip.
        fork_commit: where the session left its parent (the walk stops there; None: its root).
        from_turn: the parent's turn at the fork point (turns up to it are the parent's).

    Returns:
        One :class:`TurnSave` per turn after ``from_turn``.
    """
    found: dict[int, TurnSave] = {}
    for info in store.first_parents(tip):
        if info.commit == fork_commit:
            break
        turn = info.message.fields.turn
        if not turn or (from_turn is not None and turn <= from_turn):
            continue
        newest = found.get(turn)
        subject = info.message.subject if info.message.subject.startswith("turn") or newest is None \
            else newest.subject
        found[turn] = TurnSave(turn, newest.commit if newest else info.commit, subject)
    return [found[t] for t in sorted(found)]
