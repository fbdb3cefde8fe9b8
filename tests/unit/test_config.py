from __future__ import annotations

import importlib.util
import json
import os
import pickle
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from remem import config_file, hook
from remem.config import (
    SETTINGS,
    Settings,
    load_settings,
    parse_duration,
    read_settings,
    render_example_config,
)
from remem.errors import ConfigError, ConfigErrors, RememError


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
    assert "git fetch" in settings.ignore_commands


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


def test_every_problem_is_named_at_once_in_the_files_order(tmp_path: Path) -> None:
    path = write_config(
        tmp_path, "[worker]\nmax_attempts = 0\nspeed = 3\n[context]\nmax_chars = 20000\n"
    )

    error = config_error({"REMEM_HOME": str(tmp_path), "REMEM_WORKER_LOG_LEVEL": "loud"})

    assert isinstance(error, ConfigErrors)
    assert str(error) == (
        f"4 settings cannot be used: {path}, line 2: `worker.max_attempts` must be at least 1; "
        f"{path}, line 3: `worker.speed` is not a remem setting; "
        f"{path}, line 5: `context.max_chars` must be at most 9,000 (agents cut longer context); "
        "environment variable REMEM_WORKER_LOG_LEVEL: `worker.log_level` must be one of debug, "
        "info, warning, error"
    )


def test_read_settings_keeps_what_it_can_and_defaults_the_rest(tmp_path: Path) -> None:
    write_config(tmp_path, '[worker]\nmax_attempts = 0\npoll_interval = "7s"\n')

    settings, problems = read_settings({"REMEM_HOME": str(tmp_path)})

    assert (settings.max_attempts, settings.poll_interval_s) == (Settings.max_attempts, 7.0)
    assert [each.brief for each in problems] == [
        "config.toml line 2: `worker.max_attempts` must be at least 1"
    ]


def test_read_settings_on_a_file_that_is_not_toml_keeps_the_environment(tmp_path: Path) -> None:
    write_config(tmp_path, "[worker\n")

    settings, problems = read_settings(
        {"REMEM_HOME": str(tmp_path), "REMEM_WORKER_MAX_ATTEMPTS": "9"}
    )

    assert settings.max_attempts == 9
    assert [each.brief for each in problems] == [
        "config.toml line 1: not valid TOML (Expected ']' at the end of a table declaration)"
    ]


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
    for setting in SETTINGS:
        expected.setdefault(setting.section, {})[setting.key] = setting.default

    assert tomllib.loads(_uncommented(render_example_config())) == expected


def test_example_config_is_entirely_commented_out() -> None:
    assert tomllib.loads(render_example_config()) == {}


def test_uncommented_example_config_loads_as_the_defaults(tmp_path: Path) -> None:
    defaults = load_settings({"REMEM_HOME": str(tmp_path)})
    write_config(tmp_path, _uncommented(render_example_config()))

    loaded = load_settings({"REMEM_HOME": str(tmp_path)})

    assert vars(loaded) == vars(defaults)


# ---- one declaration, read alike by the hook and the worker --------------------------------------


def test_each_setting_is_declared_once_with_its_documentation() -> None:
    names = [setting.name for setting in SETTINGS]
    assert len(names) == len(set(names)) == len({s.attribute for s in SETTINGS})
    assert len({setting.env_name for setting in SETTINGS}) == len(names)
    assert all(setting.doc and "\n" not in setting.doc for setting in SETTINGS)
    loaded = vars(load_settings({"REMEM_HOME": "/nonexistent/remem"}))
    assert list(loaded) == ["home", "config_file", *(s.attribute for s in SETTINGS)]


def test_the_hook_reads_its_settings_with_the_workers_code() -> None:
    assert hook.load_settings is load_settings
    assert not hasattr(hook, "HotSettings")
    assert importlib.util.find_spec("remem.hot_settings") is None


def test_settings_are_frozen_and_cross_a_process_boundary(tmp_path: Path) -> None:
    settings = load_settings({"REMEM_HOME": str(tmp_path)})
    with pytest.raises(AttributeError):
        settings.lease_s = 1.0
    assert pickle.loads(pickle.dumps(settings)) == settings


def test_a_setting_read_on_the_class_is_its_default(tmp_path: Path) -> None:
    defaults = load_settings({"REMEM_HOME": str(tmp_path)})
    for setting in SETTINGS:
        if setting.attribute not in ("database_url", "team_machine"):  # filled in from the home
            assert getattr(Settings, setting.attribute) == getattr(defaults, setting.attribute)


