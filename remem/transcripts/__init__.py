"""One reader per transcript format: a session file -> the hook payloads its host would have sent.

`remem import` and the replay tests feed these payloads through the hook's own capture code, so
a transcript is judged exactly as the live session would have been.
"""

from __future__ import annotations

from remem.transcripts.claude import read_claude
from remem.transcripts.codex import read_codex
from remem.transcripts.common import ReadStats, TranscriptCall

__all__ = ["ReadStats", "TranscriptCall", "read_claude", "read_codex"]
