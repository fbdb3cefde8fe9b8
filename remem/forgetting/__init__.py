"""Forgetting for good: the way out when a secret got through redaction anyway.

What goes is chosen by event id, by procedure (its evidence and every run of its workflow
group) or by a regular expression over everything captured. The events and the rows derived
from them are deleted; everything derived is then re-derived from what remains by
`procedures.rebuild`. Archived procedures survive a rebuild, so those that match are deleted
here. Spool, dead-letter and log lines that carry what was forgotten are rewritten away. The
team's memory pulled here goes when it matches. Forgetting everywhere (the team database too,
then a pull) is remem/admin/forget.py's.
"""
