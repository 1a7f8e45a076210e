"""Commands that read sessions without talking to a model: ``list``, ``log``, ``show``,
``diff`` and ``search``.

They import neither the model client nor the terminal UI, so they start fast. Revisions
(``SESSION``, ``SESSION~N``, ``SESSION^``, ``SESSION@COMMIT``) are resolved by the store.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any

import typer

from .. import render
from ..errors import CorruptSession, InvalidSessionId, SessionNotFound, UnsupportedVersion
from ..events import Event
from ..session import try_recover
from ..store import CommitInfo, GitStore, Revision
from .common import Context, err, short

app = typer.Typer()

REV_HELP = "Revision: SESSION, SESSION~N, SESSION^ or SESSION@COMMIT."
_REV_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def _open_rev(store: GitStore, rev: str) -> Revision:
    """Recover an orphaned journal of the session ``rev`` names, then resolve ``rev``."""
    m = _REV_ID.match(rev)
    if m:
        try:
            try_recover(store, m.group(0))
        except InvalidSessionId:
            pass  # resolve() says what is wrong with it
    return store.resolve(rev)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _lineage(forked_from: str | None) -> str | None:
    """``w@<40 hex>`` -> ``w@72beab6`` for tables."""
    if not forked_from:
        return None
    sid, _, commit = forked_from.partition("@")
    return f"{sid}@{short(commit)}" if commit else sid


# -- list ------------------------------------------------------------------------------------


@app.command("list")
def list_(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array, stable keys.")] = False,
    archived: Annotated[bool, typer.Option("--archived", help="List archived sessions (gs rm) instead.")] = False,
) -> None:
    """List sessions: id, title, turns, messages, last saved, tip commit, lineage.

    A fork shows where it came from (alt ← w@72beab6; "forked_from" in JSON).

    Example: gs list --json
    """
    c: Context = ctx.obj
    with c.store() as store:
        if archived:
            infos = store.archived_sessions()
        else:
            for sid in store.journaled():
                try_recover(store, sid)
            infos = store.list_sessions()
        rows = [render.session_row(info) for info in infos]
    rows.sort(key=lambda r: r["saved"] or "", reverse=True)
    if as_json:
        print(render.dumps(rows))
        return
    if not rows:
        err("no archived sessions" if archived else "no sessions yet; start one with: gs chat")
        return
    names = {r["id"]: r["id"] + (f" ← {_lineage(r['forked_from'])}" if r["forked_from"] else "") for r in rows}
    width = max(len(n) for n in names.values())
    lines = [f"{'SESSION':<{width}}  {'TURNS':>5}  {'MSGS':>5}  {'SAVED':<16}  COMMIT   TITLE"]
    for r in rows:
        saved = r["saved"][:16].replace("T", " ") if r["saved"] else "-"
        title = r["title"] if not r["error"] else f"[unreadable: {r['error']}]"
        lines.append(f"{names[r['id']]:<{width}}  {r['turns']:>5}  {r['messages']:>5}  {saved:<16}  "
                     f"{short(r['commit'])}  {title[:60]}")
    _write_lines(lines)


# -- which events each commit added ------------------------------------------------------------


def _trailer_range(info: CommitInfo) -> tuple[int, int] | None:
    """The ``Events: a-b`` trailer as a half-open range ``(a, b + 1)``, or None."""
    m = re.fullmatch(r"(\d+)-(\d+)", info.message.trailers.get("Events", ""))
    if not m or int(m.group(2)) < int(m.group(1)):
        return None
    return int(m.group(1)), int(m.group(2)) + 1


class _Ranges:
    """Finds the events each commit added: its ``Events`` trailer, else (a commit made by
    another tool) the difference of the event counts of its blob and its parent's."""

    def __init__(self, store: GitStore, session_id: str):
        self.store = store
        self.session_id = session_id
        self._counts: dict[str, int] = {}

    def _count_at(self, commit: str) -> int:
        if commit not in self._counts:
            raw = self.store.read_raw(self.session_id, commit)
            self._counts[commit] = max(0, raw.count(b"\n") - 1)  # whole lines after the header
        return self._counts[commit]

    def of(self, info: CommitInfo) -> tuple[int, int]:
        rng = _trailer_range(info)
        if rng is not None:
            return rng
        if "Forked-From" in info.message.trailers and "Events" not in info.message.trailers:
            return (0, 0)  # a fork commit: same tree as its parent, adds nothing
        try:
            end = self._count_at(info.commit)
            start = self._count_at(info.parents[0]) if info.parents else 0
        except CorruptSession:
            return (0, 0)
        return (start, end) if start <= end else (end, end)


