"""Tab at the chat prompt: the slash commands, and after ``/open`` session ids and revisions.

Completion runs when Tab is pressed (not while typing), in the prompt's own thread, so the
store is read as the chat reads it: a list of refs for the ids, a short log for revisions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from ..errors import GitSessionsError
from ..store import SessionStore

#: The commands whose argument is a revision (``work``, ``work~2``, ``work@1a2b3c4d``).
TAKES_REVISION = frozenset({"/open"})

#: How many of a session's saves Tab offers after ``work~`` or ``work@`` (newest first).
SAVES_OFFERED = 20


class ChatCompleter(Completer):
    """Complete a slash command's name, then ``/open``'s session id or revision.

    Args:
        store: the session store (its session ids, and a session's log for revisions).
        commands: the slash commands' names, in the order they are offered.
    """

    def __init__(self, store: SessionStore, commands: Iterable[str]):
        self.store = store
        self.commands = tuple(commands)

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        """Yield the completions of the text before the cursor (see the class)."""
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return  # a prompt to the model: nothing to complete
        name, space, arg = text.partition(" ")
        if not space:
            yield from (Completion(c, -len(name)) for c in self.commands if c.startswith(name))
        elif name in TAKES_REVISION and " " not in arg.lstrip():
            yield from self._revisions(arg.lstrip())

    def _revisions(self, word: str) -> Iterator[Completion]:
        for mark in "@~":
            if mark in word:
                sid, _, _rest = word.partition(mark)
                yield from (Completion(rev, -len(word), display_meta=subject)
                            for rev, subject in self._saves(sid, mark) if rev.startswith(word))
                return
        for sid in sorted(self.store.session_ids()):
            if sid.startswith(word):
                yield Completion(sid, -len(word))

    def _saves(self, sid: str, mark: str) -> Sequence[tuple[str, str]]:
        """``(revision, subject)`` of ``sid``'s last saves: ``sid~N`` or ``sid@COMMIT`` (12 hex digits)."""
        try:
            log = self.store.log(sid, limit=SAVES_OFFERED) if self.store.tip(sid) else []
        except GitSessionsError:
            return []  # an id that is no session: nothing to offer
        if mark == "~":
            return [(f"{sid}~{n}", info.message.subject) for n, info in enumerate(log) if n]
        return [(f"{sid}@{info.commit[:12]}", info.message.subject) for info in log]
