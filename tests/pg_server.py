"""A throwaway PostgreSQL cluster for the tests: initdb into a temporary directory, a server on
a free port whose socket lives in that directory, one database per test, stopped at the end.

PostgreSQL refuses to run as root: under root (CI runs as root) the cluster belongs to an
unprivileged user (REMEM_PG_USER, else `postgres`, which Debian's package creates, else
`nobody`) and the server commands run through `runuser`. The tests connect over the socket only
(no TCP listener), as the cluster's superuser `remem`, with trust authentication.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

SUPERUSER = "remem"
START_TIMEOUT_S = 60

# Run beside the tests with a pipe from them on stdin: when the test process ends in any way
# (even SIGKILL) the pipe closes, and the cluster is stopped and removed.
_WATCHDOG = """
import shutil, subprocess, sys
sys.stdin.buffer.read()
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
shutil.rmtree(sys.argv[1], ignore_errors=True)
"""


class PostgresMissing(RuntimeError):
    pass


def _version_key(path: str) -> tuple[int, ...]:
    version = os.path.basename(os.path.dirname(path))
    return tuple(int(part) for part in re.findall(r"\d+", version)) or (0,)


def find_bin_dir() -> str:
    """Where initdb and pg_ctl are: on PATH, else Debian's newest /usr/lib/postgresql/*/bin."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return os.path.dirname(os.path.realpath(on_path))
    installed = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version_key)
    if installed:
        return os.path.dirname(installed[-1])
    raise PostgresMissing(
        "PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): "
        "install Debian's `postgresql` package (.ci/run does), or set REMEM_NO_POSTGRES=1 to "
        "skip the PostgreSQL tests"
    )


def _server_user() -> str | None:
    """The unprivileged user the cluster runs as; None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in (os.environ.get("REMEM_PG_USER"), "postgres", "nobody"):
        if not name:
            continue
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise PostgresMissing("running as root and no unprivileged user (postgres, nobody) exists")


def _reachable_temp_dir() -> str:
    """A parent every user may traverse: the server user must reach its data directory."""
    base = tempfile.gettempdir()
    probe = Path(base)
    for directory in (probe, *probe.parents):
        if not os.stat(directory).st_mode & 0o001:
            return "/tmp"
    return base


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PostgresServer:
    def __init__(self) -> None:
        self.bin_dir = find_bin_dir()
        self.user = _server_user()
        self.root = tempfile.mkdtemp(prefix="remem-pg-", dir=_reachable_temp_dir())
        self.data_dir = os.path.join(self.root, "data")
        self.socket_dir = os.path.join(self.root, "socket")
        self.log_file = os.path.join(self.root, "server.log")
        self.port = free_port()
        self.running = False
        self._databases = 0
        self._naming = threading.Lock()  # databases are also made from a DatabaseCopies thread
        self._watchdog: subprocess.Popen[bytes] | None = None

    def _argv(self, *command: str) -> list[str]:
        prefix = ["runuser", "-u", self.user, "--"] if self.user else []
        return [*prefix, os.path.join(self.bin_dir, command[0]), *command[1:]]

    def _run(self, *command: str, timeout: float = 120) -> None:
        argv = self._argv(*command)
        result = subprocess.run(
            argv, cwd=self.root, capture_output=True, text=True, timeout=timeout
        )
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {result.returncode}: {result.stderr}")

    def start(self) -> None:
        os.mkdir(self.socket_dir, 0o700)
        if self.user:
            entry = pwd.getpwnam(self.user)
            for path in (self.root, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        initdb = ["-D", self.data_dir, "-U", SUPERUSER, "--auth=trust", "--no-locale", "-E"]
        self._run("initdb", *initdb, "UTF8", "--no-sync")
        options = self._options()
        stop = self._argv("pg_ctl", "stop", "-D", self.data_dir, "-m", "immediate", "-w")
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, self.root, *stop],
            stdin=subprocess.PIPE,
            cwd=self.root,
            start_new_session=True,
        )
        start = ["-D", self.data_dir, "-l", self.log_file, "-o", options, "-w", "-t"]
        self._run("pg_ctl", "start", *start, str(START_TIMEOUT_S))
        self.running = True
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                psycopg.connect(self.dsn("postgres"), connect_timeout=5).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        try:
            if self.running:
                self._run("pg_ctl", "stop", "-D", self.data_dir, "-m", "fast", "-w")
                self.running = False
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            if self._watchdog is not None:
                self._watchdog.communicate(timeout=60)  # closes its pipe: it has nothing to do

    def pause(self) -> None:
        """Stop the server, keeping its data: clients now find nothing listening."""
        self._run("pg_ctl", "stop", "-D", self.data_dir, "-m", "fast", "-w")
        self.running = False

    def resume(self) -> None:
        """Start a paused server again, on the same port, and wait until it answers."""
        start = ["-D", self.data_dir, "-l", self.log_file, "-o", self._options(), "-w", "-t"]
        self._run("pg_ctl", "start", *start, str(START_TIMEOUT_S))
        self.running = True
        self._wait_until_ready()

    def _options(self) -> str:
        # A disposable cluster: durability is traded for speed.
        return (
            f"-c listen_addresses='' -c unix_socket_directories='{self.socket_dir}' "
            f"-p {self.port} -c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=60"
        )

    def dsn(self, database: str) -> str:
        return f"host={self.socket_dir} port={self.port} user={SUPERUSER} dbname={database}"

    def url(self, database: str) -> str:
        """An SQLAlchemy URL of one of the cluster's databases (psycopg 3, over the socket)."""
        return (
            f"postgresql+psycopg://{SUPERUSER}@/{database}?host={self.socket_dir}&port={self.port}"
        )

    def _admin(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as connection:
            connection.execute(statement)

    def create_database(self, template: str | None = None) -> str:
        """A new database (a copy of template when given); its name."""
        with self._naming:
            self._databases += 1
            name = f"test_{self._databases}"
        self._admin(f"CREATE DATABASE {name} TEMPLATE {template or 'template0'}")
        return name

    def drop_database(self, name: str) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


class DatabaseCopies:
    """Fresh copies of a template database, one made ahead in a thread: CREATE DATABASE takes
    a quarter of a second, which a test no longer waits for, and a copy given back is dropped
    in that thread too. Every test still gets a copy of its own, never used before."""

    def __init__(self, server: PostgresServer, template: str) -> None:
        self.server, self.template = server, template
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pg-copies")
        self._coming: deque[Future[str]] = deque([self._make()])

    def _make(self) -> Future[str]:
        return self._thread.submit(self.server.create_database, self.template)

    def take(self) -> str:
        """A new copy of the template; its name."""
        self._coming.append(self._make())
        return self._coming.popleft().result()

    def give_back(self, name: str) -> None:
        """Drop a copy taken (its connections are closed by force)."""
        self._thread.submit(self.server.drop_database, name)

    def close(self) -> None:
        """Drop the copies made ahead, once every drop asked for is done."""
        for coming in self._coming:
            if coming.exception() is None:
                self.give_back(coming.result())
        self._thread.shutdown(wait=True)