def _added_by(ranges: _Ranges, commits: Sequence[CommitInfo], events: Sequence[Event]) -> dict[str, list[Event]]:
    """Return commit -> the events it added, sliced out of ``events`` (the newest commit's log)."""
    out = {}
    for info in commits:
        start, end = ranges.of(info)
        out[info.commit] = list(events[start:min(end, len(events))])
    return out


# -- graph: where other sessions branch off -----------------------------------------------------


@dataclass
class _Branch:
    session_id: str
    tip: str
    turns_since: int
    how: str  # "forked here", "branches off here", "continues from here", "points here"


def _branches(store: GitStore, target: Revision, history: Sequence[CommitInfo]) -> dict[str, list[_Branch]]:
    """Return commit of ``history`` -> the live sessions whose history leaves it there.

    Each session's first-parent chain is walked from its tip until it meets ``history`` (the
    merge base). Results are memoised per commit, so sessions sharing a stretch of history
    walk it once: linear in the number of distinct commits, not sessions x commits.
    """
    main = {c.commit: c for c in history}
    # commit -> (merge base or None, commits above the base, first commit above the base)
    memo: dict[str, tuple[str | None, int, CommitInfo | None]] = {}
    out: dict[str, list[_Branch]] = defaultdict(list)
    for info in store.list_sessions():
        if info.session_id == target.session_id and target.is_tip:
            continue
        path: list[CommitInfo] = []
        sha: str | None = info.tip
        try:
            while sha is not None and sha not in main and sha not in memo:
                ci = store.commit_info(sha)
                path.append(ci)
                sha = ci.parents[0] if ci.parents else None
        except (KeyError, ValueError):
            continue  # an unreadable commit: gs list reports it
        found: tuple[str | None, int, CommitInfo | None]
        if sha is None:
            found = (None, 0, None)
        elif sha in main:
            found = (sha, 0, None)
        else:
            found = memo[sha]
        for ci in reversed(path):
            found = (found[0], found[1] + 1, found[2] or ci)
            memo[ci.commit] = found
        base, distance, first = found
        if base is None:
            continue
        turns = (_int(info.message.trailers.get("Turn")) or 0) - (_int(main[base].message.trailers.get("Turn")) or 0)
        if distance == 0:
            how = "points here"
        elif info.session_id == target.session_id:
            how = "continues from here"
        elif first is not None and first.message.trailers.get("Forked-From", "").endswith("@" + base):
            how = "forked here"
        else:
            how = "branches off here"
        out[base].append(_Branch(info.session_id, info.tip, max(turns, 0), how))
    for branches in out.values():
        branches.sort(key=lambda b: b.session_id)
    return out


# -- log -------------------------------------------------------------------------------------


def _fork_line(info: CommitInfo) -> str | None:
    """``from w at 72beab6`` on the commit that made a fork (its parent is the fork point)."""
    lineage = info.message.trailers.get("Forked-From")
    if not lineage or not info.parents:
        return None
    sid, _, commit = lineage.partition("@")
    if commit != info.parents[0]:
        return None
    return f"from {sid} at {short(commit)}"


