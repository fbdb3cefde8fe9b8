"""Command analysis: a shell command -> steps, workflows, directories, masking; and what tools
print on success and failure. Pure; worker side only (never imported by the hook)."""
