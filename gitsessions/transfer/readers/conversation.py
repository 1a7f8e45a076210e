"""A conversation of another tool, as a reader gives it to the writer (:mod:`.branches`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...log.events import Event


@dataclass
class ImportedConversation:
    """One conversation of another tool, converted and validated, not yet written.

    Attributes:
        tool: the source tool (``chatgpt``).
        source_id: the conversation's id there.
        title: its title (not yet redacted).
        created: when it began, epoch ms (the first commit's author date).
        branches: ``(key, chunks)`` per branch, the session's first; ``key`` names the branch
            in the source (its leaf message's id), chunks are the events per commit.
        notes: what the conversion changed or kept aside, for the user.
        spawned: ``(source id, epoch ms)`` when another conversation of the tool started this
            one (a sub-agent, a fork made in the tool): its new session's lineage is that
            conversation's session at the turn under way then (none when it is not imported).
        spawned_call: the id of that conversation's tool call that started this one, when the
            tool names it (a Claude Code sub-agent's ``Agent`` call): the lineage is then the
            commit holding that call, whatever the times say.
        forked_from: the id (in the same tool) of the conversation this one was forked from,
            whose history it repeats (a forked Codex session, a thread forked in llm): its
            sessions are where the branches fork from, sharing their commits.
        family: the ids of the tool's other conversations that begin with the same lines
            (a Claude Code session and its ``--fork-session`` copies, which tell no origin):
            as with ``forked_from``, whichever of them is written already is where the
            branches fork from, whatever the order they are imported in.
        awaits: the id of the conversation of the tool this one's history begins with, when
            its file was not found (a Codex fork whose origin's rollout is not there): it
            holds what follows alone, and an import of the same file once that one is there
            gives more (so the file is never taken as imported whole).
    """

    tool: str
    source_id: str
    title: str
    created: int
    branches: list[tuple[str, list[list[Event]]]]
    notes: list[str] = field(default_factory=list)
    spawned: tuple[str, int] | None = None
    spawned_call: str | None = None
    forked_from: str | None = None
    family: tuple[str, ...] = ()
    awaits: str | None = None
