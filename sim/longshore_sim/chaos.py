"""Randomised whole-system runs: `longshore chaos --seeds N`.

Rules:
- Each seed generates one scenario (`generate`), deterministically: the example cluster (`clusters/demo.yaml`:
  an on-demand and spot pool, interruption queue, budgets), the `inflate` and PDB-guarded `db` workloads, and
  a random sequence of steps on virtual time over `DURATION_S`: workload scale changes (up and down), spot
  interruption warnings, rebalance recommendations and AWS Health scheduled changes on random nodes,
  capacity errors on the cheapest types, a provisioner killed between its fleet request and its record,
  the workflow-steps Lambda dying after a step's work and before its answer,
  Kubernetes API errors (5xx, 429) for tens of seconds, Kubernetes API timeouts (`k8s-timeout`: requests whose
  answer never comes, for 20 s to 2 min, the client's 30 s read timeout passing on virtual time; half the time
  the server still carries them out, a write applied and its answer lost), DynamoDB throttling (up to twice what the retries
  absorb), a claim table that loses every item, planner cold starts, new AMI releases (drift),
  manual rotations, `kubectl delete node`, and cluster config changes (`config-change`: a random budget,
  limit or requirement of a pool published to the SSM parameter, reverted a few minutes later).
- The scenario runs on the simulation exactly like a shipped one and is judged by every rule of its checker
  (PDBs, `do-not-disrupt`, budgets, duplicate launches, pods that never ran, unsafe terminations, voluntary
  unavailability). A step that finds no node to act on is skipped and noted, never an error.
- A seed fails when its run has a violation (a pod pending for 10 minutes or more is one) or an exception; its line names the seed so
  `longshore chaos --seed S` replays it, and `--report DIR` writes the failing seed's scenario as YAML.
- Fault kinds can be chosen (`--faults`), so a run can leave out a kind while a product bug it exposes is fixed.
- The kinds of `MIXED` share the seed's random stream, as they always have; each kind added since (`ADDED`)
  draws its steps from a stream of its own, so adding one never changes what an older seed does with the
  other kinds: `generate(seed, MIXED)` is the scenario the seed ran before `k8s-timeout` existed.
"""

from __future__ import annotations

import random
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from longshore_sim.scenario import BUNDLED, Scenario, ScenarioError

DURATION_S = 45 * 60
FAULT_KINDS = (
    "scale",
    "spot-warning",
    "rebalance",
    "health",
    "capacity",
    "crash",
    "api-errors",
    "cold-start",
    "ami",
    "rotate",
    "delete-node",
    "dynamo-throttle",
    "lost-table",
    "k8s-timeout",
    "config-change",
)
ADDED = ("k8s-timeout", "config-change")  # drawn from their own random streams
MIXED = tuple(k for k in FAULT_KINDS if k not in ADDED)


def _step(rng: random.Random, kind: str, at: float) -> dict[str, Any]:
    any_node: dict[str, Any] = {"nodes": 1}
    if kind == "scale":
        deployment, top = rng.choice((("db", 8), ("inflate", 20)))
        return {"at": at, "scale": {"deployment": deployment, "replicas": rng.randint(0, top)}}
    if kind == "spot-warning":
        spot = {"nodes": 1, "selector": {"karpenter.sh/capacity-type": "spot"}}
        return {"at": at, "event": {"file": "events/spot-interruption-warning.json", **spot}}
    if kind == "rebalance":
        return {"at": at, "event": {"file": "events/rebalance-recommendation.json", **any_node}}
    if kind == "health":
        return {"at": at, "event": {"file": "events/health-scheduled-change-ec2.json", **any_node}}
    if kind == "capacity":
        types = rng.sample(["m5.large", "c5.large", "m6i.large", "c6i.large", "r5.large"], 2)
        return {"at": at, "unavailable": {"instanceTypes": types, "duration": rng.choice(["5m", "15m"])}}
    if kind == "crash":
        point = rng.choice(["after-launch-before-record", "before-launch", "workflow-step-after-work"])
        return {"at": at, "crash": {"point": point, "times": rng.randint(1, 3)}}
    if kind == "api-errors":
        return {
            "at": at,
            "apiFaults": {"status": rng.choice([500, 503, 429]), "duration": rng.randint(10, 90)},
        }
    if kind == "k8s-timeout":
        return {
            "at": at,
            "apiTimeouts": {
                "duration": rng.randint(20, 120),
                "served": rng.random() < 0.5,
                "resource": rng.choice([None, None, "pods/eviction", "nodes"]),
            },
        }
    if kind == "cold-start":
        return {"at": at, "coldStart": {"function": "planner"}}
    if kind == "ami":
        return {"at": at, "ami": {"release": f"chaos-{int(at)}"}}
    if kind == "lost-table":
        return {"at": at, "loseClaimTable": {}}
    if kind == "dynamo-throttle":
        return {"at": at, "dynamoThrottle": {"times": rng.randint(1, 8)}}
    if kind == "rotate":
        return {"at": at, "rotate": {"nodes": 1}}
    return {"at": at, "deleteNode": any_node}


