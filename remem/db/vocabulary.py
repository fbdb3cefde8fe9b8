"""The values a status or format column may take: the schema's CHECK constraints and the CLI's
choices read them here. Stdlib only, so that a command's options cost no SQLAlchemy import."""

from __future__ import annotations

# The largest id SQLite's INTEGER (and PostgreSQL's BIGINT) holds: a larger one cannot even be
# asked for, so it is a bad argument, never an overflow inside the driver.
LARGEST_ID = 2**63 - 1
TASK_STATUSES = ("pending", "processing", "done", "failed")
ACTIVE, BROKEN, STALE, ARCHIVED = "active", "broken", "stale", "archived"
PROCEDURE_STATUSES = (ACTIVE, BROKEN, STALE, ARCHIVED)
EXPORT_FORMATS = ("claude-skill", "agents-md", "runbook")
# What the hook told an agent (remem.agent.advice): a known error's fix or what works instead,
# after a failure; the substitute, before a command known to fail here.
KNOWN_ERROR, SUBSTITUTION, BEFORE = "known_error", "substitution", "before"
ADVICE_KINDS = (KNOWN_ERROR, SUBSTITUTION, BEFORE)
# What a session's ledger judges (remem.procedures.ledger): what the digest showed, and
# what advice gave.
PROCEDURE = "procedure"
LEDGER_KINDS = (PROCEDURE, KNOWN_ERROR, "advice")
# Among what follows a piece of advice (advice_given.follow, workflow hashes otherwise): a file
# it named, whose edit follows it.
FOLLOW_FILE = "file:"
