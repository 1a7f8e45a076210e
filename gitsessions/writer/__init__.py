"""A session being written: opened (lock, recovery, load), appended to, saved, forked, redone.

:mod:`.opening` a session (or a past revision) opened for writing, its lock taken and its
orphaned journal recovered first; :mod:`.session` the :class:`~.session.Session` and its one
door for text; :mod:`.saving` its commits (now, or behind the prompt); :mod:`.forking` a fork
made; :mod:`.redo` a new attempt at a past turn; :mod:`.recovery` the turn an orphaned journal holds.
"""
