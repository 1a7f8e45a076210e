"""Commands that read sessions without talking to a model: list, log, show, diff, search.

They import neither the model client nor the terminal UI, so they start fast. Revisions
(``SESSION``, ``SESSION~N``, ``SESSION^``, ``SESSION@COMMIT``, ``SESSION@{N}``,
``SESSION@{DATE}``; ``log`` and ``show`` without one: the current session) are resolved by the store;
what each command computes lives in :mod:`gitsessions.history.reading` and :mod:`gitsessions.history.search`,
this module only parses arguments and prints.
"""

from __future__ import annotations

import itertools
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Annotated, Any

import typer

from ..errors import GitSessionsError
from ..history import reading as hist
from ..history.search import Hit, marked
from ..history.search import search as search_sessions
from ..history.tree import rev_or_current
from ..log.commits import Lineage
from ..log.view import Item, is_message
from ..store import CommitInfo, Revision, SessionInfo
from ..text import cut_words, dumps, elide, iterdumps, plural
from ..transfer.export import show_object
from .common import Context, err, short
from .display import render
from .display.output import Rendered, styled

app = typer.Typer()

REV_HELP = "Revision: SESSION, SESSION~N, SESSION^, SESSION@COMMIT, SESSION@{N} or SESSION@{DATE}."
#: A REV that may be left out: the current session (the one HEAD names) is meant.
CURRENT_REV_HELP = ("Revision: SESSION, SESSION~N, SESSION^, SESSION@COMMIT, SESSION@{N} or SESSION@{DATE} "
                    "(default: the current session).")


def _lineage(forked_from: str | None) -> str | None:
    """``w@<40 hex>`` -> ``w@72beab6`` for tables."""
    if not forked_from:
        return None
    try:
        lineage = Lineage.parse(forked_from)
    except ValueError:
        return forked_from  # not gs's shape: shown as it is
    return f"{lineage.session_id}@{short(lineage.commit)}"


def _renders(c: Context) -> bool:
    """True when messages are shown rendered (markdown, colour): on a terminal with colour, config ``render:``."""
    return c.config.render and c.output.color()


# -- list ------------------------------------------------------------------------------------


@app.command("list")
def list_(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array, stable keys.")] = False,
    archived: Annotated[bool, typer.Option("--archived", help="List archived sessions (gs rm) instead.")] = False,
    every: Annotated[bool, typer.Option("--all", "-a", help="Also the sessions no reply was ever saved in.")] = False,
) -> None:
    """List sessions: id, title, turns, messages, last saved, tip commit, lineage.

    A fork shows where it came from (alt ← w@72beab6; "forked_from" in JSON). SAVED says how
    long ago ("3 hours ago"); the JSON has the time itself. A session that holds prompts
    and no reply (its requests failed: a server down, a wrong URL) is no conversation: it is
    counted in one line, not listed, unless --all (JSON lists every session).

    Examples:
        gs list
        gs list --archived                  # what gs rm put away
        gs list --json
    """
    c: Context = ctx.obj
    with c.store() as store:
        listed = hist.list_sessions(store, archived=archived, redactor=c.redactor(), warnings=c.warnings)
        rows = [render.session_row(info) for info in listed]
        if not archived and (strangers := store.stranger_branches()):
            c.warnings.append(render.stranger_branches(str(store.path), strangers))
        rows.sort(key=lambda r: r["saved"] or "", reverse=True)
        if as_json:
            c.output.paged([dumps(rows) + "\n"])
            return
        unanswered = [i.session_id for i in sorted(listed, key=lambda i: i.time, reverse=True)
                      if not archived and _no_reply(store, i)]
        if unanswered and not every:
            rows = [r for r in rows if r["id"] not in unanswered]
            err(_unanswered_line(unanswered))
        if not rows:
            if not unanswered or every:
                err("no archived sessions" if archived else "no sessions yet; start one with: gs chat")
            return
        from ..history.tree import places

        # as gs tree has them: a parent by its name now, a fork by its own first prompt
        found = places(store, listed) if not archived else {}
        lineage = {r["id"]: _lineage(r["forked_from"]) for r in rows}
        for r in rows:
            if (place := found.get(r["id"])) is not None:
                r["title"] = place.label
                lineage[r["id"]] = f"{place.parent}@{short(place.fork)}" if place.fork else place.parent
    now = int(time.time())
    ago = {i.session_id: render.saved_ago(i.time, now) for i in listed}
    titles = {r["id"]: r["title"] if not r["error"] else f"[unreadable: {r['error']}]" for r in rows}
    columns = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    table = _ListLayout(rows, lineage, ago, titles, columns)
    msgs = f"  {'MSGS':>5}" if table.messages else ""
    lines: list[Any] = [[(f"{'SESSION':<{table.name_width}}  TURNS{msgs}  {'SAVED':<{table.when}}  COMMIT   TITLE",
                          "bold")]]
    for r in rows:
        counts = f"{r['turns']:>5}" + (f"  {r['messages']:>5}" if table.messages else "")
        lines.append([(f"{table.name(r['id']):<{table.name_width}}  {counts}  {ago[r['id']]:<{table.when}}  ", ""),
                      (short(r["commit"]), "yellow"), (f"  {table.title(r['id'])}", "")])
    c.output.paged(styled(lines, c.output))


