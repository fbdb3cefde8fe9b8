"""Task kinds and the handlers that process them."""

from __future__ import annotations

from collections import Counter
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


class PromoteHandler:
    def prepare(self, engine: Engine, task: ClaimedTask, settings: Settings) -> Window:
        return promote.prepare(engine, task, settings)

    def apply(
        self,
        connection: Connection,
        task: ClaimedTask,
        prepared: Window,
        settings: Settings,
        now: float,
    ) -> Counter[str]:
        return promote.apply(connection, prepared, settings, now)


# Task kind -> handler. A process may register more before it starts its worker.
REGISTRY: dict[str, Handler] = {"promote": PromoteHandler()}


def default_handlers() -> dict[str, Handler]:
    return dict(REGISTRY)