def _toml_string(text: str) -> str:
    """A TOML basic string, written independently of remem's own writer."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return str(value)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
_DURATION = st.builds(
    lambda number, fraction, unit: f"{number}{fraction}{unit}",
    st.integers(0, 10**6),
    st.sampled_from(["", ".5", ".25"]),
    st.sampled_from(["ms", "s", "m", "h", "d"]),
)
_WHOLE = st.integers(1, 2**40)
_WORDS = st.lists(_TEXT, max_size=4)
# A value config.toml may give each setting, as TOML holds it.
VALUES: dict[str, st.SearchStrategy[object]] = {
    "database_url": st.builds(
        lambda name: f"sqlite:////tmp/{name}.db", st.text("abc_", min_size=1)
    ),
    "lock_timeout_s": _DURATION,
    "spool_max_bytes": _WHOLE,
    "min_verified_runs": _WHOLE,
    "max_age_s": _DURATION,
    "min_distinct_sessions": _WHOLE,
    "ignore_commands": _WORDS,
    "lease_s": _DURATION,
    "max_attempts": _WHOLE,
    "poll_interval_s": _DURATION,
    "shutdown_timeout_s": _DURATION,
    "log_level": st.sampled_from(["debug", "info", "WARNING", "Error"]),
    "context_max_chars": st.integers(1, 9000),
    "context_max_lines": _WHOLE,
    "inherit_from": _WORDS,
    "team_database_url": st.sampled_from(
        ["", "postgresql+psycopg://remem@db/team", "postgres://h/t", "postgresql://u:p@h:5/t"]
    ),
    "team_machine": _TEXT.filter(str.strip),
    "team_share": _WORDS,
    "team_promote": st.booleans(),
    "team_sync_interval_s": _DURATION,
    "team_forgotten_per_forget": _WHOLE,
    "team_forgotten_per_machine": _WHOLE,
    "team_forgotten_total": _WHOLE,
    "import_entire": st.booleans(),
    "import_entire_interval_s": _DURATION,
    "ui_port": st.integers(1, 65535),
}
# Every way TOML lets a file give `section.key` a value.
SPELLINGS = {
    "section table": "[{s}]\n{k} = {v}\n",
    "dotted key": "{s}.{k} = {v}\n",
    "dotted key, spaced": "{s} . {k} = {v}\n",
    "quoted dotted key": '"{s}"."{k}" = {v}\n',
    "quoted key in a table": '[{s}]\n"{k}" = {v}\n',
    "literal quoted keys": "['{s}']\n'{k}' = {v}\n",
    "inline table": "{s} = {{ {k} = {v} }}\n",
    "table of a dotted header": '[ "{s}" ]\n{k}={v}\n',
}


def test_every_setting_has_values_to_try() -> None:
    assert set(VALUES) == {setting.attribute for setting in SETTINGS}


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    index=st.integers(0, len(SETTINGS) - 1),
    data=st.data(),
    spelling=st.sampled_from(sorted(SPELLINGS)),
    after_the_example=st.booleans(),
)
def test_hook_and_worker_read_every_spelling_of_every_setting_alike(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    index: int,
    data: st.DataObject,
    spelling: str,
    after_the_example: bool,
) -> None:
    for name in [name for name in os.environ if name.startswith("REMEM_")]:
        monkeypatch.delenv(name)
    setting = SETTINGS[index]
    value = data.draw(VALUES[setting.attribute])
    line = SPELLINGS[spelling].format(s=setting.section, k=setting.key, v=_toml(value))
    # After the file `remem init` writes, or alone: the hook's shortcut must not hide the line.
    write_config(tmp_path, (render_example_config() if after_the_example else "") + line)

    worker = load_settings({"REMEM_HOME": str(tmp_path)})
    hook_read = hook.load_settings(home=str(tmp_path))
    hook_again = hook.load_settings(home=str(tmp_path))  # from the cache the first read left

    assert vars(hook_read) == vars(worker) == vars(hook_again)
    assert getattr(worker, setting.attribute) == setting.parse(value)
    defaults = load_settings({"REMEM_HOME": str(tmp_path), "REMEM_CONFIG": os.devnull})
    for other in SETTINGS:
        if other is not setting:
            assert getattr(worker, other.attribute) == getattr(defaults, other.attribute)


def test_the_environment_overrides_the_file_for_the_hook_as_for_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path, "context.max_chars = 5000\ndatabase.url = 'sqlite:////tmp/a.db'\n")
    other = tmp_path / "other.toml"
    other.write_text("[context]\nmax_lines = 9\n")
    environ = {
        "REMEM_HOME": str(tmp_path),
        "REMEM_CONTEXT_MAX_CHARS": "6000",
        "REMEM_DATABASE_URL": "sqlite:////tmp/b.db",
    }
    for name in [name for name in os.environ if name.startswith("REMEM_")]:
        monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)

    worker, hook_read = load_settings(environ), hook.load_settings(home=str(tmp_path))
    assert vars(hook_read) == vars(worker)
    assert (worker.context_max_chars, worker.database_url) == (6000, "sqlite:////tmp/b.db")

    monkeypatch.setenv("REMEM_CONFIG", str(other))
    moved = load_settings({**environ, "REMEM_CONFIG": str(other)})
    assert vars(hook.load_settings(home=str(tmp_path))) == vars(moved)
    assert (moved.context_max_chars, moved.context_max_lines) == (6000, 9)


# ---- the file `remem init` writes is read without tomllib; anything else with it ---------------

_COMMENTS = st.lists(
    st.tuples(
        st.sampled_from(["", " ", "\t", "  \t"]),
        st.one_of(
            st.just(""), st.text(st.characters(blacklist_categories=("Cs", "Cc"))).map("#".__add__)
        ),
        st.sampled_from(["\n", "\r\n"]),
    ),
    max_size=8,
).map(lambda lines: "".join("".join(parts) for parts in lines))
_TOMLISH = st.text(
    st.sampled_from(list(' \t\n\r#="[]abc.1\x00\x01\x0b\x0c\x1f\x7fé\ufeff')), max_size=30
)


@given(_COMMENTS)
def test_blank_lines_and_comments_are_read_as_nothing_without_tomllib(text: str) -> None:
    assert config_file._nothing_but_comments(text)
    assert tomllib.loads(text) == {}


@given(_TOMLISH)
def test_the_shortcut_only_takes_what_toml_reads_as_nothing(text: str) -> None:
    if config_file._nothing_but_comments(text):
        assert tomllib.loads(text) == {}


def _loads_tomllib(home: Path) -> bool:
    """Whether a fresh process reading the home's settings imports tomllib."""
    probe = (
        "import sys; from remem.config import load_settings; "
        f"load_settings(home={str(home)!r}); print('tomllib' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMEM_")}
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    return {"True\n": True, "False\n": False}[result.stdout]


