"""Reading the past: revisions, the list, log and diff, a session's family tree, search.

:mod:`.reading` revisions, ``gs list``, ``gs log``, ``gs diff``; :mod:`.tree` the family of a
session; :mod:`.search` finding a text in stored messages, :mod:`.search_index` its derived index.
"""
