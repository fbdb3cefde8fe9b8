"""Capture: host payloads -> CapturedEvent, redaction, spool, and the `remem-hook` entry point.

Everything under this package that the hook imports is stdlib only.
"""
