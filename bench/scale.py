"""`make bench-scale`: what reading the cluster costs the provisioner and the planner at 20k, 50k and 150k pods.

A separate process serves realistic pods (about 10 KB of JSON each, as EKS returns them) and nodes (about
15 KB) from the API emulator, 30 pods a node (`bench.scale_server`). Each function is a fresh process
(`bench.scale_client`), so its CPU time and peak RSS are its own:

- provisioner: a first pass (cold container), then 100 new unschedulable pods arrive and a second pass of
  the same invocation reads them (the steady state: what a new batch costs);
- planner: a first pass, then 300 pods change (a label) and 100 arrive, and a second pass;
- pending -> CreateFleet (`--batches`, 5 by default; this checkout's `compact` reading only): in the same
  provisioner container, batch after batch of 100 new pods arrives in the full cluster and one pass of a new
  invocation plans and launches them; each pod's latency runs from its creation to its claim's CreateFleet
  call, on the simulated run's clock with the pass's CPU time counted (`bench.scale_fleet` says exactly
  what is counted and why not wall time). p50 and p95 are over every pod of every batch.

`today` reads as main did before (whole objects, no gzip, no cache; the planner parses every pod every
pass); `compact` reads through the shipped adapter (compact pages, gzip, list-then-watch cache, parsed pods
memoised per warm container). `today` runs only at the sizes in `--today` (it needs about 50 KiB a pod).
`--before SRC` also runs the `compact` reading with the `longshore` package of another checkout (SRC is its
root, e.g. an export of main), against the same server in the same run, at the sizes in `--before-sizes`.

The pass figures are the read of the cluster and the snapshot built from it (what each pass does before it
decides); the pending -> CreateFleet figures are the whole pass (batch window, read, solve, launch). Targets are
the 150,000-pod figures of the scale issue.

Usage: `python -m bench.scale [--quick] [--sizes 20000,50000,150000] [--today 20000] [--before SRC]
[--batches 5]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
from typing import Any

TARGETS = {
    "provisioner warm pass CPU s": 2.0,
    "planner warm pass CPU s": 10.0,
    "provisioner peak RSS MiB": 1536.0,
    "planner peak RSS MiB": 1536.0,
    "new batch read wall s": 2.0,
    "pending -> CreateFleet p50 s": 2.0,
}


class _Proc:
    def __init__(self, *args: str, source: str | None = None) -> None:
        env = dict(os.environ)
        if source:  # the other checkout's package first; bench itself from this one
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (os.path.join(source, "functions"), env.get("PYTHONPATH")) if p
            )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def first_line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):
            self.ask("quit")
        self.proc.wait(timeout=60)


def _function(
    server: _Proc, url: str, mode: str, which: str, source: str | None = None, batches: int = 0
) -> dict[str, Any]:
    client = _Proc("bench.scale_client", url, mode, source=source)
    client.first_line()
    fleet: list[dict[str, Any]] = []
    try:
        before = int(server.ask("bytes"))
        cold = json.loads(client.ask(which))
        middle = int(server.ask("bytes"))
        if which == "planner":
            server.ask("touch 300")
        server.ask("add 100")
        warm = json.loads(client.ask(which))
        after = int(server.ask("bytes"))
        for _ in range(batches):  # a new batch in the full cluster; the last one's pods are gone
            server.ask("drop")
            client.ask("sync")
            server.ask("add 100")
            fleet.append(json.loads(client.ask("fleet")))
    finally:
        client.close()
    cold["bytes"], warm["bytes"] = middle - before, after - middle
    return {"cold": cold, "warm": warm, **({"fleet": fleet} if fleet else {})}


def measure(pods: int, today: bool, before: str | None = None, batches: int = 0) -> dict[str, Any]:
    server = _Proc("bench.scale_server", str(pods))
    url = server.first_line()
    try:
        found: dict[str, Any] = {}
        for mode in ("today", "compact") if today else ("compact",):
            found[mode] = {
                w: _function(
                    server, url, mode, w, batches=batches if (mode, w) == ("compact", "provisioner") else 0
                )
                for w in ("provisioner", "planner")
            }
        refused = json.loads(server.ask("refused"))
        if refused:
            print(f"requests the benchmark's server does not serve: {refused}", file=sys.stderr)
        if before:
            found["before"] = {
                w: _function(server, url, "compact", w, before) for w in ("provisioner", "planner")
            }
    finally:
        server.close()
    return found


def _rows(pods: int, found: dict[str, Any], base: str = "today") -> list[tuple[str, Any, Any]]:
    """(figure, `base`'s reading, this checkout's), `base` being `today` or `before`."""

    def pick(mode: str, which: str, phase: str, key: str) -> Any:
        return found.get(base if mode == "today" else mode, {}).get(which, {}).get(phase, {}).get(key)

    rows: list[tuple[str, Any, Any]] = []
    for which in ("provisioner", "planner"):
        for phase in ("cold", "warm"):
            rows.append(
                (
                    f"{which} {phase} pass CPU s",
                    pick("today", which, phase, "cpu_s"),
                    pick("compact", which, phase, "cpu_s"),
                )
            )
            rows.append(
                (
                    f"{which} {phase} pass MB read",
                    _mb(pick("today", which, phase, "bytes")),
                    _mb(pick("compact", which, phase, "bytes")),
                )
            )
        peak = max(pick("compact", which, p, "rss_mib") or 0 for p in ("cold", "warm"))
        then = max((pick("today", which, p, "rss_mib") or 0 for p in ("cold", "warm")), default=0) or None
        rows.append((f"{which} peak RSS MiB", then, peak))
    rows.append(
        (
            "new batch read wall s",
            pick("today", "provisioner", "warm", "wall_s"),
            pick("compact", "provisioner", "warm", "wall_s"),
        )
    )
    batches = found.get("compact", {}).get("provisioner", {}).get("fleet") or []
    if batches:
        latencies = sorted(s for b in batches for s in b["latencies_s"])
        rows.append(("pending -> CreateFleet p50 s", None, _rank(latencies, 0.5)))
        rows.append(("pending -> CreateFleet p95 s", None, _rank(latencies, 0.95)))
        rows.append(("  batch pass CPU s (median)", None, _rank(sorted(b["cpu_s"] for b in batches), 0.5)))
        waits = sorted(b["batch_window_s"] + b["watch_waits_s"] for b in batches)
        rows.append(("  batch window + watch waits s", None, _rank(waits, 0.5)))
        rows.append(("  pods launched / batches", None, f"{len(latencies)}/{len(batches)}"))
    return rows


def _rank(values: list[float], q: float) -> float | None:
    """Nearest rank, as `longshore simulate` reports pending -> running."""
    return round(values[max(0, math.ceil(len(values) * q) - 1)], 3) if values else None


def _mb(value: Any) -> Any:
    return None if value is None else round(value / 1e6, 3)


def print_table(pods: int, found: dict[str, Any]) -> None:
    base = "before" if "before" in found else "today"
    print(f"\n{pods:,} pods, {-(-pods // 30):,} nodes")
    print(f"{'figure':34} {base:>10} {'compact':>10} {'ratio':>7} {'target@150k':>12}")
    for name, today, compact in _rows(pods, found, base):
        ratio = f"{today / compact:.1f}x" if today and compact else ""
        target = TARGETS.get(name)
        shown = [("" if v is None else str(v)) for v in (today, compact)]
        print(f"{name:34} {shown[0]:>10} {shown[1]:>10} {ratio:>7} {'' if target is None else target:>12}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only 20,000 pods")
    parser.add_argument("--sizes", default="20000,50000,150000")
    parser.add_argument("--today", default="20000", help="sizes that also measure today's reading")
    parser.add_argument("--before", default=None, help="root of another checkout to measure beside this one")
    parser.add_argument("--before-sizes", default="20000,50000,150000", help="sizes that measure --before")
    parser.add_argument(
        "--batches", type=int, default=5, help="new batches of 100 pods for pending -> CreateFleet"
    )
    args = parser.parse_args()
    sizes = [20000] if args.quick else [int(s) for s in args.sizes.split(",")]
    today = {int(s) for s in args.today.split(",") if s}
    before_sizes = {int(s) for s in args.before_sizes.split(",") if s}
    for pods in sizes:
        found = measure(pods, pods in today, args.before if pods in before_sizes else None, args.batches)
        print_table(pods, found)
        print(json.dumps({"pods": pods, **found}), file=sys.stderr)


if __name__ == "__main__":
    main()
