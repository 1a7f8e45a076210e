"""Configuration: ``config.yaml`` plus environment overrides.

File: ``$GS_CONFIG``, else ``<platform config dir>/gitsessions/config.yaml`` (may be absent).
Keys (all optional)::

    api_key: sk-...            # overridden by OPENAI_API_KEY
    base_url: https://.../v1   # overridden by OPENAI_BASE_URL; http:// or https://
    model: gpt-4o-mini         # overridden by OPENAI_MODEL
    system: You are terse.     # the system prompt a new session starts with: its first event, logged
    max_steps: 8               # model requests per turn before it stops
    timeout: 120               # seconds the model may stay silent before the request fails
    max_retries: 2             # retries of a request that failed before its reply began
    repo: ~/sessions.git       # the session repo; overridden by GS_REPO and --repo
    author: {name: Ada, email: ada@example.com}   # commit identity (else git's user.*)
    redact: true               # replace secrets before anything is stored (default on)
    redact_patterns: {my-token: "tok_[a-z0-9]{24}"}   # more credential shapes to replace
    render: true               # replies as rendered markdown on a terminal (false: as typed)
    models: {gpt-4o: {context: 128000, price: {input: 2.5, output: 10, cached: 1.25}}}
                               # per model: its context window (tokens) and price (US dollars
                               # per million tokens), for /usage, the chat's footer and compaction
    compact_at: 0.8            # compact the history first when a request would pass this share
                               # of the model's window (false: never; /compact still works)
    sync: {remote: origin, push: on-save, pull: on-open, timeout: 30}
                               # push after every save; pull when gs chat/ask opens a session
                               # (each default: manual); seconds a remote may stay silent
                               # before a pull, push or sync gives up (default 30)
    tools: [read, write, shell]  # tools the chat offers (default: none; also time; --tools)
    permissions: {allow: [write, shell], paths: [~/notes]}
                               # calls run without asking (as --yes does for all); folders
                               # the file tools may reach besides the working directory

This module never reads ``os.environ`` itself: the CLI passes the environment in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .places import APP_NAME, config_path

#: Model requests one turn may take before it ends with reason ``max-steps`` (config ``max_steps``).
DEFAULT_MAX_STEPS = 8

#: Keys a config file may hold (a typo is an error, not silently ignored).
KNOWN_KEYS = frozenset({"api_key", "base_url", "model", "system", "max_steps", "timeout", "max_retries", "repo",
                        "author", "redact", "redact_patterns", "sync", "render", "models", "compact_at", "tools",
                        "permissions"})
#: Keys of ``sync:`` (a typo there is an error too).
SYNC_KEYS = frozenset({"remote", "push", "pull", "timeout"})
#: Keys of ``permissions:``.
PERMISSION_KEYS = frozenset({"allow", "paths"})
#: Seconds a remote may stay silent before a request to it fails (``sync: {timeout: ...}``).
DEFAULT_SYNC_TIMEOUT_S = 30.0
#: The share of a model's context window a request may fill before the history is compacted first.
DEFAULT_COMPACT_AT = 0.8
#: The model used with a key but no model named.
DEFAULT_MODEL = "gpt-4o-mini"


#: The keys of a model's ``price:`` (US dollars per million tokens).
PRICE_KEYS = ("input", "output", "cached")


@dataclass(frozen=True)
class Price:
    """What a model's tokens cost, US dollars per million tokens (config ``models.NAME.price``).

    Attributes:
        input: a prompt token.
        output: a completion token.
        cached: a prompt token the server had cached (None: priced as ``input``).
    """

    input: float
    output: float
    cached: float | None = None


@dataclass(frozen=True)
class ModelSettings:
    """What the config says of one model (``models: {NAME: {context: N, price: {...}}}``).

    Attributes:
        context: the context window, tokens (None: not configured).
        price: its price (None: not configured; no cost is shown).
    """

    context: int | None = None
    price: Price | None = None


@dataclass(frozen=True)
class Config:
    """Settings after the file and the environment are merged.

    Attributes:
        path: the config file read (it may not exist).
        api_key, base_url, model: the provider (None when unset).
        system: the system prompt a new session starts with (its first ``session/system`` event).
        max_steps: model requests per turn.
        timeout: seconds the model may stay silent (to connect, to begin, between two pieces
            of a reply), or send bytes without a whole event, before the request fails.
        max_retries: retries of a model request that failed before its reply began.
        repo: the session repo path when set by config or environment.
        author_name, author_email: commit identity when configured.
        sync_remote: the remote ``gs push``/``pull``/``sync`` use by default (None: origin).
        sync_push: ``on-save`` pushes in the background after every save; else ``manual``.
        sync_pull: ``on-open`` pulls when ``gs chat``/``gs ask`` opens a session; else ``manual``.
        sync_timeout: seconds a remote may stay silent (to connect, between two pieces of an
            answer) before a pull, push or sync fails.
        render: replies (and ``gs show``, ``gs log -p``) as rendered markdown on a terminal
            with colour; False: the text as the model wrote it.
        key_in_file: the file itself holds an ``api_key`` (whatever the environment says).
        models: what the config says of each model: its context window and price (what
            they give, the window used and the cost: :mod:`gitsessions.log.usage`).
        tools: the tool groups or tools the chat offers (``tools:``; names checked where
            they are used: :func:`gitsessions.chat.tools.toolset.expand`).
        allow_tools: the groups or tools whose calls run without asking (``permissions.allow``).
        tool_paths: folders the file tools may reach besides the working directory.
        compact_at: the share of a model's window a request may fill before the history is
            compacted first (None: never).
    """

    path: Path
    api_key: str | None = None
    base_url: str | None = None
    model: str | None = None
    system: str | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    timeout: float = 120.0
    max_retries: int = 2
    repo: Path | None = None
    author_name: str | None = None
    author_email: str | None = None
    redact: bool = True
    redact_patterns: dict[str, str] = field(default_factory=dict)
    sync_remote: str | None = None
    sync_push: str = "manual"
    sync_pull: str = "manual"
    sync_timeout: float = DEFAULT_SYNC_TIMEOUT_S
    render: bool = True
    key_in_file: bool = False
    models: dict[str, ModelSettings] = field(default_factory=dict)
    tools: tuple[str, ...] = ()
    allow_tools: tuple[str, ...] = ()
    tool_paths: tuple[Path, ...] = ()
    compact_at: float | None = DEFAULT_COMPACT_AT

    @property
    def has_provider(self) -> bool:
        """True when a remote provider is configured (a key, or a base URL such as Ollama's)."""
        return bool(self.api_key or self.base_url)


def default_repo_path() -> Path:
    """Return the platform data dir's ``gitsessions/repo.git``."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME)) / "repo.git"


def _str(data: dict[str, Any], key: str, path: Path) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, (str, int, float)):
        raise ConfigError(str(path), f"{key} must be a string")
    return str(value)


def _base_url(env: Mapping[str, str], data: dict[str, Any], path: Path) -> str | None:
    """The API root: ``$OPENAI_BASE_URL``, else ``base_url:``; None when neither is set.

    A URL the HTTP client cannot send to is refused here, as the settings are read: later,
    the prompt would already be saved in a session before the request failed.

    Raises:
        ConfigError: the URL is not ``http://`` or ``https://``, or names no host.
    """
    value, name, where = env.get("OPENAI_BASE_URL"), "OPENAI_BASE_URL", None
    if not value:
        value, name, where = _str(data, "base_url", path), "base_url", str(path)
    if not value:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
    except ValueError as exc:  # a bracketed host that is no IPv6 address
        raise ConfigError(where, f"{name} {value!r} is not a URL ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ConfigError(where, f"{name} {value!r} must start with http:// or https://")
    if not parts.hostname:
        raise ConfigError(where, f"{name} {value!r} names no host after {parts.scheme}:// "
                                 "(such as http://localhost:11434/v1)")
    return value


def _names(value: Any, key: str, path: Path) -> tuple[str, ...]:
    """A list of names: a YAML list of strings, or one string of them separated by commas.

    Raises:
        ConfigError: anything else.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(str(path), f"{key} must be a list of names, such as [read, write, shell]")
    return tuple(v.strip() for v in value if v.strip())


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


def _models(value: Any, path: str) -> dict[str, ModelSettings]:
    """Read the config's ``models:`` mapping.

    Args:
        value: the YAML value (None: no models configured).
        path: the config file, for the error message.

    Returns:
        The settings by model name.

    Raises:
        ConfigError: not a mapping of names to ``{context: N, price: {input, output, cached}}``.
    """
    shape = "models must map model names to {context: 128000, price: {input: 2.5, output: 10, cached: 1.25}}"
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(path, shape)
    out: dict[str, ModelSettings] = {}
    for name, spec in value.items():
        if not isinstance(spec, dict) or set(spec) - {"context", "price"}:
            raise ConfigError(path, f"models.{name}: {shape}")
        context = spec.get("context")
        if context is not None and (not isinstance(context, int) or isinstance(context, bool) or context < 1):
            raise ConfigError(path, f"models.{name}.context must be a whole number of tokens above 0")
        price = spec.get("price")
        if price is not None:
            if (not isinstance(price, dict) or set(price) - set(PRICE_KEYS) or not {"input", "output"} <= set(price)
                    or not all(_number(v) for v in price.values())):
                raise ConfigError(path, f"models.{name}.price must be {{input: N, output: N}} (and cached: N), "
                                        "US dollars per million tokens")
            price = Price(float(price["input"]), float(price["output"]),
                          float(price["cached"]) if "cached" in price else None)
        out[str(name)] = ModelSettings(context, price)
    return out


def load_config(env: Mapping[str, str], path: Path | None = None) -> Config:
    """Read the config file and apply environment overrides (each group of keys read by a step of its own).

    Args:
        env: the environment (``os.environ`` from the CLI; a dict in tests).
        path: the file; :func:`config_path` when None.

    Returns:
        The merged settings.

    Raises:
        ConfigError: the file is not valid YAML, not a mapping, or has a bad value; or
            ``$OPENAI_BASE_URL`` is no HTTP URL.
    """
    path = config_path(env) if path is None else path
    data = _file(path)
    author = _mapping(data, "author", path, "author must be a mapping with name and email")
    max_steps, timeout, max_retries = _limits(data, path)
    repo = _repo(env, data, path)
    redact = _flag(data, "redact", path)
    patterns = _patterns(data, path)
    render = _flag(data, "render", path)
    sync, sync_timeout = _sync(data, path)
    permissions = _mapping(data, "permissions", path, "permissions must be a mapping like "
                           "{allow: [write, shell], paths: [~/notes]}", PERMISSION_KEYS)
    paths = _names(permissions.get("paths"), "permissions.paths", path)
    compact_at = _compact_at(data, path)
    return Config(
        path=path,
        api_key=env.get("OPENAI_API_KEY") or _str(data, "api_key", path),
        base_url=_base_url(env, data, path),
        model=env.get("OPENAI_MODEL") or _str(data, "model", path),
        system=_str(data, "system", path),
        max_steps=max_steps,
        timeout=timeout,
        max_retries=max_retries,
        repo=repo,
        author_name=_str(author, "name", path),
        author_email=_str(author, "email", path),
        redact=redact,
        redact_patterns=patterns,
        sync_remote=_str(sync, "remote", path),
        sync_push=sync.get("push", "manual"),
        sync_pull=sync.get("pull", "manual"),
        sync_timeout=sync_timeout,
        render=render,
        key_in_file=bool(data.get("api_key")),
        models=_models(data.get("models"), str(path)),
        tools=_names(data.get("tools"), "tools", path),
        allow_tools=_names(permissions.get("allow"), "permissions.allow", path),
        tool_paths=tuple(Path(p).expanduser() if Path(p).expanduser().is_absolute() else path.parent / p
                         for p in paths),
        compact_at=compact_at,
    )


def _file(path: Path) -> dict[str, Any]:
    """The keys of the config file (none when there is no file).

    Raises:
        ConfigError: not valid YAML, not a mapping, or a key that is not in :data:`KNOWN_KEYS`.
    """
    data: dict[str, Any] = {}
    if path.is_file():
        import yaml

        try:
            loaded = yaml.safe_load(path.read_text("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ConfigError(str(path), f"not valid YAML: {_yaml_problem(exc)}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(str(path), "the top level must be a mapping of keys to values")
        data = loaded or {}
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(str(path), f"unknown key {unknown[0]!r}; the keys are: {', '.join(sorted(KNOWN_KEYS))}")
    return data


def _yaml_problem(exc: Exception) -> str:
    """What is wrong and where, in words: ``line 3, column 5: mapping values are not allowed here``.

    PyYAML's own text names the stream (``in "<unicode string>"``) and quotes the line with a
    caret over several lines; the mark's line and column say the same on one.
    """
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not UTF-8 text (byte {exc.start} is not)"
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    if mark is None or not problem:
        return " ".join(str(exc).replace('in "<unicode string>", ', "").split())
    context = getattr(exc, "context", None)
    also = f" ({context})" if context and context != problem else ""
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}{also}"


def _mapping(data: dict[str, Any], key: str, path: Path, shape: str,
             keys: frozenset[str] | None = None) -> dict[str, Any]:
    """The mapping under ``key`` (empty when unset).

    Args:
        data: the config's keys.
        key: the key read.
        path: the config file, for the message.
        shape: the message when it is no mapping (or holds a key not in ``keys``).
        keys: the keys it may hold (None: any).

    Raises:
        ConfigError: ``shape``.
    """
    value = data.get(key) or {}
    if not isinstance(value, dict) or (keys is not None and set(value) - keys):
        raise ConfigError(str(path), shape)
    return value


def _limits(data: dict[str, Any], path: Path) -> tuple[int, float, int]:
    """``max_steps``, ``timeout`` and ``max_retries``: how far one request and one turn may go.

    Raises:
        ConfigError: one is not a number in its range.
    """
    max_steps = data.get("max_steps", DEFAULT_MAX_STEPS)
    if not isinstance(max_steps, int) or isinstance(max_steps, bool) or not 1 <= max_steps <= 100:
        raise ConfigError(str(path), "max_steps must be a whole number from 1 to 100")
    timeout = data.get("timeout", 120.0)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 3600:
        raise ConfigError(str(path), "timeout must be a number of seconds above 0 and at most 3600")
    max_retries = data.get("max_retries", 2)
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or not 0 <= max_retries <= 10:
        raise ConfigError(str(path), "max_retries must be a whole number from 0 to 10")
    return max_steps, float(timeout), max_retries


def _repo(env: Mapping[str, str], data: dict[str, Any], path: Path) -> Path | None:
    """The session repo: ``$GS_REPO``, else ``repo:`` (relative to the config file's folder, not to the cwd).

    Raises:
        ConfigError: ``repo:`` is not a string (even when ``$GS_REPO`` overrides it).
    """
    configured = _str(data, "repo", path)
    if configured and not Path(configured).expanduser().is_absolute():
        configured = str(path.parent / configured)
    repo = env.get("GS_REPO") or configured
    return Path(repo).expanduser() if repo else None


def _flag(data: dict[str, Any], key: str, path: Path) -> bool:
    """A key that is true or false, true when unset (``redact``, ``render``).

    Raises:
        ConfigError: anything else.
    """
    value = data.get(key, True)
    if not isinstance(value, bool):
        raise ConfigError(str(path), f"{key} must be true or false")
    return value


def _patterns(data: dict[str, Any], path: Path) -> dict[str, str]:
    """``redact_patterns``: more credential shapes, by name.

    Raises:
        ConfigError: not a mapping of names to regular expressions that compile.
    """
    patterns = data.get("redact_patterns") or {}
    if not isinstance(patterns, dict) or not all(isinstance(v, str) for v in patterns.values()):
        raise ConfigError(str(path), "redact_patterns must map names to regular expressions")
    for name, rx in patterns.items():
        try:
            re.compile(rx)
        except re.error as exc:
            raise ConfigError(str(path), f"redact_patterns.{name} is not a valid regular expression ({exc})") from None
    return {str(k): v for k, v in patterns.items()}


def _sync(data: dict[str, Any], path: Path) -> tuple[dict[str, Any], float]:
    """``sync:`` (its keys checked) and its timeout in seconds.

    Raises:
        ConfigError: not a mapping of :data:`SYNC_KEYS` with their known values, or a bad timeout.
    """
    sync = data.get("sync") or {}
    if (not isinstance(sync, dict) or set(sync) - SYNC_KEYS or sync.get("push", "manual") not in ("manual", "on-save")
            or sync.get("pull", "manual") not in ("manual", "on-open")):
        raise ConfigError(str(path), "sync must be a mapping like "
                                     "{remote: origin, push: on-save | manual, pull: on-open | manual, timeout: 30}")
    timeout = sync.get("timeout", DEFAULT_SYNC_TIMEOUT_S)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 3600:
        raise ConfigError(str(path), "sync.timeout must be a number of seconds above 0 and at most 3600")
    return sync, float(timeout)


def _compact_at(data: dict[str, Any], path: Path) -> float | None:
    """``compact_at``: the share of the window a request may fill before compacting (None: ``false``, never).

    Raises:
        ConfigError: neither a share above 0 and at most 1 nor false.
    """
    compact_at = data.get("compact_at", DEFAULT_COMPACT_AT)
    if compact_at is False:
        return None
    if not isinstance(compact_at, (int, float)) or isinstance(compact_at, bool) or not 0 < compact_at <= 1:
        raise ConfigError(str(path), "compact_at must be a share of the window above 0 and at most 1 "
                                     "(0.8: at 80 %), or false")
    return float(compact_at)


def key_file_exposed(config: Config) -> bool:
    """True when the config file holds an ``api_key`` and the group or others can read it.

    ssh's rule for a private key file: a secret in a file others can read is worth a warning.
    """
    if not config.key_in_file:
        return False
    try:
        return bool(config.path.stat().st_mode & 0o077)
    except OSError:
        return False
