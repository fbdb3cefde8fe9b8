"""User service definitions for the daemon: systemd (Linux), launchd (macOS), and a cron line.

Writing a unit enables nothing: the user runs the printed command.
"""

from __future__ import annotations

import os
import plistlib
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from remem.errors import RememError

SYSTEMD_UNIT = "remem-worker.service"
LAUNCHD_LABEL = "dev.remem.worker"


@dataclass(frozen=True)
class ServiceFile:
    path: Path
    content: str
    enable_command: str
    disable_command: str


class UnwritablePath(RememError):
    def __init__(self, text: str, where: str) -> None:
        super().__init__(f"{text!r} cannot be written into {where}: move the remem home")


def _worker_argv(*extra: str) -> list[str]:
    return [sys.executable, "-m", "remem", "worker", *extra]


def systemd_word(text: str, command_line: bool = False) -> str:
    """One word of a unit file, read back as `text`: as it is when plain, else quoted."""
    if text and all(char.isalnum() or char in "_@+=:,./-" for char in text):
        return text
    return _systemd_quoted(text, command_line)


def _systemd_quoted(text: str, command_line: bool = False) -> str:
    """Double-quoted with C escapes, `%` doubled (systemd expands specifiers such as %h
    everywhere), and `$` doubled on a command line, where systemd expands variables."""
    escaped = []
    for char in text:
        if char in '\\"':
            escaped.append("\\" + char)
        elif char == "%":
            escaped.append("%%")
        elif char == "$" and command_line:
            escaped.append("$$")
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            escaped.append(f"\\x{ord(char):02x}")
        else:
            escaped.append(char)
    return '"' + "".join(escaped) + '"'


def systemd(home: str, user_home: Path) -> ServiceFile:
    path = user_home / ".config" / "systemd" / "user" / SYSTEMD_UNIT
    exec_start = " ".join(systemd_word(part, command_line=True) for part in _worker_argv())
    content = f"""[Unit]
Description=remem worker: procedural memory for coding agents

[Service]
Type=simple
Environment={_systemd_quoted(f"REMEM_HOME={home}")}
ExecStart={exec_start}
Restart=on-failure
RestartSec=5
KillSignal=SIGTERM
TimeoutStopSec=30

[Install]
WantedBy=default.target
"""
    return ServiceFile(
        path,
        content,
        f"systemctl --user daemon-reload && systemctl --user enable --now {SYSTEMD_UNIT}",
        f"systemctl --user disable --now {SYSTEMD_UNIT}",
    )


def launchd(home: str, user_home: Path) -> ServiceFile:
    path = user_home / "Library" / "LaunchAgents" / f"{LAUNCHD_LABEL}.plist"
    log = os.path.join(home, "logs", "launchd.log")
    agent = {
        "Label": LAUNCHD_LABEL,
        "ProgramArguments": _worker_argv(),
        "EnvironmentVariables": {"REMEM_HOME": home},
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "StandardOutPath": log,
        "StandardErrorPath": log,
    }
    try:
        content = plistlib.dumps(agent, sort_keys=False).decode("utf-8")
    except ValueError as exc:  # a control character: XML cannot hold it
        raise UnwritablePath(home, "a launchd property list") from exc
    quoted = shlex.quote(str(path))
    return ServiceFile(
        path, content, f"launchctl load -w {quoted}", f"launchctl unload -w {quoted}"
    )


def cron_line(home: str) -> str:
    """A crontab line; cron ends a command at a line break and reads `%` as one, so a `%` is
    escaped and a line break refused."""
    if "\n" in home or "\r" in home:
        raise UnwritablePath(home, "a crontab line")
    command = " ".join(shlex.quote(part) for part in _worker_argv("--burst"))
    log = shlex.quote(os.path.join(home, "logs", "cron.log"))
    line = f"*/10 * * * * REMEM_HOME={shlex.quote(home)} {command} >> {log} 2>&1"
    return line.replace("%", "\\%")


def default_kind() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"
