"""A Claude Code transcript's lines as the graph its ``parentUuid`` links make, and its branches.

The conversion of a branch into messages is :mod:`.claude_code`'s; this is which lines a
branch holds. Each message line no later message line descends from ends a branch, but for
one kind: Claude Code writes parallel tool calls as a chain — the reply's lines one after
the other, each call's result hanging from the line of its call, the next line from the
last result::

    a2 (tool_use A) <- a3 (tool_use B) <- r2 (result B) <- a4
    a2 <- r1 (result A)

``r1`` ends no branch of its own (no rewind left it): a result line whose call a branch holds
unanswered, hanging from a line of that branch, is that branch's, read after the call's reply.
A line of results is one still when the tool adds ``role: "system"`` entries beside them
(:func:`is_system_entry`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .messages import _Bad, _kind

#: What a conversion reads of a line in the graph (the rest is let go as the file is read).
_READ = ("type", "message", "sessionId", "isSidechain", "agentId", "isMeta", "isCompactSummary", "subtype",
         "content", "compactMetadata", "isApiErrorMessage")


def _ms(stamp: Any) -> int | None:
    if not isinstance(stamp, str):
        return None
    try:
        t = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
    return int(t * 1000) if 0 <= t < 2**32 else None  # git dates no commit before 1970 or past 2106


def _ids(message: dict, kind: str, key: str) -> tuple[str, ...]:
    """The ids of a line's blocks of ``kind`` (``tool_use`` ids, or ``tool_result`` call ids)."""
    content = message.get("content")
    if not isinstance(content, list):
        return ()
    return tuple(b[key] for b in content
                 if isinstance(b, dict) and b.get("type") == kind and isinstance(b.get(key), str))


def is_system_entry(block: dict) -> bool:
    """True for an entry of a message's content that is the tool's word to the model (``role: "system"``), no block."""
    return block.get("role") == "system" and "type" not in block


@dataclass
class _Node:
    """A line of the graph (anything with a ``uuid``), as much of it as the conversion needs."""

    uuid: str
    parent: str | None
    line: int
    obj: dict
    message: bool  # a user or assistant line with a message: what a branch ends at
    time: int | None
    calls: tuple[str, ...] = ()  # an assistant line's tool_use ids
    results: tuple[str, ...] = ()  # a user line of tool results alone: the calls it answers


