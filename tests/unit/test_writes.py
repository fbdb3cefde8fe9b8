"""The files a shell command edits, row by row: patches handed to apply_patch, and files
written by cat, printf, echo and tee. Each row is a command line as agents write them."""

from __future__ import annotations

from typing import Any

import pytest

from remem.record.writes import applied_patch, patch_files, written_files

PATCH = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x = 1\n+x = 2\n*** End Patch"

WRITES: list[tuple[str, list[tuple[str, str]]]] = [
    ("cat <<'EOF' > src/app.py\nprint('hi')\nEOF", [("src/app.py", "print('hi')")]),
    ("cat > src/app.py <<EOF\nx = $X\nEOF\n", [("src/app.py", "x = $X")]),
    ('cat >"src/my app.py" << "EOF"\nbody\nEOF', [("src/my app.py", "body")]),
    ("cat >> README.md <<'EOF'\n## Usage\nEOF", [("README.md", "## Usage")]),
    ("cat <<-EOF > Makefile\n\ttest:\n\tEOF", [("Makefile", "\ttest:")]),
    ("cat > a.txt \\\n  <<EOF\nbody\nEOF", [("a.txt", "body")]),
    ("tee docs/a.md <<EOF\nhello\nEOF", [("docs/a.md", "hello")]),
    ("tee -a docs/a.md > /dev/null <<EOF\nmore\nEOF", [("docs/a.md", "more")]),
    ("printf 'a\\nb\\n' > notes.txt", [("notes.txt", "printf 'a\\nb\\n' > notes.txt")]),
    ("echo 'PORT=8080' >> .env.example", [(".env.example", "echo 'PORT=8080' >> .env.example")]),
    (
        "mkdir -p src && cat > src/a.py <<'PY'\nA = 1\nPY\ncat > src/b.py <<'PY'\nB = 2\nPY",
        [("src/a.py", "A = 1"), ("src/b.py", "B = 2")],
    ),
    ("cat > /tmp/message.txt <<'EOF'\nfix\nEOF", [("/tmp/message.txt", "fix")]),
    # Not writes by cat/printf/echo/tee, or not into a file:
    ("pytest -q > out.txt 2>&1", []),
    ("python - <<'PY' > report.txt\nprint(1)\nPY", []),
    ("cat src/a.py 2>/dev/null", []),
    ("cat src/a.py", []),
    ("echo done >&2", []),
    ("echo x > /dev/null", []),
    ('cat > "$OUT" <<EOF\nx\nEOF', []),
    ("git commit -m \"$(cat <<'EOF'\nfix: it's > than before\nEOF\n)\"", []),
    ("echo 'a > b'", []),
    ("cat <<'EOF'\n> quoted reply\nEOF", []),
    ("echo unclosed 'quote > f", []),
]


@pytest.mark.parametrize(("command", "expected"), WRITES)
def test_files_a_command_writes(command: str, expected: list[tuple[str, str]]) -> None:
    assert written_files(command) == expected


PATCHES: list[tuple[Any, str | None]] = [
    (["apply_patch", PATCH], PATCH),
    (["bash", "-lc", f"apply_patch << 'PATCH'\n{PATCH}\nPATCH\n"], PATCH + "\n"),
    (f"apply_patch <<'EOF'\n{PATCH}\nEOF", PATCH + "\n"),
    (f"apply_patch '{PATCH}'", PATCH + "\n"),
    (f'applypatch "{PATCH}"', PATCH + "\n"),
    (["apply_patch", "no patch here"], None),
    ("echo apply_patch", None),
    (f"cat > notes.md <<'EOF'\n{PATCH}\nEOF", None),
    (["ls", "-la"], None),
    (None, None),
]


@pytest.mark.parametrize(("command", "expected"), PATCHES)
def test_the_patch_a_command_applies(command: Any, expected: str | None) -> None:
    assert applied_patch(command) == expected


def test_a_patch_names_each_file_it_adds_updates_deletes_or_moves_to_once() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: docs/new.md\n+hello\n*** Update File: src/old.py\n"
        "*** Move to: src/new.py\n@@\n-a\n+b\n*** Delete File: src/gone.py\n"
        "*** Update File: docs/new.md\n*** End Patch"
    )
    assert patch_files(patch) == ["docs/new.md", "src/old.py", "src/new.py", "src/gone.py"]
