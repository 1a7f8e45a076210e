"""The store's remote side: sync, pull, push, clone, share, through dulwich's transports.

Builds on the local store (:mod:`gitsessions.store`); nothing there imports this package.
"""
