"""Where gitsessions keeps its files on this machine: the config file, the cache and state folders.

Kept apart from :mod:`gitsessions.config` (which imports the rules and the model table) so
that the chat's early prompt (:mod:`gitsessions.cli.display.early`) can find the config file with
the standard library and platformdirs alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

#: The name of gitsessions' folders in the platform's config, data and cache dirs.
APP_NAME = "gitsessions"


def config_path(env: Mapping[str, str]) -> Path:
    """Return the config file path: ``$GS_CONFIG`` or the platform config dir's (may be absent)."""
    if env.get("GS_CONFIG"):
        return Path(env["GS_CONFIG"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.yaml"


def default_cache_dir() -> Path:
    """Return the platform's user cache dir for gitsessions (derived files, safe to delete)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME))


def default_state_dir() -> Path:
    """Return the platform's user state dir for gitsessions (what gs keeps of its own runs: logs)."""
    import platformdirs

    return Path(platformdirs.user_state_dir(APP_NAME))
