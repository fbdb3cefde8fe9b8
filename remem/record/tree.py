"""A JSON value copied without recursion, its depth capped: a payload nested hundreds of levels
deep (valid JSON) must cost one field, never the event to a RecursionError. Stdlib only."""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# Hosts nest a handful of levels; a value deeper than this is replaced by DEEP.
MAX_DEPTH = 64
DEEP = "…[nested too deeply: not kept]"
# What `entry` returns to have an item copied like any other.
WALK = object()


def _walk(key: Any, item: Any) -> Any:
    return WALK


def copy_json(
    value: Any,
    string: Callable[[str], Any],
    key: Callable[[str], str] | None = None,
    entry: Callable[[Any, Any], Any] = _walk,
) -> Any:
    """A copy of a JSON value with each string through `string`, each string key of an object
    through `key`, and each item of an object as `entry(key, item)` says (WALK: copied like
    any other); a list or an object deeper than MAX_DEPTH is DEEP, the rest is kept."""
    root: list[Any] = [None]
    pending: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
    while pending:
        source, target, slot, depth = pending.pop()
        if isinstance(source, str):
            target[slot] = string(source)
        elif not isinstance(source, dict | list):
            target[slot] = source
        elif depth > MAX_DEPTH:
            target[slot] = DEEP
        elif isinstance(source, list):
            copied: list[Any] = [None] * len(source)
            target[slot] = copied
            for index, item in enumerate(source):
                # A string or a scalar is copied here; a list or an object waits its turn.
                if isinstance(item, str):
                    copied[index] = string(item)
                elif isinstance(item, dict | list):
                    pending.append((item, copied, index, depth + 1))
                else:
                    copied[index] = item
        else:
            into: dict[Any, Any] = {}
            target[slot] = into
            # Keys that come out the same (two secrets masked alike) keep the first one's
            # place and the last one's item, as an assignment in a loop would.
            named = {
                key(name) if key is not None and isinstance(name, str) else name: (name, item)
                for name, item in source.items()
            }
            for new_name, (name, item) in named.items():
                given = entry(name, item)
                if given is not WALK:
                    into[new_name] = given
                elif isinstance(item, str):
                    into[new_name] = string(item)
                elif isinstance(item, dict | list):
                    into[new_name] = given  # its place, filled when its turn comes
                    pending.append((item, into, new_name, depth + 1))
                else:
                    into[new_name] = item
    return root[0]
