"""A team on one PostgreSQL database (DESIGN.md §9), as real processes: two machines (two remem
homes, two clones of one repository at different paths), the real hook and `remem worker
--burst`, and a real server the tests start themselves."""

from __future__ import annotations

import json
import re
import shutil
import signal
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from remem import hook
from remem.db.engine import make_engine
from tests.conftest import EVERY, REMEM, Home, load_fixture, unmasked, wait_for
from tests.pg_server import PostgresServer
from workers.team import PROJECT_LOCK_SPACE

SHARE = "github.com/acme/*"


def clone(path: Path, origin: str | None, branch: str = "main") -> str:
    """A work tree as git lays it out, with `origin` in its config when given."""
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n")
    config = "[core]\n\trepositoryformatversion = 0\n"
    if origin is not None:
        config += (
            f'[remote "origin"]\n\turl = {origin}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
        )
    (path / ".git" / "config").write_text(config)
    return str(path.resolve())


class Machine(Home):
    def __init__(self, path: Path, name: str, team_url: str, promote: bool) -> None:
        super().__init__(path)
        self.name = name
        self.env.update(
            REMEM_TEAM_DATABASE_URL=team_url,
            REMEM_TEAM_MACHINE=name,
            REMEM_TEAM_SHARE=SHARE,
            REMEM_TEAM_PROMOTE="true" if promote else "false",
        )
        self.runs = 0

    def run(self, cwd: str, command: str, session: str, *, passed: bool = True) -> None:
        """One Bash run through the real Claude Code hook."""
        self.runs += 1
        payload = load_fixture("claude-code/post_tool_use_bash_success.json")
        payload.update(cwd=cwd, session_id=session, tool_use_id=f"toolu_{self.runs}")
        payload["tool_input"]["command"] = command
        if not passed:
            payload = load_fixture("claude-code/post_tool_use_failure_bash_exit_code.json")
            payload.update(cwd=cwd, session_id=session, tool_use_id=f"toolu_{self.runs}")
            payload["tool_input"]["command"] = command
        result = self.hook(payload)
        assert (result.returncode, result.stderr) == (0, b""), result

    def session_start(self, cwd: str, session: str) -> str:
        payload = load_fixture("claude-code/session_start.json")
        payload.update(cwd=cwd, session_id=session)
        result = self.hook(payload)
        assert result.returncode == 0, result
        return result.stdout.decode()

    def burst(self, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.remem("worker", "--burst", "--json", check=check)

    def pulled(self, cwd: str) -> list[dict[str, Any]]:
        """The team's procedures pulled here for the project at cwd (`remem procedures team`)."""
        return self.json("procedures", "team", "--project", cwd)["procedures"]

    def on_team(self) -> dict[str, list[dict[str, Any]]]:
        """The events and procedures the team database holds, every machine's, as
        `remem forget --dry-run` lists what it would forget there."""
        team = self.json("forget", "--match", EVERY, "--dry-run")["team"]
        assert team["error"] is None, team
        plan = team["plan"] or {"events": [], "procedures": []}
        return {"events": unmasked(plan["events"]), "procedures": unmasked(plan["procedures"])}


@pytest.fixture
def machines(
    template_home: Path, tmp_path: Path, pg_url: str
) -> Iterator[tuple[Machine, Machine, Engine]]:
    made = []
    for name, promote in (("alice", True), ("bob", False)):
        path = tmp_path / name / "home"
        shutil.copytree(template_home, path)
        (tmp_path / name / "user-home").mkdir()
        made.append(Machine(path, name, pg_url, promote))
    made[0].remem("db", "upgrade", "--team")
    team = make_engine(pg_url)
    yield made[0], made[1], team
    team.dispose()


def rows(engine: Engine, sql: str, **params: Any) -> list[tuple[Any, ...]]:
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(text(sql), params)]


