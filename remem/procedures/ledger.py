"""A session's ledger (DESIGN.md §7, did it help), pure: given what the digest showed the
session and the advice it was given, and the runs and calls that followed, what became of each.

- A shown procedure is *used* when its workflow ran in the session after it was shown;
  *passed* when one of those runs was verified; it *failed after* when the last of them failed.
- A shown known error is *repeated* when a failed run after it showed the same error.
- Advice is *followed* when one of the next FOLLOW_CALLS calls ran a workflow it named (a
  fix's command, the substitute) or edited a file it named (a fix's files); it *failed after*
  when that command failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from remem.db.vocabulary import FOLLOW_FILE, KNOWN_ERROR, PROCEDURE

ADVICE = "advice"
FOLLOW_CALLS = 5  # "within the next few calls": an agent tries advice straight away or not at all


@dataclass(frozen=True)
class Shown:
    """One item of the page the SessionStart digest printed."""

    event_id: int  # the SessionStart event
    at: float
    kind: str  # PROCEDURE or KNOWN_ERROR
    procedure_id: int | None = None
    directory: str | None = None
    workflow_hash: str | None = None
    error_key_hash: str | None = None


@dataclass(frozen=True)
class Given:
    """Advice the hook gave the session; event_id None when given before a command ran."""

    event_id: int | None
    at: float
    kind: str
    key: str
    follow: tuple[str, ...]


@dataclass(frozen=True)
class Run:
    """A run of one workflow step of the session's commands."""

    event_id: int
    at: float
    directory: str
    workflow_hash: str
    passed: bool
    error_key_hash: str | None = None  # a failed run's error, keyed and hashed


@dataclass(frozen=True)
class Call:
    """A command the session ran, with the workflows its steps ran (directory, hash), or an
    edit, with the files it changed (relative to the root)."""

    event_id: int
    at: float
    failed: bool
    workflows: frozenset[tuple[str, str]]
    files: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Judged:
    kind: str
    at: float  # when it was shown or given
    procedure_id: int | None = None
    directory: str | None = None
    workflow_hash: str | None = None
    item_key: str | None = None
    used: bool = False
    passed: bool = False
    repeated: bool = False
    followed: bool = False
    failed_after: bool = False
    failed_at: float | None = None


def judge(
    shown: Iterable[Shown], given: Iterable[Given], runs: Sequence[Run], calls: Sequence[Call]
) -> list[Judged]:
    """What became of everything shown to or given to the session, each once."""
    ordered_runs = sorted(runs, key=lambda run: (run.event_id, run.at))
    ordered_calls = sorted(calls, key=lambda call: call.event_id)
    judged: list[Judged] = []
    seen: set[tuple[str, str | None, str | None]] = set()
    for item in sorted(shown, key=lambda s: (s.event_id, s.at)):
        identity = (item.kind, item.directory, item.workflow_hash or item.error_key_hash)
        if identity in seen:
            continue  # shown again on a resumed session: judged from the first time
        seen.add(identity)
        after = [run for run in ordered_runs if run.event_id > item.event_id]
        if item.kind == PROCEDURE:
            judged.append(_procedure(item, after))
        elif item.kind == KNOWN_ERROR:
            judged.append(_known_error(item, after))
    judged.extend(_advice(advice, ordered_calls) for advice in given)
    return judged


def _procedure(item: Shown, after: Sequence[Run]) -> Judged:
    mine = [
        run
        for run in after
        if (run.directory, run.workflow_hash) == (item.directory, item.workflow_hash)
    ]
    last_failed = bool(mine) and not mine[-1].passed
    return Judged(
        PROCEDURE,
        item.at,
        item.procedure_id,
        item.directory,
        item.workflow_hash,
        used=bool(mine),
        passed=any(run.passed for run in mine),
        failed_after=last_failed,
        failed_at=mine[-1].at if last_failed else None,
    )


def _known_error(item: Shown, after: Sequence[Run]) -> Judged:
    repeated = any(not run.passed and run.error_key_hash == item.error_key_hash for run in after)
    return Judged(KNOWN_ERROR, item.at, item_key=item.error_key_hash, repeated=repeated)


def _advice(advice: Given, calls: Sequence[Call]) -> Judged:
    if advice.event_id is None:
        # Before a command ran: that command and the ones after it, by time.
        after = [call for call in calls if call.at >= advice.at]
    else:
        after = [call for call in calls if call.event_id > advice.event_id]
    follow = set(advice.follow)
    files = {name.removeprefix(FOLLOW_FILE) for name in follow if name.startswith(FOLLOW_FILE)}
    for call in after[:FOLLOW_CALLS]:
        if call.files & files:  # the file it named, edited
            return Judged(ADVICE, advice.at, item_key=f"{advice.kind}:{advice.key}", followed=True)
        ran = sorted(workflow for workflow in call.workflows if workflow[1] in follow)
        if ran:
            # The workflow it named, where it ran: a substitute that fails when followed is
            # ranked down as a procedure followed and failing is.
            return Judged(
                ADVICE,
                advice.at,
                directory=ran[0][0],
                workflow_hash=ran[0][1],
                item_key=f"{advice.kind}:{advice.key}",
                followed=True,
                failed_after=call.failed,
                failed_at=call.at if call.failed else None,
            )
    return Judged(ADVICE, advice.at, item_key=f"{advice.kind}:{advice.key}")
