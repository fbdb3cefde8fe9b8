"""What command analysis costs on the largest commands an agent can send: a 1 MiB heredoc, a
1 MiB payload of small heredocs, a 100,000-step `&&` chain, 10,000 nested `$( )` and 10,000
nested subshells, and the largest command still read by the grammar (MAX_PARSED_NODES). Target:
each under a second.

    .venv/bin/python bench/analysis.py [--runs N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

from remem.shell.analysis import analyse
from remem.shell.syntax import MAX_PARSED_NODES

TARGET_S = 1.0
MIB = 1024 * 1024


def one_heredoc() -> str:
    line = "a line of the file, with $HOME in it\n"
    return "cat <<'EOF' > notes.txt\n" + line * (MIB // len(line)) + "EOF\n"


def small_heredocs() -> str:
    return "".join(f"cat <<EOF{n} > f{n}.txt\nx\nEOF{n}\n" for n in range(MIB // 32))


def and_chain() -> str:
    return " && ".join(f"make t{n}" for n in range(100_000))


def nested_substitutions() -> str:
    return "echo " + "$(echo " * 10_000 + "x" + ")" * 10_000


def nested_subshells() -> str:
    return "(" * 10_000 + "make test" + ")" * 10_000


def largest_parsed() -> str:
    """`make tN` lines (4 nodes each) up to the node bound: the most the grammar reads."""
    return "\n".join(f"make t{n}" for n in range(MAX_PARSED_NODES // 4 - 1))


CASES: dict[str, Callable[[], str]] = {
    "1 MiB heredoc": one_heredoc,
    "1 MiB of small heredocs": small_heredocs,
    "100,000-step && chain": and_chain,
    "10,000 nested $( )": nested_substitutions,
    "10,000 nested subshells": nested_subshells,
    "largest command the grammar reads": largest_parsed,
}


def measure(command: str, runs: int) -> dict[str, object]:
    seconds, parsed = [], None
    for _ in range(runs):
        start = time.perf_counter()
        parsed = analyse(command).parsed
        seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    return {
        "bytes": len(command.encode("utf-8")),
        "parsed": parsed,
        "median_s": median,
        "min_s": min(seconds),
        "max_s": max(seconds),
        "target_s": TARGET_S,
        "pass": median < TARGET_S,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cases = {}
    for name, build in CASES.items():
        cases[name] = measure(build(), args.runs)
        print(f"{name}: {cases[name]['median_s']:.3f} s", file=sys.stderr)
    report = {"runs": args.runs, "cases": cases}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{'':<36}{'bytes':>10}{'parsed':>8}{'median s':>10}{'min–max s':>16}")
        for name, figures in cases.items():
            spread = f"{figures['min_s']:.3f}–{figures['max_s']:.3f}"
            print(
                f"{name:<36}{figures['bytes']:>10,}{figures['parsed']!s:>8}"
                f"{figures['median_s']:>10.3f}{spread:>16}"
            )
    return 0 if all(figures["pass"] for figures in cases.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
