"""One reader per source format: another tool's files into conversations (or events).

A reader parses and maps; it writes nothing and imports nothing of the writer or the store.
"""
