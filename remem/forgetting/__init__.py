"""Forgetting for good: the way out when a secret got through redaction anyway.

What goes is chosen by event id, by procedure (its evidence and every run of its workflow
group) or by a regular expression over everything captured. The events and the rows derived
from them are deleted; everything derived is then re-derived from what remains by
`procedures.rebuild`. Archived procedures survive a rebuild, so those that match are deleted
here. Spool, dead-letter and log lines that carry what was forgotten are rewritten away, with
the drop ledger's rows and the drafts remem exported (places.py, outside.py). The team's memory
pulled here goes when it matches. The words that held a match are recorded, hashed, so that
what comes again is masked (remem/record/forgotten.py). The agents' transcripts are named, and
rewritten only when asked. Forgetting everywhere (the team database too, then a pull) is
remem/admin/forget.py's.
"""
