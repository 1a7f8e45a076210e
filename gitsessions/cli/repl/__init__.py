"""The interactive chat: the loop, its slash commands, its prompt and keys, Tab, the tools' questions.

What it needs of the command line (the store, the terminal's faces) is handed to it; it
imports nothing of :mod:`gitsessions.cli`'s commands.
"""
