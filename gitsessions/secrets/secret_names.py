"""Which names hold secrets, and the shapes of a value given to such a name in text.

One rule for names: a name holding one of :data:`SECRET_NAME_PARTS` (or one of
detect-secrets' keyword list, ``passwd``, ``pwd``, ``api_key``, ...) holds a secret. The
environment-value rule (:func:`gitsessions.secrets.redact.from_environment`) uses it on variable
names; the assignment shapes here use it on names written in text, where the name may hold
more than the word (``ADMIN_PASSWORD=``, ``?access_token=``, ``--password=``):

- ``NAME=value`` as a ``.env`` file or a shell writes it (an upper-case name, ``=`` with no
  space): the value is a literal, a secret when at least :data:`MIN_SECRET_LEN` long;
- any other ``name = value`` or ``name=value`` (code, a URL's query, a command line), a YAML
  line ``name: value`` and an XML element ``<name>value</name>``: the value is a secret
  unless it reads as code (below), at least 4 characters long.

A value that is code is never a secret: ``None``/``true``/``null``, a number, a reference
(``$VAR``, ``${VAR}``, ``%VAR%``), a path or URL, a dotted name (``self.password``,
``settings.SECRET_KEY``), a call or an index (``getpass.getpass()``, ``os.environ[...]``),
and a bare name without a digit (``password=password``, ``Client(api_key=api_key)``,
``api_key: SecretStr``). Generated and typed secrets (``hunter2hunter2``, base64) hold digits
or characters a name cannot; a password of letters alone given outside a ``.env`` line is
missed, the price of leaving code as it is.
"""

from __future__ import annotations

#: Name fragments that mark a name as secret (matched ignoring case), for environment
#: variables and for names assigned in text.
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
#: Values shorter than this are never a secret by name alone in an environment or a ``.env``
#: line (shorter values would mangle ordinary text).
MIN_SECRET_LEN = 8

#: The characters of an unquoted value (not space, quote, bracket, separator or ``&``, which
#: ends a URL query's value; nor NUL, which the stream redactor masks a secret found with, as
#: ``[`` begins the replacement of one).
_CHARS = r"[^\s'\"`,;()\[\]{}<>&\0]"
#: Where a value ends (a last ``.`` is the sentence's).
_END = rf"\.?(?!{_CHARS})"
_NO_DOT = _CHARS[:-1] + ".]"
#: Values that are never secrets, whatever the form: a reference, a path, a URL, a literal.
_NEVER = (r"[$%]", r"(?:~|\.\.?)?/", r"[a-z][a-z0-9+.-]*://",
          rf"(?i:none|null|nil|true|false|undefined|nan){_END}")
#: ... and in code-like forms: a number, a dotted name, a bare name without a digit.
_CODE = (*_NEVER, rf"[-+]?\d+(?:\.\d+)?{_END}", rf"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+{_END}", rf"[A-Za-z_]+{_END}")


def is_secret_name(name: str) -> bool:
    """Whether a variable of this name holds a secret (it contains one of :data:`SECRET_NAME_PARTS`).

    The one rule for the redactor's variables, the names assigned in text and what a tool's
    command is not given.
    """
    upper = name.upper()
    return any(part in upper for part in SECRET_NAME_PARTS)


def _value(least: int, never: tuple[str, ...]) -> str:
    # A value of ``least`` characters or more, none of ``never``, in group 2 and taken whole:
    # captured in a lookahead and matched by its back reference, so that no shorter value is
    # tried once the longest is refused (``getpass`` of ``getpass.getpass()``). A last ``.``
    # is the sentence's.
    return rf"(?!{'|'.join(never)})(?=({_CHARS}{{{least - 1},}}{_NO_DOT}))\2"


def assignment_patterns(words: list[str]) -> list[tuple[str, int]]:
    """The regexes of a value given to a secret name in text, each with the group of the value.

    Args:
        words: detect-secrets' keyword list (regex pieces: ``api_?key``, ``password``, ...),
            looked for besides :data:`SECRET_NAME_PARTS`.

    Returns:
        ``[(pattern, group)]``: the ``.env`` line, the code-like assignment, the YAML line,
        the XML element (see the module's docstring). The first two start with the word,
        so that they are tried where a word is.
    """
    parts = [p.lower() for p in SECRET_NAME_PARTS]
    alts = "|".join(dict.fromkeys([*words, *parts]))  # each once, the library's first
    upper = "|".join(dict.fromkeys(w.upper() for w in [*words, *parts]))
    code = _value(4, _CODE)
    env = rf"(?:{upper})[A-Z0-9_]*=(['\"]?){_value(MIN_SECRET_LEN, _NEVER)}\1"
    # (``()``: group 1, so that the value is group 2 in every form)
    assign = rf"(?i)(?:{alts})[\w.-]*\s*(?<![=!<>])=(?![=>~])\s*(){code}(?![(]|\[(?!REDACTED:))"
    yaml = rf"(?im)^[ \t]*(?:-[ \t]+)?[\w.-]*?(?:{alts})[\w.-]*[ \t]*:[ \t]+(){code}[ \t]*(?:\#.*)?$"
    # (``(?=<)``: it does not start with a word, so it is searched on the word's line)
    xml = rf"(?i)(?=<)<([\w.-]*?(?:{alts})[\w.-]*)>{code}</\1>"
    return [(env, 2), (assign, 2), (yaml, 2), (xml, 2)]
