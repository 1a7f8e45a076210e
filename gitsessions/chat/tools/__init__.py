"""The tools the model may call, every one opt-in: none is offered unless named.

:mod:`.toolset` says which are on (``--tools``) and which calls may run without asking;
:mod:`.clock`, :mod:`.files` and :mod:`.shell` what they do; :mod:`.processes` a command's
processes; :mod:`.ignore` the ``.gitignore`` rules of their walks. A plain chat sends no
``tools`` and loads none of them.
"""

from __future__ import annotations

from .clock import TOOL_SCHEMAS, get_current_time

__all__ = ["TOOL_SCHEMAS", "get_current_time"]