@app.command()
def log(
    ctx: typer.Context,
    rev: Annotated[str, typer.Argument(help=REV_HELP, metavar="REV")],
    n: Annotated[int | None, typer.Option("-n", "--max-count", min=1, help="Show at most N commits.")] = None,
    oneline: Annotated[bool, typer.Option("--oneline", help="One line per commit.")] = False,
    patch: Annotated[bool, typer.Option("-p", "--patch", help="Under each commit, the messages it added.")] = False,
    graph: Annotated[bool, typer.Option("--graph", help="Mark where other sessions branched off.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON array, newest first.")] = False,
) -> None:
    """Show a session's commits newest first: commit, time, turn, subject, lineage.

    REV may be a past revision (work~2): the log then starts there. -p lists under each
    commit the messages it added (user, assistant, ⚙ tool calls, ↳ results, turns that did
    not complete, titles, undo). --graph draws where other sessions forked off this history.

    Example: gs log work -n 5 --oneline -p
    """
    c: Context = ctx.obj
    with c.store() as store:
        target = _open_rev(store, rev)
        sid = target.session_id
        if graph:
            history = store.log(sid, start=target.commit)
            commits = history[:n] if n is not None else history
            branches = _branches(store, target, history)
        else:
            commits = store.log(sid, start=target.commit, limit=n)
            branches = {}
        added: dict[str, list[Event]] = {}
        turns: dict[int, int] = {}
        if patch:
            snap = store.load(sid, target.commit)
            added = _added_by(_Ranges(store, sid), commits, snap.events)
            turns = {ev.seq: t for ev, t in zip(snap.events, render.turns_of(snap.events), strict=True)}

    def items(info: CommitInfo) -> list[dict[str, Any]]:
        evs = added.get(info.commit, [])
        return render.message_items(evs, [turns.get(e.seq, 0) for e in evs])

    if as_json:
        rows = []
        for info in commits:
            row = render.commit_row(info)
            if patch:
                row["added"] = items(info)
            if graph:
                row["branches"] = [{"session": b.session_id, "tip": b.tip, "turns_since": b.turns_since,
                                    "how": b.how} for b in branches.get(info.commit, [])]
            rows.append(row)
        print(render.dumps(rows))
        return
    out: list[str] = []
    for i, info in enumerate(commits):
        row = render.commit_row(info)
        if graph:
            _graph_commit(out, info, row, branches.get(info.commit, []), first=i == 0, target=target,
                          more=i < len(commits) - 1, lines=render.compact_lines(items(info)) if patch else [])
            continue
        if oneline:
            out.append(f"{short(info.commit)} {row['subject']}")
            if patch:
                out.extend(render.compact_lines(items(info)))
            continue
        out.append(f"commit {info.commit}" + (f" ({sid})" if i == 0 and target.is_tip else ""))
        out.append(f"Date:   {row['time']}")
        if row["model"]:
            out.append(f"Model:  {row['model']}")
        fork = _fork_line(info)
        if fork:
            out.append(f"Fork:   {fork}")
        out.append("")
        out.append(f"    {row['subject']}")
        out.append("")
        if patch:
            lines = render.compact_lines(items(info))
            if lines:
                out.extend(lines)
                out.append("")
    _write_lines(out)


def _graph_commit(out: list[str], info: CommitInfo, row: dict, branches: list[_Branch], *, first: bool,
                  target: Revision, more: bool, lines: list[str]) -> None:
    here = [b for b in branches if b.how == "points here"]
    for b in branches:
        if b.how == "points here":
            continue
        out.append(f"| * {b.session_id} ({b.how}, {_plural(b.turns_since, 'turn')} since; tip {short(b.tip)})")
    if len(here) < len(branches):
        out.append("|/")
    names = ([target.session_id] if first and target.is_tip else []) + [b.session_id for b in here]
    deco = f" ({', '.join(names)})" if names else ""
    out.append(f"* {short(info.commit)}{deco} {row['subject']}")
    pad = "|     " if more else "      "
    out.extend((pad + line.lstrip(" ")) if line.strip() else pad.rstrip() for line in lines)


def _write_lines(lines: Iterable[str]) -> None:
    sys.stdout.write(render.terminal_safe("".join(line + "\n" for line in lines)))
    sys.stdout.flush()


# -- show ------------------------------------------------------------------------------------


