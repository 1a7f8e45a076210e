"""The code keeps its layers (style.md): storage and the service layer never import the
terminal or model libraries, and only the CLI reads the environment."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "gitsessions"
FACE = {"typer", "rich", "prompt_toolkit"}
MODEL = {"openai", "llama_cpp", "httpx", "httpx2"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _modules(*parts: str) -> list[Path]:
    return sorted(PACKAGE.joinpath(*parts).rglob("*.py")) if PACKAGE.joinpath(*parts).is_dir() \
        else [PACKAGE.joinpath(*parts)]


def test_store_imports_no_face_or_model_library():
    for path in _modules("store") + _modules("events.py") + _modules("transcript.py") + _modules("session.py") \
            + _modules("history.py"):
        bad = _imports(path) & (FACE | MODEL)
        assert not bad, f"{path.name} imports {bad}"


def test_chat_loop_imports_no_git_or_face_library():
    for path in _modules("chat"):
        bad = _imports(path) & (FACE | {"dulwich"})
        assert not bad, f"{path.name} imports {bad}"


def test_only_the_cli_reads_the_environment():
    for path in PACKAGE.rglob("*.py"):
        if "cli" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "os" and node.attr in ("environ", "getenv", "environb"):
                raise AssertionError(f"{path} reads the environment (line {node.lineno})")
