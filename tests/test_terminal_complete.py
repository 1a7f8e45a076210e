"""Tab at the chat prompt: slash commands, then ``/open``'s ids and revisions.

The completer runs in-process over a real store (sessions made by ``gs ask``), through
prompt_toolkit's own Document; the same completer in a real terminal is in
tests/test_terminal_keys.py.
"""

from __future__ import annotations

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from gitsessions.cli.repl.complete import ChatCompleter
from gitsessions.cli.repl.slash import COMMANDS, HELP
from gitsessions.store import GitStore


@pytest.fixture
def completer(gs, repo_path):
    for sid, prompt in (("work", "one"), ("work", "two"), ("work", "three"), ("wiki", "w"), ("other", "o")):
        assert gs("ask", "-S", sid, prompt).code == 0
    with GitStore(repo_path) as store:
        yield ChatCompleter(store, COMMANDS)


def complete(completer: ChatCompleter, text: str) -> list[tuple[str, str]]:
    """``(the line after the completion, its note)`` for each completion of ``text``."""
    doc = Document(text)
    return [(text[:len(text) + c.start_position] + c.text, c.display_meta_text)
            for c in completer.get_completions(doc, CompleteEvent(completion_requested=True))]


def test_tab_completes_slash_commands(completer):
    assert complete(completer, "/ti") == [("/title", "")]
    assert [line for line, _ in complete(completer, "/")] == list(COMMANDS)
    assert complete(completer, "hello /ti") == []  # a prompt to the model
    assert complete(completer, "/title wo") == []  # /title takes text, not a session


def test_tab_completes_session_ids_and_revisions_after_open(completer, git):
    assert complete(completer, "/open w") == [("/open wiki", ""), ("/open work", "")]
    assert complete(completer, "/open  ot") == [("/open  other", "")]
    assert complete(completer, "/open work~") == [("/open work~1", "turn 2: two"), ("/open work~2", "turn 1: one")]
    at = git("rev-parse", "work~1").strip()[:12]
    assert (f"/open work@{at}", "turn 2: two") in complete(completer, "/open work@")
    assert complete(completer, f"/open work@{at[:5]}") == [(f"/open work@{at}", "turn 2: two")]
    assert complete(completer, "/open nope~") == []
    assert complete(completer, "/open bad name~") == []


def test_the_help_lists_every_command_tab_offers():
    for name in COMMANDS:
        assert f"  {name} " in HELP or f"also {name}" in HELP, name
