"""The values a status or format column may take: the schema's CHECK constraints and the CLI's
choices read them here. Stdlib only, so that a command's options cost no SQLAlchemy import."""

from __future__ import annotations

TASK_STATUSES = ("pending", "processing", "done", "failed")
PROCEDURE_STATUSES = ("active", "broken", "stale", "archived")
EXPORT_FORMATS = ("claude-skill", "agents-md", "runbook")