def _no_reply(store: Any, info: SessionInfo) -> bool:
    """True for a session whose saves hold prompts and no reply, its last request failed.

    The trailers pick the candidates (its last turn ``Ended: error``; as many messages as
    turns: a prompt each, or a retry's undone turn beside a reply); the log of each
    candidate tells (no ``assistant/message``). A turn cut by a kill (``interrupted``, a
    recovered journal) is no failed request: listed.
    """
    fields = info.message.fields
    if info.error or not fields.turn or fields.messages != fields.turn or \
            (fields.ended or "").split(", ")[-1] != "error":
        return False
    try:
        events = store.load(info.session_id, info.tip).events
    except (GitSessionsError, *store.unreadable):  # a damaged log: listed, and marked where it is read
        return False
    return not any(e.type == "assistant/message" for e in events)


def _unanswered_line(ids: Sequence[str]) -> str:
    """The line ``gs list`` says for the sessions it leaves out (:func:`_no_reply`), newest first."""
    shown = ", ".join(ids[:3]) + (", …" if len(ids) > 3 else "")
    n = len(ids)
    return (f"({plural(n, 'session')} with no reply not listed, {'its' if n == 1 else 'their'} requests failed: "
            f"{shown}; gs retry {ids[0]} sends the prompt again, gs rm {ids[0]} puts it away, "
            "gs list --all lists them)")


