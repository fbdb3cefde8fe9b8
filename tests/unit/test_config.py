from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from remem.config import SPEC, load_settings, parse_duration, render_example_config
from remem.errors import ConfigError, RememError


def write_config(home: Path, text: str) -> Path:
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def config_error(environ: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_settings(environ)
    return caught.value


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("250ms", 0.25), ("2s", 2.0), ("5m", 300.0), ("1h", 3600.0), ("14d", 1_209_600.0)],
)
def test_duration_is_parsed_to_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["2", 2, 2.0, None, "", "soon", "2 weeks", "-1s", "s"])
def test_duration_without_a_unit_or_unparseable_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(value)


def test_defaults_without_a_config_file(tmp_path: Path) -> None:
    settings = load_settings({"REMEM_HOME": str(tmp_path)})

    assert settings.home == str(tmp_path)
    assert settings.config_file == str(tmp_path / "config.toml")
    assert settings.lock_timeout_s == 1.0
    assert settings.min_verified_runs == 2
    assert settings.max_age_s == 14 * 86400
    assert settings.min_distinct_sessions == 1
    assert settings.lease_s == 300.0
    assert settings.max_attempts == 5
    assert settings.poll_interval_s == 2.0
    assert settings.log_level == "INFO"
    assert "git status" in settings.ignore_commands


def test_default_database_is_a_sqlite_file_in_the_home(tmp_path: Path) -> None:
    settings = load_settings({"REMEM_HOME": str(tmp_path)})

    assert settings.database_url == f"sqlite:///{tmp_path}/remem.db"
    assert settings.sqlite_file == f"{tmp_path}/remem.db"


def test_config_file_overrides_a_default(tmp_path: Path) -> None:
    write_config(tmp_path, '[worker]\npoll_interval = "5s"\nmax_attempts = 7\n')

    settings = load_settings({"REMEM_HOME": str(tmp_path)})

    assert (settings.poll_interval_s, settings.max_attempts) == (5.0, 7)
    assert settings.lease_s == 300.0


def test_environment_overrides_the_config_file(tmp_path: Path) -> None:
    write_config(tmp_path, '[worker]\npoll_interval = "5s"\n')

    settings = load_settings({"REMEM_HOME": str(tmp_path), "REMEM_WORKER_POLL_INTERVAL": "250ms"})

    assert settings.poll_interval_s == pytest.approx(0.25)


def test_database_url_from_the_environment(tmp_path: Path) -> None:
    write_config(tmp_path, '[database]\nurl = "sqlite:////srv/remem/file.db"\n')
    url = "postgresql+psycopg://remem@db.internal/remem"

    settings = load_settings({"REMEM_HOME": str(tmp_path), "REMEM_DATABASE_URL": url})

    assert settings.database_url == url
    assert settings.sqlite_file is None


def test_database_url_from_the_config_file(tmp_path: Path) -> None:
    write_config(tmp_path, '[database]\nurl = "sqlite:////srv/remem/file.db"\n')

    settings = load_settings({"REMEM_HOME": str(tmp_path)})

    assert settings.database_url == "sqlite:////srv/remem/file.db"


def test_environment_values_are_parsed_like_the_file(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "REMEM_HOME": str(tmp_path),
            "REMEM_WORKER_MAX_ATTEMPTS": "9",
            "REMEM_WORKER_LOG_LEVEL": "debug",
            "REMEM_PROMOTION_IGNORE_COMMANDS": "ls, git status,,make",
        }
    )

    assert settings.max_attempts == 9
    assert settings.log_level == "DEBUG"
    assert settings.ignore_commands == ("ls", "git status", "make")


def test_bad_value_in_the_file_names_key_and_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[worker]\npoll_interval = 5\n")

    error = config_error({"REMEM_HOME": str(tmp_path)})

    assert isinstance(error, RememError)
    assert "worker.poll_interval" in str(error)
    assert str(path) in str(error)
    assert (error.key, error.path) == ("worker.poll_interval", str(path))


def test_bad_value_in_the_environment_names_the_variable(tmp_path: Path) -> None:
    write_config(tmp_path, '[worker]\npoll_interval = "5s"\n')

    error = config_error({"REMEM_HOME": str(tmp_path), "REMEM_WORKER_POLL_INTERVAL": "soon"})

    assert "worker.poll_interval" in str(error)
    assert "REMEM_WORKER_POLL_INTERVAL" in str(error)
    assert str(tmp_path) not in str(error)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("[worker]\nmax_attempts = 0\n", "worker.max_attempts"),
        ("[worker]\nmax_attempts = true\n", "worker.max_attempts"),
        ('[worker]\nlog_level = "loud"\n', "worker.log_level"),
        ("[promotion]\nignore_commands = [1, 2]\n", "promotion.ignore_commands"),
        ("[database]\nurl = 5\n", "database.url"),
    ],
)
def test_bad_values_of_each_kind_are_refused(tmp_path: Path, text: str, key: str) -> None:
    write_config(tmp_path, text)

    assert key in str(config_error({"REMEM_HOME": str(tmp_path)}))


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[worker]\nspeed = 3\n", "worker.speed"),
        ('[workers]\npoll_interval = "5s"\n', "workers.poll_interval"),
        ('poll_interval = "5s"\n', "poll_interval"),
    ],
)
def test_unknown_setting_is_named(tmp_path: Path, text: str, named: str) -> None:
    path = write_config(tmp_path, text)

    error = config_error({"REMEM_HOME": str(tmp_path)})

    assert f"`{named}`" in str(error)
    assert str(path) in str(error)


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[worker\npoll_interval = 5s\n")

    error = config_error({"REMEM_HOME": str(tmp_path)})

    assert str(path) in str(error)
    assert "TOML" in str(error)


def test_remem_config_points_at_another_file(tmp_path: Path) -> None:
    write_config(tmp_path, '[worker]\npoll_interval = "5s"\n')
    elsewhere = tmp_path / "team" / "remem.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text('[worker]\npoll_interval = "7s"\n', encoding="utf-8")

    settings = load_settings({"REMEM_HOME": str(tmp_path), "REMEM_CONFIG": str(elsewhere)})

    assert settings.config_file == str(elsewhere)
    assert settings.poll_interval_s == 7.0


def _uncommented(template: str) -> str:
    return re.sub(r"^# (\[\w+\]|\w+ = .*)$", r"\1", template, flags=re.MULTILINE)


def test_example_config_parses_into_exactly_the_defaults() -> None:
    expected: dict[str, dict[str, object]] = {}
    for (section, key), (_attribute, _parse, default) in SPEC.items():
        expected.setdefault(section, {})[key] = default

    assert tomllib.loads(_uncommented(render_example_config())) == expected


def test_example_config_is_entirely_commented_out() -> None:
    assert tomllib.loads(render_example_config()) == {}


def test_uncommented_example_config_loads_as_the_defaults(tmp_path: Path) -> None:
    defaults = load_settings({"REMEM_HOME": str(tmp_path)})
    write_config(tmp_path, _uncommented(render_example_config()))

    loaded = load_settings({"REMEM_HOME": str(tmp_path)})

    assert dataclasses.asdict(loaded) == dataclasses.asdict(defaults)
