"""Crash points for the fault tests: REMEM_TEST_CRASH_AT=name[:n] kills this process with
SIGKILL the n-th time (default the first) it reaches the named point. Unset, it costs one
dictionary lookup."""

from __future__ import annotations

import os
import signal

_SPEC = os.environ.get("REMEM_TEST_CRASH_AT", "")
_NAME, _, _NTH = _SPEC.partition(":")
_reached: dict[str, int] = {}


def crash_point(name: str) -> None:
    if not _SPEC or name != _NAME:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] >= int(_NTH or 1):
        os.kill(os.getpid(), signal.SIGKILL)
