"""The lines of ``/tree``: a session's family as ``gs tree`` draws it, each session's own turns under it."""

from __future__ import annotations

from dataclasses import dataclass

from ...history.tree import Node, turn_saves
from ...store import SessionStore
from ..display.render import family_lines


@dataclass(frozen=True)
class Spot:
    """A line of ``/tree``: a session (``commit`` None: its tip) or the save after one of its turns."""

    label: str
    session_id: str
    commit: str | None = None
    archived: bool = False


def tree_spots(store: SessionStore, root: Node) -> list[Spot]:
    """The lines of ``/tree``: the family as ``gs tree`` draws it, each session's own turns under it.

    Its turns are read from commit trailers (no log is read).
    """
    def turns(node: Node) -> list[tuple[str, str]]:
        return [(save.subject, save.commit) for save in turn_saves(store, node.tip, node.fork_commit, node.from_turn)]

    return [Spot(text, node.session_id, commit, node.archived) for text, node, commit in family_lines(root, turns)]
