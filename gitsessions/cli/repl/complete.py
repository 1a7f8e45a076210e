"""Tab at the chat prompt: the slash commands, and after ``/open`` session ids and revisions.

Completion runs when Tab is pressed (not while typing), in the prompt's own thread, so the
store is read as the chat reads it: a list of refs for the ids, a short log for revisions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from prompt_toolkit.buffer import Buffer, CompletionState
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, get_common_complete_suffix
from prompt_toolkit.document import Document

from ...errors import GitSessionsError
from ...store import SessionStore

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


def complete_now(buffer: Buffer) -> None:
    """Tab at the chat's prompt: what prompt_toolkit's Tab does, done before the next key is read.

    prompt_toolkit's Tab (``menu-complete``) completes in a task of its own, after the keys
    read with it: an Enter typed ahead with it sent the line as typed (``/he``) while the
    line completed (``/help``) was shown. Here the completions are read as Tab is handled,
    and used as prompt_toolkit uses them: the next one when a menu is open; else their common
    part inserted (a menu of the rest when there are several); else the only one taken; else
    a menu of them.

    Args:
        buffer: the prompt's input, and its completer.
    """
    if buffer.complete_state:
        buffer.complete_next()
        return
    document = buffer.document
    found = list(buffer.completer.get_completions(document, CompleteEvent(completion_requested=True))
                 ) if buffer.completer else []
    before = document.text_before_cursor
    if len(found) == 1 and before[len(before) + found[0].start_position:] == found[0].text:
        return  # the one completion is what is typed already
    common = get_common_complete_suffix(document, found) if found else ""
    if common:
        buffer.insert_text(common)
        if len(found) > 1:
            _menu(buffer, [c.new_completion_from_position(len(common)) for c in found])
    elif len(found) == 1:
        buffer.apply_completion(found[0])
    elif found:
        _menu(buffer, found)


def _menu(buffer: Buffer, completions: list[Completion]) -> None:
    """Show ``completions`` in a menu at the cursor, none chosen yet."""
    buffer.complete_state = CompletionState(original_document=buffer.document, completions=completions)
    buffer.on_completions_changed.fire()
