"""The one JSON contract of every `--json` output and every MCP tool result (docs/json.md).

- Times are RFC 3339 in UTC with a `Z`, to the second: `2026-11-30T14:11:28Z`. A field holds a
  time when its name is `at` or ends in `_at`; the records of remem.agent.read keep epoch
  seconds, and this module writes them out.
- Lists are `[]`, never `null`; tuples are lists.
- Ids are integers (the database's own).

Stdlib only: `remem context --json` and `remem status --json` answer without SQLAlchemy.
"""

from __future__ import annotations

import json
import time

TYPE_CHECKING = False  # `typing` costs the fast answers a tenth of an interpreter start
if TYPE_CHECKING:
    from typing import Any

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def rfc3339(epoch_s: float | None) -> str | None:
    """A time as the contract writes it; None stays None (a time that never happened)."""
    if epoch_s is None:
        return None
    return time.strftime(TIME_FORMAT, time.gmtime(epoch_s))


def date(epoch_s: float | None) -> str:
    """The day of a time, for a table's column: `2026-11-30`, or "" for none."""
    return (rfc3339(epoch_s) or "")[:10]


def is_time_field(name: str) -> bool:
    return name == "at" or name.endswith("_at")


def contract(data: Any) -> Any:
    """The data as the contract has it: times written out, tuples as lists, recursively."""
    if isinstance(data, dict):
        return {key: _field(str(key), value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [contract(item) for item in data]
    return data


def _field(name: str, value: Any) -> Any:
    if is_time_field(name) and type(value) in (int, float):
        return rfc3339(value)
    return contract(value)


def dumps(data: Any) -> str:
    """The text a `--json` option prints, its line break included."""
    return json.dumps(contract(data), indent=2, sort_keys=True, default=str) + "\n"
