"""Small frozen records: the captured event (remem.record.event) and what the read model
returns (remem.agent), and what the read model's readers share.

Stdlib only, without `typing` or `dataclasses` at run time: the hook builds its event and reads
its digest through these records.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # `typing` is not imported on the hook's hot path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


class Record:
    """A small frozen record, as a frozen dataclass would be, without importing `dataclasses`
    (which costs the hook more than its whole capture): the fields are the class's own
    annotations, in order; a class attribute is a field's default."""

    _fields: tuple[str, ...] = ()
    _field_set: frozenset[str] = frozenset()

    def __init_subclass__(cls) -> None:
        # Not inspect.get_annotations: importing inspect costs the hook what dataclasses would.
        cls._fields = tuple(cls.__dict__.get("__annotations__", {}))  # noqa: RUF063
        cls._field_set = frozenset(cls._fields)

    def __init__(self, *values: Any, **named: Any) -> None:
        if not values and named.keys() == self._field_set:  # every field named: checked at once
            data = named
        else:
            data = self._data(values, named)
        self.__dict__.update(data)  # past __setattr__, which refuses every change

    def _data(self, values: tuple[Any, ...], named: dict[str, Any]) -> dict[str, Any]:
        if len(values) > len(self._fields):
            raise TypeError(f"{type(self).__name__} takes {len(self._fields)} fields")
        data = dict(zip(self._fields, values, strict=False))
        for name in self._fields[len(values) :]:
            if name in named:
                data[name] = named.pop(name)
            elif hasattr(type(self), name):
                data[name] = getattr(type(self), name)
            else:
                raise TypeError(f"{type(self).__name__} needs {name}")
        if named:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(named)}")
        return data

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def fields(self) -> dict[str, Any]:
        values = self.__dict__  # every field is there (no subclass shadows one)
        return {name: values[name] for name in self._fields}

    def but(self, **changes: Any) -> Any:
        """A copy with some fields changed."""
        unknown = changes.keys() - self._field_set
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {', '.join(sorted(unknown))}")
        copy = object.__new__(type(self))
        copy.__dict__.update(self.__dict__, **changes)
        return copy

    def as_json(self) -> dict[str, Any]:
        """The fields, for remem.json_contract to write out."""
        return self.fields()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(tuple(self.fields().values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.fields().items())
        return f"{type(self).__name__}({shown})"


# The decoder's scanner alone: json.loads adds two whitespace matches per call, which cost
# the digest a tenth of its read. The database's lists are json.dumps' output, with no space
# around them; a list written otherwise is read by json.loads.
_decode = json.JSONDecoder().raw_decode


def json_list(text: str | None) -> list[Any]:
    """A list the database keeps as JSON text; none is empty."""
    if not text or text == "[]":
        return []
    try:
        value: list[Any] = _decode(text)[0]
    except ValueError:
        value = json.loads(text)
    return value


def in_list(prefix: str, values: Sequence[Any], params: dict[str, Any]) -> str:
    """`:prefix0, :prefix1, …` for an IN list, the values added to params."""
    params.update({f"{prefix}{i}": value for i, value in enumerate(values)})
    return ", ".join(f":{prefix}{i}" for i in range(len(values)))
