"""What reaches the terminal: the wording, colour and pager, a streamed reply, rendered transcripts.

Imports nothing of the commands (:mod:`gitsessions.cli`) or of the chat's screen
(:mod:`gitsessions.cli.repl`): both build on it.
"""
