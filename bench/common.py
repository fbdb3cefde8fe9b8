"""What the benchmark scripts share: the environment their remem processes run in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def bytecode_env() -> dict[str, str]:
    """This environment minus PYTHONDONTWRITEBYTECODE, so processes read the .pyc files as an
    installed wheel would."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def remem_env(home: Path) -> dict[str, str]:
    # A stray REMEM_DATABASE_URL or REMEM_CONFIG from the caller would point remem elsewhere.
    env = {k: v for k, v in bytecode_env().items() if not k.startswith("REMEM_")}
    env["REMEM_HOME"] = str(home)
    return env


def compile_bytecode() -> None:
    """Byte-compile remem/ as pip does for a wheel, so start-up costs what it costs a user."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(REPO / "remem")],
        env=bytecode_env(),
        check=True,
    )
