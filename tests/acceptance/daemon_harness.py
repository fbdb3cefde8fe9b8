"""Runs `remem worker` in a process whose promote handler can be slowed down, or whose start-up
pauses, so tests can signal it at a chosen moment. Test-only: registered by this script alone.

Environment: REMEM_TEST_SLOW_APPLY_S (seconds to sleep inside the apply transaction; "sql" runs a
statement that takes minutes instead, as a huge window would),
REMEM_TEST_START_PAUSE_S (seconds to pause after the signal handlers are installed), and
REMEM_TEST_MARKER (a file created when the slow apply or the pause begins).
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from remem.cli.fast import main
from workers import handlers, runner


def _mark() -> None:
    Path(os.environ["REMEM_TEST_MARKER"]).write_text(str(os.getpid()))


class SlowPromote(handlers.PromoteHandler):
    def prepare(self, engine: Any, task: Any, settings: Any) -> Any:
        if os.environ.get("REMEM_TEST_SLOW_PREPARE_S"):
            _mark()
            time.sleep(float(os.environ["REMEM_TEST_SLOW_PREPARE_S"]))
        return super().prepare(engine, task, settings)

    def apply(
        self, connection: Any, task: Any, prepared: Any, settings: Any, now: float
    ) -> Counter[str]:
        result = super().apply(connection, task, prepared, settings, now)
        slow = os.environ.get("REMEM_TEST_SLOW_APPLY_S", "0")
        if slow != "0":
            _mark()
        if slow == "sql":
            connection.exec_driver_sql(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                "WHERE x < 5000000000) SELECT count(*) FROM c"
            ).all()
        else:
            time.sleep(float(slow))
        return result


if os.environ.get("REMEM_TEST_SLOW_APPLY_S") or os.environ.get("REMEM_TEST_SLOW_PREPARE_S"):
    handlers.REGISTRY["promote"] = SlowPromote()

if os.environ.get("REMEM_TEST_START_PAUSE_S"):
    original_reap = runner.Worker.reap

    def paused_reap(self: runner.Worker) -> None:
        _mark()
        time.sleep(float(os.environ["REMEM_TEST_START_PAUSE_S"]))
        original_reap(self)

    runner.Worker.reap = paused_reap  # type: ignore[method-assign]

sys.argv = ["remem", *sys.argv[1:]]
main()
