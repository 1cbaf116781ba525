"""`make fuzz`: the long fuzz run. Each target runs in its own process with a fixed seed; prints a table.

Usage: `python -m tests.fuzz.run [--examples N] [--seed S] [--hang-seconds T] [TARGET ...]`.

For each target the child process draws N inputs from the target's strategy (Hypothesis, generate phase
only, seeded), runs the target on each, and counts: inputs, crashes (any exception the target does not
document, or a broken invariant), hangs (an input taking longer than `--hang-seconds`; a SIGALRM at three
times that stops a runaway input), and the process's peak resident memory (`ru_maxrss`, which includes the
interpreter and imports). The first crash of each kind is printed with its input (cut) and traceback, so
it can become a regression test; every input slower than the bound is written whole to
`reports/fuzz/<target>-slow-<n>.txt`. The exit status is 1 when any target crashed, hung or passed `--max-mb`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class _Runaway(BaseException):
    """Raised by SIGALRM in an input that runs far past the hang bound (a BaseException: no target catches it)."""


def _child(name: str, examples: int, seed: int, hang_seconds: float, out: Path) -> None:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    from tests.fuzz.targets import TARGETS

    target = TARGETS[name]
    stats: dict[str, Any] = {"inputs": 0, "crashes": 0, "hangs": 0, "slowest_s": 0.0, "samples": {}}

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Runaway

    signal.signal(signal.SIGALRM, on_alarm)

    @hypothesis_seed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    @given(target.strategy)
    def drive(value: Any) -> None:
        stats["inputs"] += 1
        start = time.perf_counter()
        signal.alarm(int(hang_seconds * 3))
        try:
            target.run(value)
        except _Runaway:
            stats["hangs"] += 1
            stats["samples"].setdefault("hang", repr(value)[:300])
        except Exception as error:
            stats["crashes"] += 1
            where = traceback.extract_tb(error.__traceback__)[-1]
            kind = f"{type(error).__name__} at {Path(where.filename).name}:{where.lineno}"
            stats["samples"].setdefault(kind, f"{repr(value)[:300]}\n{traceback.format_exc()[-1500:]}")
        finally:
            signal.alarm(0)
        elapsed = time.perf_counter() - start
        stats["slowest_s"] = max(stats["slowest_s"], elapsed)
        if elapsed > hang_seconds:
            stats["hangs"] += 1
            stats["samples"].setdefault("hang", repr(value)[:300])
            slow = ROOT / "reports" / "fuzz" / f"{name}-slow-{stats['hangs']}.txt"
            slow.parent.mkdir(parents=True, exist_ok=True)
            slow.write_text(f"{elapsed:.2f} s\n{value!r}\n")  # the whole input, to replay

    started = time.perf_counter()
    drive()
    stats["seconds"] = time.perf_counter() - started
    stats["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    out.write_text(json.dumps(stats))


def main(argv: list[str] | None = None) -> int:
    from tests.fuzz.targets import TARGETS

    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"default: all of {', '.join(sorted(TARGETS))}")
    parser.add_argument("--examples", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--hang-seconds", type=float, default=10.0)
    parser.add_argument("--max-mb", type=float, default=512.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.examples, args.seed, args.hang_seconds, args.out)
        return 0
    unknown = sorted(set(args.targets) - set(TARGETS))
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; choose from {', '.join(sorted(TARGETS))}")
    print(f"fuzz: {args.examples} inputs per target, seed {args.seed}, hang bound {args.hang_seconds:g} s")
    print(
        f"{'target':<16} {'inputs':>7} {'crashes':>8} {'hangs':>6} {'slowest s':>10} {'peak MB':>8} {'time s':>7}"
    )
    failed = False
    env = {**os.environ, "POWERTOOLS_LOG_LEVEL": "CRITICAL"}
    for name in args.targets or sorted(TARGETS):
        with tempfile.TemporaryDirectory() as directory:
            out = Path(directory) / "stats.json"
            command = [sys.executable, "-m", "tests.fuzz.run", "--child", name, "--out", str(out)]
            command += ["--examples", str(args.examples), "--seed", str(args.seed)]
            command += ["--hang-seconds", str(args.hang_seconds)]
            done = subprocess.run(
                command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            if done.returncode != 0 or not out.exists():
                print(
                    f"{name:<16} the child process failed (exit {done.returncode}):\n{done.stderr.decode()[-2000:]}"
                )
                failed = True
                continue
            stats = json.loads(out.read_text())
        print(
            f"{name:<16} {stats['inputs']:>7} {stats['crashes']:>8} {stats['hangs']:>6} "
            f"{stats['slowest_s']:>10.2f} {stats['peak_mb']:>8.0f} {stats['seconds']:>7.0f}",
            flush=True,
        )
        for kind, sample in stats["samples"].items():
            print(f"  first {kind}: {sample}")
        failed |= bool(stats["crashes"] or stats["hangs"] or stats["peak_mb"] > args.max_mb)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