class _ListLayout:
    """How ``gs list``'s table fits a terminal of ``columns`` (None: piped, every column whole).

    As ``gh`` and ``git log --oneline`` do: the MSGS column goes on a narrow terminal, long
    session ids and parents lose their middle (``claude-code-3f2a…91bc``), titles are cut at
    a word, so that a row is one line.
    """

    #: The title cut of piped output (as it always was), and the fewest columns a title gets.
    PIPED_TITLE, TITLE_MIN, NAME_MIN = 60, 12, 12

    def __init__(self, rows: list[dict[str, Any]], lineage: dict[str, str | None], ago: Mapping[Any, str],
                 titles: dict[str, str], columns: int | None) -> None:
        self._lineage, self._titles, self._columns = lineage, titles, columns
        self._full = {r["id"]: r["id"] + (f" ← {lineage[r['id']]}" if lineage[r["id"]] else "") for r in rows}
        self.when = max(len("SAVED"), *(len(a) for a in ago.values()))
        widest = max(len(n) for n in self._full.values())
        self.messages = True
        if columns is None:
            self.name_width, self._title_width = widest, self.PIPED_TITLE
            return
        fixed = 2 + 5 + 7 + 2 + self.when + 2 + 7 + 2  # the gaps, TURNS, MSGS, SAVED, COMMIT
        room = columns - 1 - fixed  # the last column would wrap on some terminals
        if room < self.NAME_MIN + self.TITLE_MIN + 6:
            self.messages, room = False, room + 7
        longest_title = max((len(t) for t in titles.values()), default=0)
        # the ids first (they are what a command takes), the title the rest, at least TITLE_MIN
        self.name_width = min(widest, max(self.NAME_MIN, room - min(longest_title, max(self.TITLE_MIN, room // 3))))
        self._title_width = max(0, room - self.name_width)

    def name(self, sid: str) -> str:
        """The SESSION cell: ``id ← parent@commit``, its parts elided in the middle to fit."""
        full, width = self._full[sid], self.name_width
        if len(full) <= width:
            return full
        parent = self._lineage[sid]
        head = elide(sid, min(len(sid), (width - 3) // 2))
        rest = width - len(head) - 3
        if not parent or rest < self.NAME_MIN:  # no room for the lineage to say anything: gs tree has it
            return elide(sid, width)
        name, at, commit = parent.rpartition("@")
        fits = at and rest > len(commit) + 4  # the commit kept whole: it is what names the fork point
        tail = elide(name, rest - len(commit) - 1) + "@" + commit if fits else elide(parent, rest)
        return f"{head} ← {tail}"

    def title(self, sid: str) -> str:
        """The TITLE cell: cut at a word to fit (piped: at 60 characters, as always)."""
        text = self._titles[sid]
        return text[:self._title_width] if self._columns is None else cut_words(text, self._title_width)


# -- log -------------------------------------------------------------------------------------


@app.command()
def log(
    ctx: typer.Context,
    rev: Annotated[str | None, typer.Argument(help=CURRENT_REV_HELP, metavar="REV")] = None,
    n: Annotated[int | None, typer.Option("-n", "--max-count", min=1, help="Show at most N commits.")] = None,
    oneline: Annotated[bool, typer.Option("--oneline", help="One line per commit.")] = False,
    patch: Annotated[bool, typer.Option("-p", "--patch", help="Under each commit, the messages it added.")] = False,
    graph: Annotated[bool, typer.Option("--graph", help="Mark where other sessions branched off.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON array, newest first.")] = False,
) -> None:
    """Show a session's commits newest first: commit, time, model, tokens, subject, lineage.

    REV may be a past revision (work~2): the log then starts there. -p lists under each
    commit the messages it added (user, assistant, ⚙ tool calls, ↳ results, turns that did
    not complete, titles, undo; what an import kept aside on one line, as gs show has it).
    --graph draws where other sessions forked off this history.

    Examples:
        gs log work
        gs log work -n 5 --oneline -p
        gs log work~2 --graph
    """
    c: Context = ctx.obj
    with c.store() as store:
        target = hist.read_revision(store, rev_or_current(store, rev, "log"), c.redactor(), c.warnings)
        view = hist.read_log(store, target, limit=n, graph=graph, patch=patch)
    sid = target.session_id
    commits, branches = view.commits, view.branches

    def items(info: CommitInfo) -> list[Item]:
        return render.compact_items(view.added.get(info.commit, []))

    def patch_lines(info: CommitInfo) -> list[Any]:
        """The messages a commit added: rendered on a terminal (config ``render:``), else plain."""
        if not _renders(c):
            return render.compact_lines(items(info))
        from .display.rendered import compact

        text = compact(items(info), c.output)
        return [Rendered(text)] if text else []

    if as_json:
        c.output.paged([dumps([_log_row(info, view, items, patch=patch, graph=graph) for info in commits]) + "\n"])
        return
    out: list[Any] = []
    for i, info in enumerate(commits):
        row = render.commit_row(info)
        if graph:
            _graph_commit(out, info, row, branches.get(info.commit, []), first=i == 0, target=target,
                          more=i < len(commits) - 1, lines=render.compact_lines(items(info)) if patch else [])
        elif oneline:
            ended = [(f" [{row['ended']}]", "red")] if row["ended"] else []
            out.append([(short(info.commit), "yellow"), (f" {row['subject']}", ""), *ended])
            if patch:
                out.extend(patch_lines(info))
        else:
            _full_commit(out, info, row, tip=sid if i == 0 and target.is_tip else None,
                         lines=patch_lines(info) if patch else [])
    c.output.paged(styled(out, c.output))


def _log_row(info: CommitInfo, view: hist.LogView, items: Callable[[CommitInfo], list[Item]], *, patch: bool,
             graph: bool) -> dict[str, Any]:
    """One commit of ``gs log --json``: its row, with what it added (``-p``) and who branched off (``--graph``)."""
    row = render.commit_row(info)
    if patch:
        row["added"] = [render.item_json(item) for item in items(info)]
    if graph:
        row["branches"] = [{"session": b.session_id, "tip": b.tip, "turns_since": b.turns_since,
                            "how": b.how} for b in view.branches.get(info.commit, [])]
    return row


def _full_commit(out: list[Any], info: CommitInfo, row: dict, *, tip: str | None, lines: list[Any]) -> None:
    """One commit of ``gs log`` as git shows it: head, fields, subject, then ``lines`` (what it added, ``-p``).

    ``tip`` is the session the commit is the tip of, named on its head (None: it is not shown as one).
    """
    head = [(f"commit {info.commit}", "yellow")]
    out.append(head + ([(" (", "yellow"), (tip, "bold green"), (")", "yellow")] if tip else []))
    out.append(f"Date:   {row['time']}")
    if row["model"]:
        out.append(f"Model:  {row['model']}")
    if row["tokens"] is not None:
        out.append(f"Tokens: {row['tokens']:,}")
    fork = hist.fork_origin(info)
    if fork:
        out.append(f"Fork:   from {fork[0]} at {short(fork[1])}")
    if row["ended"]:
        out.append([("Ended:  ", ""), (f"{row['ended']} (the turn did not complete)", "red")])
    out.append("")
    out.append(f"    {row['subject']}")
    out.append("")
    if lines:
        out.extend(lines)
        out.append("")


def _graph_commit(out: list[Any], info: CommitInfo, row: dict, branches: list[hist.Branch], *, first: bool,
                  target: Revision, more: bool, lines: list[str]) -> None:
    here = [b for b in branches if b.how == "points here"]
    for b in branches:
        if b.how == "points here":
            continue
        out.append(f"| * {b.session_id} ({b.how}, {plural(b.turns_since, 'turn')} since; tip {short(b.tip)})")
    if len(here) < len(branches):
        out.append("|/")
    names = ([target.session_id] if first and target.is_tip else []) + [b.session_id for b in here]
    deco = f" ({', '.join(names)})" if names else ""
    out.append([("* ", ""), (short(info.commit), "yellow"), (f"{deco} {row['subject']}", "")])
    pad = "|     " if more else "      "
    out.extend((pad + line.lstrip(" ")) if line.strip() else pad.rstrip() for line in lines)


# -- show ------------------------------------------------------------------------------------


class ShowFormat(str, Enum):
    """``gs show --format`` values."""

    text = "text"
    json = "json"
    jsonl = "jsonl"


@app.command()
def show(
    ctx: typer.Context,
    rev: Annotated[str | None, typer.Argument(help=CURRENT_REV_HELP, metavar="REV")] = None,
    fmt: Annotated[ShowFormat | None, typer.Option(
        "--format", "-f", metavar="FORMAT", help="text (to read; the default), json or jsonl.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The same as --format json.")] = False,
    full: Annotated[bool, typer.Option("--full", help="Everything whole. text: what an import kept aside (else one "
                                                      "line each); json: messages are every message, those a "
                                                      "compaction summary stands for too.")] = False,
) -> None:
    """Show a session's transcript as of REV (default: the current session, as last saved).

    The text shows every message and each summary where it was made (and what the next
    request sends with it); what an import kept aside and never sent to the model (another
    tool's instructions, its model's reasoning) is one line each, named by what it is:
    --full shows it whole. json: an object with id, commit, header, events and messages
    (the derived chat-completions messages: what the next request sends, a compaction's
    summary in place of what it covers; --full: every message); jsonl: session.jsonl
    exactly as stored.

    Examples:
        gs show work
        gs show work --full
        gs show work --json --full
        gs show work~1 --format json
        gs show work@{2.hours.ago}
    """
    if as_json and fmt not in (None, ShowFormat.json):
        raise typer.BadParameter(f"--json means --format json: drop --json or --format {fmt.value}")
    fmt = ShowFormat.json if as_json else fmt or ShowFormat.text
    c: Context = ctx.obj
    with c.store() as store:
        target = hist.read_revision(store, rev_or_current(store, rev, "show"), c.redactor(), c.warnings)
        snap = store.load(target.session_id, target.commit)
    if fmt is ShowFormat.jsonl:
        sys.stdout.buffer.write(snap.raw)
        sys.stdout.flush()
    elif fmt is ShowFormat.json:  # written as made: a 100 MB session is never one string
        c.output.paged(itertools.chain(iterdumps(show_object(snap, full=full)), ["\n"]))
    elif _renders(c):
        from .display.rendered import transcript

        c.output.paged(transcript(snap.events, c.output, full=full))
    else:
        c.output.paged(render.transcript_lines(snap.events, full=full))


# -- diff ------------------------------------------------------------------------------------


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

    Examples:
        gs diff work work-1
        gs diff work~3 work --json
    """
    c: Context = ctx.obj
    with c.store() as store:
        a = hist.read_revision(store, rev_a, c.redactor(), c.warnings)
        b = hist.read_revision(store, rev_b, c.redactor(), c.warnings)
        d = hist.diff(store, a, b)

    def side(rev: str, s: hist.DiffSide) -> dict[str, Any]:
        items = render.compact_items(s.items)
        return {"rev": rev, "session": s.revision.session_id, "commit": s.revision.commit,
                "count": sum(1 for i in items if is_message(i)), "messages": items}

    sa, sb = side(rev_a, d.a), side(rev_b, d.b)
    if as_json:
        for s in (sa, sb):
            s["messages"] = [render.item_json(item) for item in s["messages"]]
        print(dumps({"base": d.base.commit if d.base else None, "a": sa, "b": sb}))
        return
    out = [f"common ancestor: {short(d.base.commit)} {d.base.message.subject}" if d.base
           else "no common ancestor: the two sessions share no history"]
    for mark, s in (("---", sa), ("+++", sb)):
        out.append(f"{mark} only in {s['rev']} ({plural(s['count'], 'message')})")
        turn = None
        for item in s["messages"]:
            if item.turn != turn:
                turn = item.turn
                out.append(f"  turn {turn}:")
            out.extend(render.compact_lines([item]))
    c.output.paged(styled(out, c.output))


# -- search ----------------------------------------------------------------------------------


def _hit_row(h: Hit) -> dict[str, Any]:
    """The ``gs search --json`` object of one hit."""
    return {"session": h.session, "turn": h.turn, "commit": h.commit.commit if h.commit else None,
            "seq": h.seq, "role": h.role, "snippet": h.snippet, "archived": h.archived,
            "also": [{"session": s, "archived": a} for s, a in h.also]}


def hit_parts(h: Hit, query: str) -> list[tuple[str, str]]:
    """The ``gs search`` row of one hit as styled parts (:func:`.output.styled`).

    Where (the commit in yellow, as ``gs log`` shows it), the turn, the role, the text around
    the match with the match in bold red (git grep's colour), and the other sessions that
    hold the message.
    """
    also = ", ".join(f"{s} (archived)" if a else s for s, a in h.also)
    before, match, after = marked(h.snippet, query)
    where = [(f"{h.session}@", ""), (short(h.commit.commit) if h.commit else "?", "yellow")]
    return [*where, (f"{' (archived)' if h.archived else ''}  turn {h.turn}  {h.role}: {before}", ""),
            (match, "bold red" if match else ""), (after + (f"  (also in {also})" if also else ""), "")]


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="Text to find (any case).", metavar="QUERY")],
    session: Annotated[str | None, typer.Option("--session", "-s", help="Search only this session.")] = None,
    all_revisions: Annotated[bool, typer.Option(
        "--all-revisions", help="Also search archived sessions.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help='List of {"session", "turn", "commit", "seq", "role", "snippet", "archived", '
        '"also"}.')] = False,
) -> None:
    """Search message contents (user, assistant, tool results) of every session, any case.

    Prints SESSION@COMMIT (the commit that added the message), the turn, the role and the
    text around the match: one row per message, however many forks share it (named at the
    row's end). Exit status 1 when nothing matches (as grep).

    Examples:
        gs search yaml
        gs search "yaml" --session work
        gs search yaml --all-revisions --json
    """
    if not query:
        raise typer.BadParameter("the query is empty")
    c: Context = ctx.obj
    with c.store() as store:
        hits = search_sessions(store, query, session=session, all_revisions=all_revisions,
                               on_skip=lambda sid, exc: err(f"gs: skipped {sid}: {exc}"), redactor=c.redactor(),
                               warnings=c.warnings, index=c.repo_path() / "gs" / "search.sqlite")
    if as_json:
        print(dumps([_hit_row(h) for h in hits]))
    else:
        c.output.paged(styled((hit_parts(h, query) for h in hits), c.output))
    if not hits:
        if not as_json:
            err(f"no match for {query!r}")
        raise typer.Exit(1)
