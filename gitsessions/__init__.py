"""gitsessions: a terminal chat client whose every conversation lives in a git repository.

It talks to any OpenAI-compatible model; a session is a branch, every save a commit.
"""

__version__ = "0.1.0"
