"""What a recorded event is, and how its text is made safe to keep and to show: the event
record, redaction, project identity, output excerpts, quoting, and rewriting kept files.
Stdlib only, below everything that records or shows (the hook imports it)."""