def test_one_run_on_each_machine_is_a_team_procedure_in_the_other_machines_digest(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, bob, team = machines
    shop_a = clone(tmp_path / "alice" / "src" / "shop", "git@github.com:acme/shop.git")
    shop_b = clone(tmp_path / "bob" / "work" / "shop-clone", "https://github.com/acme/shop")
    alice.run(shop_a, "make test", "alice-1")
    bob.run(shop_b, "make test", "bob-1")
    for machine in (alice, bob, alice, bob):  # ship; ship; promote on the team; pull
        assert machine.burst().returncode == 0

    # What left each machine names the project by its key, never by a local path: only the
    # team database's own rows show it.
    shipped = rows(
        team,
        "SELECT p.root, p.project_key, s.machine, e.cwd, e.transcript_path, e.payload "
        "FROM captured_events e JOIN sessions s ON s.id = e.session_id "
        "JOIN projects p ON p.id = e.project_id ORDER BY s.machine",
    )
    key = "github.com/acme/shop"
    assert shipped == [(key, key, machine, key, None, "{}") for machine in ("alice", "bob")]
    on_team = alice.on_team()["procedures"]
    assert [(p["command"], p["status"]) for p in on_team] == [("make test", "active")]

    for machine, cwd in ((alice, shop_a), (bob, shop_b)):
        assert machine.procedures() == []  # one run here alone
        shown = ("command", "scope", "branch", "status", "verified_runs", "distinct_sessions")
        pulled = [
            [p[name] for name in (*shown, "machines", "project")] for p in machine.pulled(cwd)
        ]
        assert pulled == [["make test", "branch", "main", "active", 2, 2, 2, cwd]]
        assert machine.status()["team"]["projects"] == 1
    digest = bob.session_start(shop_b, "bob-2")
    assert "`make test`" in digest
    assert "verified by the team: 2 runs on 2 machines" in digest


def test_the_local_procedure_wins_over_the_teams(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, bob, _team = machines
    shop_a = clone(tmp_path / "alice" / "shop", "git@github.com:acme/shop.git")
    shop_b = clone(tmp_path / "bob" / "shop", "git@github.com:acme/shop.git")
    alice.run(shop_a, "make test", "alice-1")
    for session in ("bob-1", "bob-2"):
        bob.run(shop_b, "make test", session)
    for machine in (alice, bob, alice, bob):
        machine.burst()
    assert [(p["verified_runs"], p["machines"]) for p in bob.pulled(shop_b)] == [(3, 2)]
    digest = bob.session_start(shop_b, "bob-3")
    assert "`make test`" in digest
    assert "verified by the team" not in digest  # bob's own proof is shown
    assert "2 runs in 2 sessions" in digest


def test_an_unshared_project_never_reaches_the_team_database(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, _bob, team = machines
    shared = clone(tmp_path / "shop", "git@github.com:acme/shop.git")
    other = clone(tmp_path / "other", "git@github.com:someone-else/tool.git")
    local_only = clone(tmp_path / "scratch", None)
    on_disk = clone(tmp_path / "mirror", str(tmp_path / "bare.git"))
    plain = tmp_path / "notes"
    plain.mkdir()
    for cwd in (shared, other, local_only, on_disk, str(plain.resolve())):
        for session in ("s1", "s2"):
            alice.run(cwd, "make test", session)
    alice.burst()
    alice.burst()

    # Which projects and directories reached the team only its own rows show.
    reached = "SELECT DISTINCT p.root, e.cwd FROM projects p LEFT JOIN captured_events e ON "
    assert rows(team, reached + "e.project_id = p.id") == [("github.com/acme/shop",) * 2]
    on_team = alice.on_team()
    assert (len(on_team["events"]), len(on_team["procedures"])) == (2, 1)
    # Every project was promoted locally, shared or not.
    assert len(alice.procedures()) == 5
    assert alice.status()["team"]["projects"] == 1
    # A project's key is kept in no output: the row says which ones have one.
    keys = dict(alice.query("SELECT root, project_key FROM projects"))
    assert keys[other] == "github.com/someone-else/tool"
    assert keys[local_only] is None and keys[on_disk] is None


def test_a_crash_between_shipping_and_the_cursor_ships_again_without_doubling(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, _bob, _team = machines
    shop = clone(tmp_path / "shop", "git@github.com:acme/shop.git")
    for n in range(5):
        alice.run(shop, f"make test-{n % 2}", f"s{n}")
    crashed = subprocess.run(
        [REMEM, "worker", "--burst"],
        env={**alice.env, "REMEM_TEST_CRASH_AT": "shipped"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert crashed.returncode == -9, crashed
    assert len(alice.on_team()["events"]) == 5
    assert alice.status()["team"]["waiting"] == 5  # the cursor never moved

    summary = json.loads(alice.burst().stdout)
    assert summary["shipped"] == 0  # all five were there already
    assert len(alice.on_team()["events"]) == 5
    assert alice.status()["team"]["waiting"] == 0
    assert summary["team_tasks_done"] == 5  # one a session, each once
    assert json.loads(alice.burst().stdout)["team_tasks_done"] == 0  # none left


def test_the_server_down_and_back_delays_shipping_and_loses_nothing(
    template_home: Path, tmp_path: Path
) -> None:
    server = PostgresServer()
    server.start()
    try:
        url = server.url(server.create_database())
        path = tmp_path / "home"
        shutil.copytree(template_home, path)
        (tmp_path / "user-home").mkdir()
        alice = Machine(path, "alice", url, promote=True)
        alice.remem("db", "upgrade", "--team")
        shop = clone(tmp_path / "shop", "git@github.com:acme/shop.git")
        alice.run(shop, "make test", "s1")
        alice.burst()

        server.pause()
        for session in ("s2", "s3"):
            alice.run(shop, "make test", session)  # the hook never waits for the team
        down = json.loads(alice.burst().stdout)
        assert down["team_errors"] >= 1 and down["shipped"] == 0
        assert len(alice.procedures()) == 1  # local work went on
        status = json.loads(alice.remem("status", "--json").stdout)
        assert status["team"]["waiting"] == 2
        assert status["team"]["error"]

        server.resume()
        up = json.loads(alice.burst().stdout)
        assert up["shipped"] == 2 and up["team_errors"] == 0
        assert len({event["id"] for event in alice.on_team()["events"]}) == 3
        assert [p["verified_runs"] for p in alice.pulled(shop)] == [3]
        status = json.loads(alice.remem("status", "--json").stdout)
        assert status["team"]["waiting"] == 0 and status["team"]["error"] is None
    finally:
        server.stop()


def _store_sessions(machine: Machine, cwd: str, sessions: int, now: float) -> None:
    """Many one-command sessions through the real capture code, in process (a hook process
    each would take minutes)."""
    for n in range(sessions):
        payload = load_fixture("claude-code/post_tool_use_bash_success.json")
        payload.update(cwd=cwd, session_id=f"{machine.name}-{n}", tool_use_id=f"t{n}")
        payload["tool_input"]["command"] = f"make check-{n % 7}"
        kind, body = hook.capture(json.dumps(payload).encode(), None, now + n)
        assert hook.save(str(machine.path), kind, body) == "stored"


def test_four_team_workers_on_two_machines_complete_each_task_exactly_once(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, bob, _team = machines
    now = time.time() - 3600
    shipped, clones = 0, {}
    for machine in (alice, bob):
        cwd = clones[machine.name] = clone(
            tmp_path / machine.name / "shop", "git@github.com:acme/shop.git"
        )
        _store_sessions(machine, cwd, 1000, now)
        machine.env["REMEM_TEAM_PROMOTE"] = "false"
        summary = json.loads(machine.burst().stdout)  # local promotion, and shipping
        assert summary["team_tasks_done"] == 0
        shipped += summary["shipped"]
    assert shipped == 2000  # one event a session: a team task each
    for machine in (alice, bob):
        machine.env["REMEM_TEAM_PROMOTE"] = "true"
    workers = [
        subprocess.Popen(
            [REMEM, "worker", "--burst", "--json"],
            env=machine.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for machine in (alice, bob, alice, bob)
    ]
    done = 0
    for worker in workers:
        out, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err
        done += json.loads(out)["team_tasks_done"]
    assert done == 2000
    assert json.loads(alice.burst().stdout)["team_tasks_done"] == 0  # none left
    completions: Counter[str] = Counter()
    for machine in (alice, bob):
        log = (machine.path / "logs" / "worker.log").read_text()
        completions.update(re.findall(r"completed team task (\d+)", log))
    assert len(completions) == 2000 and set(completions.values()) == {1}
    # Seven workflows (n % 7 of 1,000 sessions on each machine), every run counted once.
    runs = sorted(p["verified_runs"] for p in alice.pulled(clones["alice"]))  # the last pull
    assert runs == [284] + [286] * 6


def test_two_daemons_ship_promote_and_pull_on_their_own(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, bob, _team = machines
    shop_a = clone(tmp_path / "alice" / "shop", "git@github.com:acme/shop.git")
    shop_b = clone(tmp_path / "bob" / "shop", "git@github.com:acme/shop.git")
    daemons = []
    for machine in (alice, bob):
        machine.env.update(REMEM_TEAM_SYNC_INTERVAL="250ms", REMEM_WORKER_POLL_INTERVAL="250ms")
        daemons.append(
            subprocess.Popen(
                [REMEM, "worker"],
                env=machine.env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        )
    try:
        alice.run(shop_a, "npm test", "alice-1")
        bob.run(shop_b, "npm test", "bob-1")
        wait_for(
            lambda: (
                [p["machines"] for p in bob.pulled(shop_b)] == [2]
                and [p["machines"] for p in alice.pulled(shop_a)] == [2]
            ),
            timeout=60,
        )
        assert "verified by the team: 2 runs on 2 machines" in bob.session_start(shop_b, "b2")
    finally:
        for daemon in daemons:
            daemon.send_signal(signal.SIGTERM)
        for daemon in daemons:
            _out, err = daemon.communicate(timeout=60)
            assert daemon.returncode == 0, err
    assert json.loads(alice.burst().stdout)["team_tasks_done"] == 0  # the daemons did both


def test_a_team_database_at_another_schema_is_refused_and_status_says_what_to_do(
    template_home: Path, tmp_path: Path, pg_url: str
) -> None:
    path = tmp_path / "home"
    shutil.copytree(template_home, path)
    (tmp_path / "user-home").mkdir()
    alice = Machine(path, "alice", pg_url, promote=True)  # never upgraded: no schema at all
    shop = clone(tmp_path / "shop", "git@github.com:acme/shop.git")
    alice.run(shop, "make test", "s1")
    summary = json.loads(alice.burst().stdout)
    assert summary["team_errors"] >= 1 and summary["shipped"] == 0
    error = json.loads(alice.remem("status", "--json").stdout)["team"]["error"]
    assert "run `remem db upgrade --team`" in error
    alice.remem("db", "upgrade", "--team")
    summary = json.loads(alice.burst().stdout)
    assert summary["shipped"] == 1 and summary["team_errors"] == 0


def test_a_clone_deleted_before_shipping_still_ships_under_its_key(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, _bob, team = machines
    shop = clone(tmp_path / "shop", "git@github.com:acme/shop.git")
    alice.run(shop, "make test", "s1")
    alice.burst()
    alice.run(shop, "make test", "s2")
    shutil.rmtree(shop)
    summary = json.loads(alice.burst().stdout)
    assert summary["shipped"] == 1
    assert len(alice.on_team()["events"]) == 2
    assert rows(team, "SELECT root FROM projects") == [("github.com/acme/shop",)]
    assert (alice.status()["team"]["projects"], alice.status()["team"]["waiting"]) == (1, 0)


def test_the_server_stopped_under_a_shipping_daemon_and_restarted_loses_and_doubles_nothing(
    template_home: Path, tmp_path: Path
) -> None:
    server = PostgresServer()
    server.start()
    daemon = None
    try:
        url = server.url(server.create_database())
        path = tmp_path / "home"
        shutil.copytree(template_home, path)
        (tmp_path / "user-home").mkdir()
        alice = Machine(path, "alice", url, promote=True)
        alice.env.update(REMEM_TEAM_SYNC_INTERVAL="100ms", REMEM_WORKER_POLL_INTERVAL="100ms")
        alice.remem("db", "upgrade", "--team")
        shop = clone(tmp_path / "shop", "git@github.com:acme/shop.git")
        daemon = subprocess.Popen(
            [REMEM, "worker"], env=alice.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        sessions = iter(range(1000))

        def some_runs(count: int) -> None:
            for _ in range(count):
                n = next(sessions)
                alice.run(shop, f"make test-{n % 3}", f"s{n}")

        some_runs(10)
        wait_for(lambda: alice.on_team()["events"], 60)
        some_runs(10)  # shipping goes on while the server stops
        server.pause()
        some_runs(10)  # the hooks never wait for the team
        wait_for(
            lambda: (
                "OperationalError"
                in str(json.loads(alice.remem("status", "--json").stdout)["team"]["error"])
            ),
            60,
        )
        server.resume()
        assert sum(hit["runs"] for hit in alice.commands().values()) == 30
        # Every run shipped once and counted once: all 30 verify the team's procedures.
        wait_for(lambda: sum(p["verified_runs"] for p in alice.pulled(shop)) == 30, 120)
        assert len({event["id"] for event in alice.on_team()["events"]}) == 30
    finally:
        if daemon is not None:
            daemon.send_signal(signal.SIGTERM)
            _out, err = daemon.communicate(timeout=60)
            assert daemon.returncode == 0, err
        server.stop()


def test_a_team_worker_leaves_a_project_another_worker_holds(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, _bob, team = machines
    alice.env["REMEM_TEAM_PROMOTE"] = "false"
    clones = {}
    for name in ("shop", "api"):
        cwd = clones[name] = clone(tmp_path / name, f"git@github.com:acme/{name}.git")
        for session in ("s1", "s2"):
            alice.run(cwd, "make test", f"{name}-{session}")
    alice.burst()  # shipped, not promoted
    (shop,) = rows(team, "SELECT id FROM projects WHERE root = 'github.com/acme/shop'")[0]
    alice.env["REMEM_TEAM_PROMOTE"] = "true"
    with team.connect() as other_worker:
        other_worker.execute(
            text("SELECT pg_advisory_lock(:space, :project)"),
            {"space": PROJECT_LOCK_SPACE, "project": shop},
        )
        other_worker.commit()
        assert json.loads(alice.burst().stdout)["team_tasks_done"] == 2
        promoted = [p["command"] for p in alice.on_team()["procedures"]]
        assert promoted == ["make test"]  # the api's: the shop's tasks wait for its holder
        assert [len(alice.pulled(clones[name])) for name in ("api", "shop")] == [1, 0]
        other_worker.execute(
            text("SELECT pg_advisory_unlock(:space, :project)"),
            {"space": PROJECT_LOCK_SPACE, "project": shop},
        )
        other_worker.commit()
    assert json.loads(alice.burst().stdout)["team_tasks_done"] == 2
    assert [p["status"] for p in alice.on_team()["procedures"]] == ["active"] * 2


def test_forgetting_a_shared_projects_events_keeps_its_link(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, _bob, _team = machines
    shop = clone(tmp_path / "shop", "git@github.com:acme/shop.git")
    for session in ("s1", "s2"):
        alice.run(shop, "make test", session)
    alice.run(shop, "npm run lint", "s2")
    alice.burst()
    alice.remem("forget", "--match", "make test|npm run lint", "--project", shop, "--yes")
    assert alice.commands() == {}
    assert alice.procedures() == []
    # The project stays, linked: its next events ship as before.
    assert alice.status()["team"]["projects"] == 1
    assert alice.pulled(shop) == []
    assert alice.on_team()["events"] == []
    alice.run(shop, "make test", "s3")
    assert json.loads(alice.burst().stdout)["shipped"] == 1


def test_a_project_no_longer_shared_stops_shipping_and_its_pulled_memory_goes(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, _bob, _team = machines
    shop = clone(tmp_path / "shop", "git@github.com:acme/shop.git")
    for session in ("s1", "s2"):
        alice.run(shop, "make test", session)
    alice.burst()
    assert len(alice.pulled(shop)) == 1
    alice.env["REMEM_TEAM_SHARE"] = "github.com/someone-else/*"
    alice.run(shop, "make test", "s3")
    alice.burst()
    assert alice.status()["team"]["projects"] == 0
    assert alice.pulled(shop) == []
    assert len(alice.on_team()["events"]) == 2  # not the third
    assert "verified by the team" not in alice.session_start(shop, "s4")


# A custom token in no key=value and after no secret-named flag: the redactor lets it through.
TOKEN = "zq8Kp2abcdefghijk"


def test_forget_takes_a_secret_off_the_team_database_and_every_machine(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, bob, _team = machines
    shop_a = clone(tmp_path / "alice" / "shop", "git@github.com:acme/shop.git")
    shop_b = clone(tmp_path / "bob" / "shop", "git@github.com:acme/shop.git")
    bob.session_start(shop_b, "b0")  # bob knows the project: he pulls its memory
    for session in ("a1", "a2"):
        alice.run(shop_a, f"./deploy.sh --mode {TOKEN}", session)
        alice.run(shop_a, "make test", session)
    for machine in (alice, bob):  # alice ships and promotes on the team; bob pulls
        machine.burst()
    on_team = alice.on_team()
    assert len([e for e in on_team["events"] if TOKEN in e["command"]]) == 2
    assert len([p for p in on_team["procedures"] if TOKEN in p["command"]]) == 1
    for machine, cwd in ((alice, shop_a), (bob, shop_b)):
        assert len(machine.pulled(cwd)) == 2
    assert TOKEN in bob.session_start(shop_b, "b1")

    out = alice.remem("forget", "--match", "zq8Kp2", "--yes").stdout
    assert "On the team database: forgot 2 event(s)" in out
    assert TOKEN not in out
    assert list(alice.commands()) == ["make test"]
    on_team = alice.on_team()
    assert [e["command"] for e in on_team["events"]] == ["make test"] * 2  # make test stays
    assert not [p for p in on_team["procedures"] if TOKEN in p["command"]]
    # Pulled again at once: nothing of the token, whatever the team re-derives later.
    assert not [p for p in alice.pulled(shop_a) if TOKEN in p["command"]]
    assert alice.status()["team"]["projects"] == 1

    bob.burst()
    assert not [p for p in bob.pulled(shop_b) if TOKEN in p["command"]]
    assert TOKEN not in bob.session_start(shop_b, "b2")
    alice.burst()  # re-derives the team's procedures from what remains
    bob.burst()
    assert [p["command"] for p in bob.pulled(shop_b)] == ["make test"]


def test_forgetting_one_shipped_event_forgets_its_team_copy_alone(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, bob, _team = machines
    shop_a = clone(tmp_path / "alice" / "shop", "git@github.com:acme/shop.git")
    shop_b = clone(tmp_path / "bob" / "shop", "git@github.com:acme/shop.git")
    for command in ("make build", "make test", "make lint"):
        alice.run(shop_a, command, "a1")
    bob.run(shop_b, "make test", "b1")
    alice.burst()
    bob.burst()
    (gone,) = [hit["id"] for command, hit in alice.commands().items() if command == "make test"]
    summary = json.loads(alice.remem("forget", "--event", str(gone), "--yes", "--json").stdout)
    assert summary["team"]["forgotten"] is True
    assert summary["team"]["plan"]["events_deleted"] == 1
    assert sorted(e["command"] for e in alice.on_team()["events"]) == [
        "make build",
        "make lint",
        "make test",  # bob's copy
    ]
    assert list(bob.commands()) == ["make test"]


def test_forget_with_the_team_database_down_forgets_here_and_says_the_team_keeps_it(
    machines: tuple[Machine, Machine, Engine], tmp_path: Path
) -> None:
    alice, _bob, _team = machines
    shop = clone(tmp_path / "shop", "git@github.com:acme/shop.git")
    alice.run(shop, f"./deploy.sh --mode {TOKEN}", "s1")
    alice.burst()
    assert len(alice.on_team()["events"]) == 1
    reachable = alice.env["REMEM_TEAM_DATABASE_URL"]
    with socket.socket() as closed:  # a port that was free a moment ago: nothing listens
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    alice.env["REMEM_TEAM_DATABASE_URL"] = f"postgresql+psycopg://remem@127.0.0.1:{port}/remem"
    result = alice.remem("forget", "--match", "zq8Kp2", "--yes", check=False)
    assert result.returncode == 1, result
    assert "The team's copies were NOT forgotten" in result.stdout
    assert "run the same command again" in result.stdout
    assert alice.commands() == {}
    down, alice.env["REMEM_TEAM_DATABASE_URL"] = alice.env["REMEM_TEAM_DATABASE_URL"], reachable
    assert len(alice.on_team()["events"]) == 1  # the team's copy stays
    alice.env["REMEM_TEAM_DATABASE_URL"] = down
    summary = json.loads(
        alice.remem("forget", "--match", "zq8Kp2", "--yes", "--json", check=False).stdout
    )
    assert summary["team"]["forgotten"] is False and summary["team"]["error"]
