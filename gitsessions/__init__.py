"""gitsessions: a terminal chat client for OpenAI-compatible models whose every conversation
lives in a git repository (a session is a branch, every save is a commit)."""

__version__ = "0.1.0"
