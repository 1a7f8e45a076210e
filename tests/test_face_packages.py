"""The face's own packages keep their rule, read from the source as tests/test_layers.py reads it.

cli/display/ is what reaches the terminal: it imports nothing else of cli/. cli/repl/ is the
interactive chat: it imports no command module of cli/ (common.py, chat.py...) except for
type checking. The slash commands reach the chat through
:class:`gitsessions.cli.repl.handle.ChatHandle`, so no import circle runs through cli/, not
even one closed by an import under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

from test_layers import _sources, _under, circles, imported_modules, uses

DISPLAY = "gitsessions.cli.display"
REPL = "gitsessions.cli.repl"
SLASH = ("gitsessions.cli.repl.slash", "gitsessions.cli.repl.slash_compact", "gitsessions.cli.repl.slash_settings")


def _graphs() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The gitsessions modules each module of cli/ imports: run (lazy ones too), and all (TYPE_CHECKING too)."""
    sources = {m: p for m, p in _sources().items() if _under(m, "gitsessions.cli")}
    known = set(_sources())
    run, every = {}, {}
    for module, path in sources.items():
        text, package = path.read_text("utf-8"), path.name == "__init__.py"
        run[module] = imported_modules(module, text, known, package)
        every[module] = {u.what for u in uses(module, text, known, package)
                         if u.what.startswith("gitsessions") and u.what != module}
    return run, every


def test_the_display_imports_nothing_else_of_the_face():
    _run, every = _graphs()
    found = sorted(f"{m} -> {t}" for m, targets in every.items() if _under(m, DISPLAY)
                   for t in targets if _under(t, "gitsessions.cli") and not _under(t, DISPLAY))
    assert not found, "cli/display/ draws; what it needs of the rest of cli/ is passed in: " + "; ".join(found)


def test_the_chat_imports_no_command_module_but_for_type_checking():
    run, _every = _graphs()
    found = sorted(f"{m} -> {t}" for m, targets in run.items() if _under(m, REPL)
                   for t in targets if _under(t, "gitsessions.cli") and not _under(t, DISPLAY) and not _under(t, REPL))
    assert not found, "cli/repl/ is given what it needs by the command that runs it: " + "; ".join(found)


def test_the_slash_commands_import_nothing_of_the_loop_that_runs_them():
    _run, every = _graphs()
    for module in SLASH:
        assert f"{REPL}.repl" not in every[module], module  # they see the chat as a ChatHandle
    assert set(SLASH) <= every[f"{REPL}.repl"] | every["gitsessions.cli.repl.slash"]  # the loop imports them


def test_no_import_circle_in_the_face_even_through_type_checking_imports():
    _run, every = _graphs()
    inside = {m: {t for t in targets if t in every} for m, targets in every.items()}
    assert not circles(inside), circles(inside)


def test_the_graph_counts_type_checking_imports():
    # else the circle test above would pass on any tree: an import only a type checker runs is seen
    known = {"gitsessions.a", "gitsessions.b"}
    text = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import X\n"
    assert {u.what for u in uses("gitsessions.a", text, known)} == {"gitsessions.b"}
    assert imported_modules("gitsessions.a", text, known) == set()
