"""``python -m gitsessions``: the ``gs`` command."""

from .cli import main

main()
