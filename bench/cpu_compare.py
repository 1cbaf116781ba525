"""The engine's solve CPU, this tree against another (main exported to a directory, say), alternately.

Usage: `python -m bench.cpu_compare BASE [--only NAME ...] [--rounds 3]`, where BASE is a source tree of the
project (`git -C /work/main archive main | tar -x -C /tmp/solve-base`). Each round runs one process on
BASE's engine, then one on this tree's, each solving every chosen workload of `python -m bench.run
--only main` once (with spot diversity off, as that table) and timing `solve` with `time.process_time`
(process CPU, so other work on a shared machine counts less than in wall time). The workloads are
this tree's `bench.workloads` in both, and every process runs with `PYTHONHASHSEED=0`. It prints, per workload, both trees' CPU seconds per round, the ratio
of their sums (this tree ÷ BASE) and whether the plans are identical (a hash of the whole plan, every
claim, pod and fallback).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _child(names: list[str]) -> None:
    """One pass: solve each chosen workload once, print {name: [cpu seconds, cost, plan hash]} as JSON."""
    from bench.run import _cases, solve_input
    from longshore.core.scheduling import solve

    found: dict[str, list[object]] = {}
    for build, _ in _cases(False):
        workload = build()
        if names and workload.name not in names:
            continue
        inp = solve_input(workload)
        gc.collect()
        start = time.process_time()
        plan = solve(inp)
        seconds = time.process_time() - start
        digest = hashlib.sha1(repr(plan).encode(), usedforsecurity=False).hexdigest()
        found[workload.name] = [seconds, plan.cost_per_hour, digest]
    print(json.dumps(found))


def _pass(tree: Path, names: list[str]) -> dict[str, list[object]]:
    """One child process on `tree`'s engine (this tree's benchmark workloads)."""
    path = os.pathsep.join([str(tree / "functions"), str(tree / "sim"), str(HERE)])
    env = dict(os.environ, PYTHONPATH=path, PYTHONHASHSEED="0")  # the plans' text, set orders included
    done = subprocess.run(
        [sys.executable, "-m", "bench.cpu_compare", "--child", *names],
        env=env,
        cwd=HERE,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", nargs="?", type=Path, help="the other source tree")
    parser.add_argument("--only", nargs="*", default=[], help="workload names (default: all of --only main)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child)
        return
    if args.base is None or not (args.base / "functions" / "longshore").is_dir():
        parser.error(f"BASE must be a source tree of the project (no functions/longshore under {args.base})")
    rounds = [(_pass(args.base, args.only), _pass(HERE, args.only)) for _ in range(args.rounds)]
    print(f"{'workload':<26} {'base CPU s':>22} {'this CPU s':>22} {'ratio':>6} same plan")
    ratios = []
    for name in rounds[0][0]:
        base = [float(str(b[name][0])) for b, _ in rounds]
        mine = [float(str(m[name][0])) for _, m in rounds]
        same = all(b[name][2] == m[name][2] == rounds[0][0][name][2] for b, m in rounds)
        ratios.append(sum(mine) / sum(base))
        print(
            f"{name:<26} {' '.join(f'{s:.3f}' for s in base):>22} {' '.join(f'{s:.3f}' for s in mine):>22} "
            f"{ratios[-1]:>6.2f} {'yes' if same else 'NO'}"
        )
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else 1.0
    print(f"geometric mean of the ratios: {geomean:.2f}")


if __name__ == "__main__":
    main()
