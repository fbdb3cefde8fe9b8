"""User service definitions for the daemon: systemd (Linux), launchd (macOS), and a cron line.

Writing a unit enables nothing: the user runs the printed command.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

SYSTEMD_UNIT = "remem-worker.service"
LAUNCHD_LABEL = "dev.remem.worker"


@dataclass(frozen=True)
class ServiceFile:
    path: Path
    content: str
    enable_command: str
    disable_command: str


def _worker_argv(*extra: str) -> list[str]:
    return [sys.executable, "-m", "remem", "worker", *extra]


def systemd(home: str, user_home: Path) -> ServiceFile:
    path = user_home / ".config" / "systemd" / "user" / SYSTEMD_UNIT
    exec_start = " ".join(shlex.quote(part) for part in _worker_argv())
    content = f"""[Unit]
Description=remem worker: procedural memory for coding agents

[Service]
Type=simple
Environment="REMEM_HOME={home}"
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
    arguments = "".join(f"\n    <string>{escape(part)}</string>" for part in _worker_argv())
    log = escape(os.path.join(home, "logs", "launchd.log"))
    content = f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>{LAUNCHD_LABEL}</string>
  <key>ProgramArguments</key>
  <array>{arguments}
  </array>
  <key>EnvironmentVariables</key>
  <dict>
    <key>REMEM_HOME</key>
    <string>{escape(home)}</string>
  </dict>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>StandardOutPath</key>
  <string>{log}</string>
  <key>StandardErrorPath</key>
  <string>{log}</string>
</dict>
</plist>
"""
    quoted = shlex.quote(str(path))
    return ServiceFile(
        path, content, f"launchctl load -w {quoted}", f"launchctl unload -w {quoted}"
    )


def cron_line(home: str) -> str:
    command = " ".join(shlex.quote(part) for part in _worker_argv("--burst"))
    log = shlex.quote(os.path.join(home, "logs", "cron.log"))
    return f"*/10 * * * * REMEM_HOME={shlex.quote(home)} {command} >> {log} 2>&1"


def default_kind() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"
