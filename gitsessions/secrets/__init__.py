"""Redaction: secrets kept out of history, replaced where text enters a session.

:mod:`.redact` the :class:`~.redact.Redactor` (and the no-op one); :mod:`.redact_stream` a
streamed reply redacted as it arrives; :mod:`.redact_many` many strings at once (an import);
:mod:`.detectors` and :mod:`.detector_cache` the credential shapes, from detect-secrets;
:mod:`.scan` where in a text the shapes may match; :mod:`.regex_form` what a regex's matches
look like; :mod:`.entropy` the high-entropy rule; :mod:`.secret_names` which names hold secrets.
Nothing here reads the environment: the face passes it in.
"""