def test_init_written_config_costs_the_hook_no_tomllib(tmp_path: Path) -> None:
    write_config(tmp_path, render_example_config())
    assert not _loads_tomllib(tmp_path)


def test_a_config_that_sets_something_is_parsed_once_per_text(tmp_path: Path) -> None:
    write_config(tmp_path, render_example_config() + "context.max_chars = 5000\n")
    assert _loads_tomllib(tmp_path)
    assert not _loads_tomllib(tmp_path)  # the next hook reads what the first one parsed
    write_config(tmp_path, render_example_config() + "context.max_chars = 6000\n")
    assert _loads_tomllib(tmp_path)


# ---- the parsed file kept beside it -------------------------------------------------------------


def test_the_cache_is_keyed_by_the_whole_text_not_the_files_times(tmp_path: Path) -> None:
    path = write_config(tmp_path, "context.max_chars = 5000\n")
    assert load_settings({"REMEM_HOME": str(tmp_path)}).context_max_chars == 5000
    cache = tmp_path / ".config.toml.parsed.json"
    assert cache.stat().st_mode & 0o777 == 0o600
    stat = path.stat()
    path.write_text("context.max_chars = 6000\n", encoding="utf-8")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same time
    assert load_settings({"REMEM_HOME": str(tmp_path)}).context_max_chars == 6000


def test_the_cache_of_a_config_outside_the_home_stays_in_the_home(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    home.mkdir()
    elsewhere.mkdir()
    config = elsewhere / "remem.toml"
    config.write_text("[worker]\nmax_attempts = 7\n", encoding="utf-8")
    environ = {"REMEM_HOME": str(home), "REMEM_CONFIG": str(config)}
    assert load_settings(environ).max_attempts == 7
    assert [p.name for p in elsewhere.iterdir()] == ["remem.toml"]
    assert (home / ".config.toml.parsed.json").exists()
    missing = {"REMEM_HOME": str(tmp_path / "no-home"), "REMEM_CONFIG": str(config)}
    assert load_settings(missing).max_attempts == 7
    assert not (tmp_path / "no-home").exists()


def test_a_cache_that_cannot_be_written_or_read_costs_only_time(tmp_path: Path) -> None:
    write_config(tmp_path, "[worker]\nmax_attempts = 7\n")
    (tmp_path / ".config.toml.parsed.json").mkdir()
    assert load_settings({"REMEM_HOME": str(tmp_path)}).max_attempts == 7
    assert load_settings({"REMEM_HOME": str(tmp_path)}).max_attempts == 7
    assert {p.name for p in tmp_path.iterdir()} == {"config.toml", ".config.toml.parsed.json"}


def test_a_torn_cache_is_parsed_again(tmp_path: Path) -> None:
    write_config(tmp_path, "[worker]\nmax_attempts = 7\n")
    (tmp_path / ".config.toml.parsed.json").write_text('{"text": "[worker]\\nmax_att')
    assert load_settings({"REMEM_HOME": str(tmp_path)}).max_attempts == 7


def test_a_value_json_cannot_hold_is_still_refused_by_name(tmp_path: Path) -> None:
    write_config(tmp_path, "[team]\nmachine = 1979-05-27\n")
    assert "`team.machine` must be a string" in str(config_error({"REMEM_HOME": str(tmp_path)}))
    assert not (tmp_path / ".config.toml.parsed.json").exists()
