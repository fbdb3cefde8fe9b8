"""What a check of `remem doctor` says: its verdict, what it found and how to fix it. The
doctor's own checks and the team's (remem.admin.team_checks) speak alike."""

from __future__ import annotations

from dataclasses import asdict, dataclass

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report; `fix` says what to do when the status is not OK."""

    name: str
    status: str
    detail: str
    fix: str = ""

    def as_json(self) -> dict[str, str]:
        return asdict(self)
