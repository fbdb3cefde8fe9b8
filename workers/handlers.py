"""Task kinds and the handlers that process them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy import Connection, Engine

from remem.config import Settings
from remem.procedures import promote
from remem.procedures.window import Window
from remem.queue.store import ClaimedTask


class Handler(Protocol):
    """prepare() reads outside any write transaction; apply() writes inside the transaction that
    completes the task. Raise remem.errors.PermanentTaskError for data that can never succeed."""

    def prepare(self, engine: Engine, task: ClaimedTask, settings: Settings) -> Any: ...

    def apply(
        self,
        connection: Connection,
        task: ClaimedTask,
        prepared: Any,
        settings: Settings,
        now: float,
    ) -> Counter[str]: ...


class PreparesAhead(Handler, Protocol):
    """A handler whose windows a second process may prepare ahead (workers/preparer.py)."""

    def catch_up(
        self,
        engine: Engine,
        task: ClaimedTask,
        prepared: Any,
        settings: Settings,
        since: Sequence[Any],
    ) -> Any:
        """What was prepared ahead, brought up to date with the tasks completed since it was
        handed over (`since`: what each of them applied, None when this process prepared it):
        read outside any write transaction, like prepare()."""
        ...


class PromoteHandler:
    def prepare(self, engine: Engine, task: ClaimedTask, settings: Settings) -> Window:
        return promote.prepare(engine, task, settings)

    def catch_up(
        self,
        engine: Engine,
        task: ClaimedTask,
        prepared: Window,
        settings: Settings,
        since: Sequence[Window | None],
    ) -> Window:
        return promote.catch_up(engine, prepared, settings, since)

    def apply(
        self,
        connection: Connection,
        task: ClaimedTask,
        prepared: Window,
        settings: Settings,
        now: float,
    ) -> Counter[str]:
        return promote.apply(connection, prepared, settings, now)


# The handlers every process starts with: all that a child preparing windows ahead has.
BUILT_IN: dict[str, PreparesAhead] = {"promote": PromoteHandler()}
# Task kind -> handler. A process may register more before it starts its worker.
REGISTRY: dict[str, Handler] = dict(BUILT_IN)


def default_handlers() -> dict[str, Handler]:
    return dict(REGISTRY)
