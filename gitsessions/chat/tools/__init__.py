"""The tools the model may call: the clock every chat offers, and the opt-in file and shell tools.

:mod:`.clock` is the harmless default; :mod:`.toolset` the opt-in tools (``--tools``) and
which calls may run without asking; :mod:`.files` and :mod:`.shell` what they do;
:mod:`.ignore` the ``.gitignore`` rules of their walks. The package's top imports only the
clock: a plain chat loads nothing else.
"""

from __future__ import annotations

from .clock import TOOL_SCHEMAS, get_current_time

__all__ = ["TOOL_SCHEMAS", "get_current_time", "run_tool"]


def run_tool(name: str, arguments: str) -> tuple[str, bool]:
    """Run a call of a tool every chat offers (the clock), as :class:`.toolset.Toolset` runs it.

    Args:
        name: the function name the model asked for.
        arguments: its JSON-encoded arguments (the API's ``function.arguments`` string).

    Returns:
        ``(content, is_error)``: the text sent back as the tool message, and whether it is
        an error (unknown tool, bad arguments, the tool failed). Never raises.
    """
    from .toolset import Toolset

    tools = Toolset()
    return tools.run(tools.prepare("", name, arguments))