def _config_change(rng: random.Random, at: float) -> list[dict[str, Any]]:
    """A random change of one pool of the example cluster, and its revert 1-5 minutes later (pods left pending
    by a limit or a requirement must still get a node before the 10-minute never-ran rule)."""
    pool = rng.choice(["general", "spot-batch"])
    change: dict[str, Any] = {"pool": pool}
    what = rng.choice(["budget", "limit", "requirement"])
    if what == "budget":
        change["budgets"] = [{"nodes": rng.choice(["0", "1", "50%"])}]
    elif what == "limit":
        change["limits"] = {"cpu": rng.choice(["0", "4", "16"])}
    else:
        category = rng.choice([["m"], ["c"], ["c", "m"]])
        change["requirements"] = [
            {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": category}
        ]
    revert = {"at": round(at + rng.uniform(60, 300)), "config": {"revert": True}}
    return [{"at": at, "config": change}, revert]


def generate(seed: int, faults: Iterable[str] = FAULT_KINDS) -> dict[str, Any]:
    """The scenario of `seed` as a document (what `--report` writes and `longshore simulate` reads)."""
    rng = random.Random(seed)
    chosen = set(faults)
    kinds = [k for k in MIXED if k in chosen] or ["scale"]
    steps: list[dict[str, Any]] = [
        {"at": 60, "scale": {"deployment": "db", "replicas": rng.randint(3, 8)}},
        {"at": 90, "scale": {"deployment": "inflate", "replicas": rng.randint(2, 12)}},
    ]
    at = 300.0
    while True:
        at += rng.uniform(90, 300)
        if at > DURATION_S - 600:
            break
        steps.append(_step(rng, rng.choice(kinds), round(at)))
    for kind in (k for k in ADDED if k in chosen and k != "config-change"):
        own = random.Random(f"{seed}/{kind}")
        at = 300.0
        while True:
            at += own.uniform(400, 1200)
            if at > DURATION_S - 600:
                break
            steps.append(_step(own, kind, round(at)))
    if "config-change" in chosen:  # drawn apart, so the other steps of a seed stay what they were
        other = random.Random(f"config-change-{seed}")
        for _ in range(other.randint(1, 2)):
            steps.extend(_config_change(other, round(other.uniform(300, DURATION_S - 900))))
    steps.sort(key=lambda step: float(step["at"]))
    return {
        "name": f"chaos-{seed}",
        "description": f"randomised run, seed {seed} (longshore chaos --seed {seed})",
        "cluster": "clusters/demo.yaml",
        "clusterName": "demo",
        "region": "us-east-1",
        "workloads": ["workloads/db-pdb.yaml", "workloads/inflate.yaml"],
        "bootDelay": "30s",
        "duration": DURATION_S,
        "steps": steps,
        "expect": {"allRunning": False, "zeroViolations": True},
    }


def replayable(document: dict[str, Any]) -> dict[str, Any]:
    """The document with its files named by absolute path, so it runs from wherever it is written."""

    def absolute(relative: str) -> str:
        return str(BUNDLED / relative)

    steps = [
        {**step, "event": {**step["event"], "file": absolute(step["event"]["file"])}}
        if "event" in step
        else step
        for step in document["steps"]
    ]
    return {
        **document,
        "cluster": absolute(document["cluster"]),
        "workloads": [absolute(w) for w in document["workloads"]],
        "steps": steps,
    }


def scenario_of(document: dict[str, Any]) -> Scenario:
    """The scenario, resolving its relative paths among the shipped scenarios' files."""
    return Scenario.model_validate({**document, "source": BUNDLED / f"{document['name']}.yaml"})


@dataclass
class SeedResult:
    seed: int
    problems: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def run_seed(seed: int, faults: Iterable[str] = FAULT_KINDS) -> SeedResult:
    from longshore_sim.runner import ScenarioRunner

    started = time.perf_counter()
    result = SeedResult(seed)
    try:
        summary = (
            ScenarioRunner(scenario_of(generate(seed, faults)), lenient_steps=True, cost_bound=False)
            .run()
            .summary
        )
        result.problems.extend(summary["violations"])  # pods that never ran for 10 min are among them
    except (ScenarioError, Exception) as error:  # a crash of the system under test is a failure of the seed
        result.problems.append(f"{type(error).__name__}: {error}\n{traceback.format_exc(limit=3)}")
    result.wall_s = time.perf_counter() - started
    return result


_worker_settled = False


def _run_one(job: tuple[int, tuple[str, ...]]) -> SeedResult:
    import logging

    before = logging.root.manager.disable
    logging.disable(logging.WARNING)  # the functions' own warnings are part of the run, not of its report
    try:
        return run_seed(*job)
    finally:
        logging.disable(before)  # in-process runs (tests) leave logging as they found it
        _settle_worker()


def _settle_worker() -> None:
    """In a worker process, after its first seed: what is still alive then (modules, botocore and moto models,
    the instance catalog) lives as long as the process, so move it out of the collector's sight (`gc.freeze`):
    every later full collection scans only the seed's own objects (about 0.3 s less a seed)."""
    global _worker_settled
    import gc
    import multiprocessing

    if _worker_settled or multiprocessing.current_process().name == "MainProcess":
        return
    _worker_settled = True
    gc.collect()
    gc.freeze()


def run(
    seeds: Iterable[int],
    faults: Iterable[str] = FAULT_KINDS,
    report: Path | None = None,
    echo: Callable[[str], None] = print,
    jobs: int = 1,
) -> list[SeedResult]:
    """Run every seed (`jobs` processes at once); print one line per failing seed, in seed order, and the
    closing `chaos: N seeds, V violations` line."""
    chosen = tuple(faults)
    work = [(seed, chosen) for seed in seeds]
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            outcomes = pool.imap(_run_one, work)
            return _report(outcomes, chosen, report, echo)
    return _report(map(_run_one, work), chosen, report, echo)


def _report(
    outcomes: Iterable[SeedResult], chosen: tuple[str, ...], report: Path | None, echo: Callable[[str], None]
) -> list[SeedResult]:
    results = []
    for outcome in outcomes:
        seed = outcome.seed
        results.append(outcome)
        if outcome.problems:
            echo(f"seed {seed}: {len(outcome.problems)} problem(s): {outcome.problems[0].splitlines()[0]}")
            if report is not None:
                report.mkdir(parents=True, exist_ok=True)
                (report / f"chaos-{seed}.yaml").write_text(
                    yaml.safe_dump(replayable(generate(seed, chosen)), sort_keys=False)
                    + "# problems:\n"
                    + "".join(f"#   {line}\n" for p in outcome.problems for line in p.splitlines()[:1])
                )
    violations = sum(len(r.problems) for r in results)
    echo(f"chaos: {len(results)} seeds, {violations} violations")
    return results
