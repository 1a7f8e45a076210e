"""The ``session.jsonl`` model: events, tool calls, the derived transcript, turns, views, usage, commits.

Values and pure functions only (no I/O, no git, no OpenAI): :mod:`.events` the format of a
session's log; :mod:`.calls` a tool call and its result; :mod:`.transcript` events into a
valid chat-completions transcript; :mod:`.turns` turn numbers; :mod:`.view` the one
projection every display renders; :mod:`.request` what a request sends besides messages;
:mod:`.usage` tokens and the context window; :mod:`.commits` a save's commit message, its
subject and trailers.
"""
