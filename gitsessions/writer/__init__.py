"""A session being written: opened (lock, recovery, load), appended to, saved, forked, redone.

:mod:`.session` the :class:`~.session.Session` and its one door for text; :mod:`.saving` its
commits (now, or behind the prompt); :mod:`.forking` a revision opened for writing;
:mod:`.redo` a new attempt at a past turn; :mod:`.recovery` the turn an orphaned journal holds.
"""