class ShowFormat(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


@app.command()
def show(
    ctx: typer.Context,
    rev: Annotated[str, typer.Argument(help=REV_HELP, metavar="REV")],
    fmt: Annotated[ShowFormat, typer.Option("--format", "-f", help="text, json or jsonl.")] = ShowFormat.text,
) -> None:
    """Show a session's transcript at a revision (default: its tip).

    json: an object with id, commit, header, events and messages (the derived
    chat-completions messages); jsonl: session.jsonl exactly as stored.

    Example: gs show work~1 --format json
    """
    c: Context = ctx.obj
    with c.store() as store:
        target = _open_rev(store, rev)
        snap = store.load(target.session_id, target.commit)
    if fmt is ShowFormat.jsonl:
        sys.stdout.buffer.write(snap.raw)
        sys.stdout.flush()
    elif fmt is ShowFormat.json:
        print(render.dumps(render.show_object(snap)))
    else:
        sys.stdout.write(render.transcript_text(snap.events))


# -- diff ------------------------------------------------------------------------------------


def merge_base(store: GitStore, a: str, b: str) -> str | None:
    """Return the newest commit on both first-parent chains of ``a`` and ``b`` (None if none).

    Linear: ``a``'s chain is read once into a set, ``b``'s is walked until it meets it.
    """
    ancestors = {info.commit for info in store.first_parents(a)}
    for info in store.first_parents(b):
        if info.commit in ancestors:
            return info.commit
    return None


@app.command()
def diff(
    ctx: typer.Context,
    rev_a: Annotated[str, typer.Argument(help=REV_HELP, metavar="REV_A")],
    rev_b: Annotated[str, typer.Argument(help=REV_HELP, metavar="REV_B")],
    as_json: Annotated[bool, typer.Option("--json", help='{"base", "a", "b"} as JSON.')] = False,
) -> None:
    """Show what each of two revisions holds beyond their common ancestor.

    Prints '--- only in REV_A (N messages)' and its messages, then '+++ only in REV_B'
    likewise (the common ancestor is the merge base along parents, as git merge-base).

    Example: gs diff work alt
    """
    c: Context = ctx.obj
    with c.store() as store:
        a = _open_rev(store, rev_a)
        b = _open_rev(store, rev_b)
        base = merge_base(store, a.commit, b.commit)
        snap_a = store.load(a.session_id, a.commit)
        snap_b = store.load(b.session_id, b.commit)
        n_base = len(store.load(a.session_id, base).events) if base else 0
        base_info = store.commit_info(base) if base else None

    def side(rev: str, target: Revision, events: list[Event]) -> dict[str, Any]:
        items = render.message_items(events[n_base:], render.turns_of(events)[n_base:])
        return {"rev": rev, "session": target.session_id, "commit": target.commit,
                "count": render.count_messages(items), "messages": items}

    sa, sb = side(rev_a, a, snap_a.events), side(rev_b, b, snap_b.events)
    if as_json:
        print(render.dumps({"base": base, "a": sa, "b": sb}))
        return
    out = [f"common ancestor: {short(base)} {base_info.message.subject}" if base_info
           else "no common ancestor: the two sessions share no history"]
    for mark, s in (("---", sa), ("+++", sb)):
        out.append(f"{mark} only in {s['rev']} ({_plural(s['count'], 'message')})")
        turn = None
        for item in s["messages"]:
            if item["turn"] != turn:
                turn = item["turn"]
                out.append(f"  turn {turn}:")
            out.extend(render.compact_lines([item]))
    _write_lines(out)


# -- search ----------------------------------------------------------------------------------

#: Event types whose ``content`` search looks at, and the role shown for each.
_SEARCHED = {"user/message": "user", "assistant/message": "assistant", "tool/result": "tool"}


@dataclass
class _Hit:
    session: str
    archived: bool
    seq: int
    turn: int
    role: str
    snippet: str
    commit: CommitInfo | None = None

    def row(self) -> dict[str, Any]:
        return {"session": self.session, "turn": self.turn, "commit": self.commit.commit if self.commit else None,
                "seq": self.seq, "role": self.role, "snippet": self.snippet, "archived": self.archived}


def scan_log(raw: bytes, query: str) -> list[tuple[int, int, str, str]]:
    """Find ``query`` (any case) in the message contents of one ``session.jsonl``.

    The whole file is decoded and casefolded once and checked for the query (JSON-escaped as
    it would be stored) before any line is parsed; only lines that contain it, and
    ``turn/start`` lines (to number turns), are parsed.

    Returns:
        ``(seq, turn, role, snippet)`` per matching message (its first match).
    """
    folded_q = query.casefold()
    stored_q = json.dumps(folded_q, ensure_ascii=False)[1:-1]
    text = raw.decode("utf-8", "replace")
    folded = text.casefold()
    # Another writer may have stored non-ASCII as \\uXXXX escapes: then parse every line.
    loose = not folded_q.isascii() and "\\u" in text
    if not loose and stored_q not in folded:
        return []
    hits = []
    turn = 0
    # casefold() never makes or removes a newline, so the folded lines align with the lines.
    for line, fline in zip(text.split("\n")[1:], folded.split("\n")[1:], strict=True):
        is_turn = '"turn/start"' in line
        if not is_turn and not loose and stored_q not in fline:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
            continue
        kind, data = obj.get("type"), obj["data"]
        if kind == "turn/start":
            t = data.get("turn")
            turn = t if isinstance(t, int) and not isinstance(t, bool) else turn + 1
            continue
        role = _SEARCHED.get(kind)
        content = data.get("content")
        seq = obj.get("seq")
        if role is None or not isinstance(content, str) or not isinstance(seq, int):
            continue
        span = render.find_folded(content, folded_q)
        if span is not None:
            hits.append((seq, turn, role, render.snippet(content, *span)))
    return hits


def _attribute(store: GitStore, session_id: str, tip: str, hits: list[_Hit]) -> None:
    """Set each hit's ``commit`` to the commit that added its event (walking back from ``tip``
    only as far as the oldest hit; the log is append-only, so every revision is a prefix)."""
    ranges = _Ranges(store, session_id)
    pending = sorted(hits, key=lambda h: h.seq, reverse=True)
    last = None
    for info in store.first_parents(tip):
        last = info
        start, end = ranges.of(info)
        if start == end:
            continue
        while pending and pending[0].seq >= start:
            pending.pop(0).commit = info
        if not pending:
            return
    for h in pending:
        h.commit = last


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Text to find (any case).", metavar="QUERY")],
    session: Annotated[str | None, typer.Option("--session", "-s", help="Search only this session.")] = None,
    all_revisions: Annotated[bool, typer.Option(
        "--all-revisions", help="Also search archived sessions; report each message once, at the commit "
        "that added it.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help='List of {"session", "turn", "commit", "seq", "role", "snippet", "archived"}.')] = False,
) -> None:
    """Search message contents (user, assistant, tool results) of every session, any case.

    Prints SESSION@COMMIT (the commit that added the message), the turn, the role and the
    text around the match. Exit status 1 when nothing matches (as grep).

    Example: gs search "yaml" --session work
    """
    if not query:
        raise typer.BadParameter("the query is empty")
    c: Context = ctx.obj
    hits: list[_Hit] = []
    with c.store() as store:
        live: list[tuple[str, str, bool]] = []
        for sid in store.journaled():
            if session is None or sid == session:
                try_recover(store, sid)
        if session is not None:
            tip = store.tip(session)
            arch = store.archive_ref(session) if all_revisions else None
            if tip is None and arch is None:
                raise SessionNotFound(session, store.session_ids())
            if tip is not None:
                live.append((session, tip, False))
            if arch is not None:
                live.append((session, arch, True))
        else:
            for sid in store.session_ids():
                try:
                    tip = store.tip(sid)
                except InvalidSessionId:
                    continue
                if tip is not None:
                    live.append((sid, tip, False))
            if all_revisions:
                for name in store.archived_ids():
                    sha = store.archive_ref(name)
                    if sha is not None:
                        live.append((name, sha, True))
        for sid, tip, is_archived in live:
            try:
                raw = store.read_raw(sid, tip)
            except CorruptSession as exc:
                err(f"gs: skipped {sid}: {exc}")
                continue
            found = [_Hit(sid, is_archived, *h) for h in scan_log(raw, query)]
            if found:
                try:
                    _attribute(store, sid, tip, found)
                except (KeyError, ValueError, CorruptSession, UnsupportedVersion):
                    pass
                hits.extend(found)
    if all_revisions:
        hits = _dedupe(hits)
    if as_json:
        print(render.dumps([h.row() for h in hits]))
    else:
        _write_lines(
            f"{h.session}@{short(h.commit.commit) if h.commit else '?'}{' (archived)' if h.archived else ''}"
            f"  turn {h.turn}  {h.role}: {h.snippet}" for h in hits)
    if not hits:
        if not as_json:
            err(f"no match for {query!r}")
        raise typer.Exit(1)


def _dedupe(hits: list[_Hit]) -> list[_Hit]:
    """Keep one hit per (commit, seq): sessions that share history (forks) hold the same
    messages. Prefer the session the commit was made in (its ``Session`` trailer)."""
    best: dict[tuple[str | None, int], _Hit] = {}
    order: list[tuple[str | None, int]] = []
    for h in hits:
        key = (h.commit.commit if h.commit else f"{h.session}?", h.seq)
        if key not in best:
            best[key] = h
            order.append(key)
        elif h.commit and h.commit.message.trailers.get("Session") == h.session != best[key].session:
            best[key] = h
    return [best[k] for k in order]
