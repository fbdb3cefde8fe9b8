"""Migrations run from a built wheel installed in a fresh virtualenv, not only from a checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from tests.conftest import REPO, load_fixture


def files_of(package: Path, folders: tuple[str, ...]) -> set[str]:
    """The files of a package's data folders, named as a wheel names them."""
    return {
        str(path.relative_to(REPO))
        for folder in folders
        for path in (package / folder).rglob("*")
        if path.is_file()
    }


def _run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{args}: {result.stdout}\n{result.stderr}"
    return result


def test_wheel_in_a_fresh_virtualenv_initialises_and_captures(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(dist),
            str(REPO),
        ]
    )
    (wheel,) = dist.glob("remem-*.whl")
    # `remem ui` renders from the package's own templates and stylesheet.
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    site = files_of(REPO / "remem" / "ui", ("templates", "static"))
    assert site and site <= names, sorted(site - names)

    fresh = tmp_path / "fresh"
    _run([sys.executable, "-m", "venv", "--without-pip", str(fresh)])
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(fresh / "bin" / "python"),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ]
    )
    # Dependencies come from the test environment's site-packages, added as a plain path so
    # that its editable remem is not picked up.
    fresh_site = Path(
        _run(
            [
                str(fresh / "bin" / "python"),
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ]
        ).stdout.strip()
    )
    (fresh_site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    env["REMEM_HOME"] = str(tmp_path / "home")
    located = _run(
        [
            str(fresh / "bin" / "python"),
            "-c",
            "import remem.db.migrate as m; print(m.migrations_dir())",
        ],
        env=env,
        cwd=tmp_path,
    ).stdout.strip()
    assert Path(located) == fresh_site / "remem" / "_alembic"

    _run([str(fresh / "bin" / "remem"), "init"], env=env, cwd=tmp_path)
    payload = json.dumps(load_fixture("claude-code/post_tool_use_bash_success.json"))
    _run([str(fresh / "bin" / "remem-hook")], input=payload, env=env, cwd=tmp_path)
    status = json.loads(
        _run([str(fresh / "bin" / "remem"), "status", "--json"], env=env, cwd=tmp_path).stdout
    )
    assert status["events"] == 1
    assert status["schema_revision"] == status["schema_head"]