class _Transcript:
    """One file's lines, read into a graph: what every conversion of a branch reads.

    Args:
        lines: the file's lines, as :func:`.stream.lines` gives them (read one at a time).
    """

    def __init__(self, lines: Iterable[tuple[int, str, bool]]):
        self.nodes: dict[str, _Node] = {}
        self.order: list[_Node] = []
        self.titles: dict[str, str] = {}  # custom-title / ai-title: the last of each
        self.summaries: dict[str, str] = {}  # leafUuid -> summary
        self.notes: list[str] = []
        for n, line, ended in lines:  # each let go once taken: what the graph keeps of it is _READ
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                if not ended:  # no line end: a line Claude Code is still writing
                    self.notes.append(f"line {n} is not whole yet (being written?); the next import reads it")
                    break
                raise _Bad(f"line {n}: not valid JSON ({exc})") from None
            if not isinstance(obj, dict):
                raise _Bad(f"line {n} is {_kind(obj)}, not an object")
            self._take(obj, n)

    def _take(self, obj: dict, n: int) -> None:
        kind = obj.get("type")
        if kind == "summary" and isinstance(obj.get("summary"), str):
            self.summaries[str(obj.get("leafUuid"))] = obj["summary"]
        elif kind in ("custom-title", "ai-title"):
            title = obj.get("customTitle" if kind == "custom-title" else "aiTitle", obj.get("title"))
            if isinstance(title, str) and title.strip():
                self.titles[kind] = title.strip()
        uuid = obj.get("uuid")
        if not isinstance(uuid, str) or not uuid or uuid in self.nodes:
            return  # not in the graph (a title, a snapshot), or a line written again
        parent = obj.get("parentUuid")
        if parent is None and obj.get("subtype") == "compact_boundary":
            parent = obj.get("logicalParentUuid")  # the branch goes on through a compaction
        message = obj.get("message")
        is_message = kind in ("user", "assistant") and isinstance(message, dict)
        if is_message and "content" not in obj["message"]:
            raise _Bad(f"line {n}: a {kind} message without \"content\"")
        kept = {k: obj[k] for k in _READ if k in obj}  # not toolUseResult and the rest: a copy of much of it
        node = _Node(uuid, parent if isinstance(parent, str) else None, n, kept, is_message, _ms(obj.get("timestamp")))
        if is_message and kind == "assistant":
            node.calls = _ids(obj["message"], "tool_use", "id")
        elif is_message and isinstance(obj["message"].get("content"), list):
            results = _ids(obj["message"], "tool_result", "tool_use_id")
            blocks = [b for b in obj["message"]["content"] if not (isinstance(b, dict) and is_system_entry(b))]
            node.results = results if len(results) == len(blocks) else ()
        self.nodes[uuid] = node
        self.order.append(node)

    def path(self, leaf: _Node) -> list[_Node]:
        """The lines from the root to ``leaf`` on its side; a parent the file does not hold ends it (a root).

        A sub-agent's lines that hang from the session's are its own.
        """
        out, seen = [], set()
        node: _Node | None = leaf
        while node is not None:
            if node.uuid in seen:
                raise _Bad(f"line {node.line}: the parentUuid links form a loop")
            seen.add(node.uuid)
            out.append(node)
            node = self.nodes.get(node.parent) if node.parent else None
        side = leaf.obj.get("isSidechain") is True
        return [n for n in out[::-1] if (n.obj.get("isSidechain") is True) == side]

    def _ends(self, nodes: list[_Node]) -> list[_Node]:
        """The message lines of ``nodes`` no later message line descends from, in file order."""
        inner: set[str] = set()
        for node in nodes:
            if not node.message:
                continue
            up = self.nodes.get(node.parent) if node.parent else None
            seen: set[str] = set()
            while up is not None and not up.message and up.uuid not in seen:
                seen.add(up.uuid)
                up = self.nodes.get(up.parent) if up.parent else None
            if up is not None:
                inner.add(up.uuid)
        return [n for n in nodes if n.message and n.uuid not in inner]

    def branches(self, nodes: list[_Node]) -> list[tuple[_Node, list[_Node]]]:
        """Each branch of ``nodes``: its leaf and its lines, root first, parallel calls' results in.

        A result line that ends no later line's branch joins every branch it fits (see the
        module); the latest of them, when none is a tip of another kind, is a tip itself (the
        file ends at a result being written), which the earlier ones may join.

        Returns:
            ``(leaf, lines)`` pairs: first the branch holding the newest message line (the
            active one), then the others in file order.
        """
        ends = self._ends(nodes)
        tips = [(leaf, self.path(leaf)) for leaf in ends if not leaf.results]
        open_calls = [self._open(lines) for _, lines in tips]
        fits: list[list[_Node]] = [[] for _ in tips]
        for stray in reversed([n for n in ends if n.results]):
            # Its branch's: it hangs from one of its lines, answering calls it made and holds no result for.
            homes = [i for i, (on, calls) in enumerate(open_calls)
                     if stray.parent in on and calls.issuperset(stray.results)]
            for i in homes:
                fits[i].append(stray)
            if not homes:  # no call of a branch: a result left by a rewind, or the file's last line
                tips.append((stray, self.path(stray)))
                open_calls.append(self._open(tips[-1][1]))
                fits.append([])
        out = sorted(((leaf, self._merge(lines, fit[::-1])) for (leaf, lines), fit in zip(tips, fits, strict=True)),
                     key=lambda pair: pair[0].line)
        newest = max((n for n in nodes if n.message), key=lambda n: n.line, default=None)
        if newest is None:
            return []
        active = next((pair for pair in out if any(n is newest for n in pair[1])), None)
        if active is None:  # a newest line some branch passes by (never written so): its own branch
            active = (newest, self.path(newest))
        return [active, *[pair for pair in out if pair[0] is not active[0]]]

    @staticmethod
    def _open(lines: list[_Node]) -> tuple[set[str], set[str]]:
        """A branch's line uuids and the calls it made and holds no result for."""
        calls = {c for n in lines for c in n.calls} - {r for n in lines for r in n.results}
        return {n.uuid for n in lines}, calls

    @staticmethod
    def _merge(lines: list[_Node], joined: list[_Node]) -> list[_Node]:
        """``lines`` with each of ``joined`` read after the reply that made its call.

        Past the reply's later lines and the results written before it: results in call order.
        """
        hanging: dict[str, list[_Node]] = {}
        for stray in sorted(joined, key=lambda n: n.line):
            hanging.setdefault(stray.parent or "", []).append(stray)
        out: list[_Node] = []
        waiting: list[_Node] = []  # the results to place, in file order
        for node in lines:
            if waiting and node.obj.get("type") != "assistant":
                out.extend(s for s in waiting if not (node.results and s.line > node.line))
                waiting = [s for s in waiting if node.results and s.line > node.line]
            out.append(node)
            waiting = sorted(waiting + hanging.get(node.uuid, []), key=lambda n: n.line)
        return out + waiting
