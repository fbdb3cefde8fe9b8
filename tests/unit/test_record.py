"""The read model's frozen records (remem/record/frozen.py), which stand in for frozen
dataclasses on the hook's road."""

from __future__ import annotations

import pytest

from remem.record.frozen import Record


class Run(Record):
    id: int
    command: str
    files: tuple[str, ...] = ()


def test_fields_come_from_the_annotations_in_order_with_defaults() -> None:
    run = Run(3, "make test")
    assert run.fields() == {"id": 3, "command": "make test", "files": ()}
    assert Run(id=3, command="make test", files=("a.py",)).files == ("a.py",)
    assert run == Run(3, "make test") != Run(4, "make test")
    assert hash(run) == hash(Run(3, "make test"))
    assert repr(run) == "Run(id=3, command='make test', files=())"


def test_a_record_is_frozen_and_copied_with_changes() -> None:
    run = Run(3, "make test")
    with pytest.raises(AttributeError, match="frozen"):
        run.id = 4
    assert run.but(files=("b.py",)) == Run(3, "make test", ("b.py",))
    assert run.files == ()


def test_every_field_named_in_any_order_reads_in_the_class_order() -> None:
    run = Run(files=("a.py",), command="make test", id=3)
    assert list(run.fields()) == ["id", "command", "files"]
    assert run == Run(3, "make test", ("a.py",))
    assert repr(run) == "Run(id=3, command='make test', files=('a.py',))"
    with pytest.raises(TypeError, match="no field colour"):
        run.but(colour="red")


@pytest.mark.parametrize(
    ("args", "named", "problem"),
    [
        ((3,), {}, "needs command"),
        ((3, "x", (), "extra"), {}, "takes 3 fields"),
        ((3, "x"), {"colour": "red"}, "no field colour"),
    ],
)
def test_wrong_fields_are_refused(
    args: tuple[object, ...], named: dict[str, str], problem: str
) -> None:
    with pytest.raises(TypeError, match=problem):
        Run(*args, **named)
