"""Moving sessions out and conversations in: export, import planning and writing.

- :mod:`.export`: ``gs export`` rendering (markdown, html, json, jsonl).
- :mod:`.read`: an import file, detected and validated, into an :class:`~.read.ImportPlan`.
- :mod:`.readers`: one reader per source format (ChatGPT, Claude.ai, Claude Code, Codex, llm,
  messages arrays), and what they share (the conversation they give, an array read a piece at a time).
- :mod:`.discover`: where each tool keeps its files (``gs import --from TOOL`` without a file).
- :mod:`.write`: writing a plan into the store (:func:`~.write.write_import`).
- :mod:`.branches`: another tool's conversation, a commit per turn, incrementally.
- :mod:`.seen`: the files imported whole before, by content (passed over when unchanged).
- :mod:`.ahead`: the next files of an import read and redacted in a worker process.

Nothing here prints or reads the environment; the CLI does.
"""
