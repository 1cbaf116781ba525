"""Warm durations of the four Lambda handlers on a seeded 50-node cluster, for the control-plane cost.

Theory of operation: one process plays Lambda's warm container. It starts a moto server on 127.0.0.1 and
seeds the AWS side exactly as `bench.coldstart` does (`seed_world`: VPC, subnets, AMIs, EKS cluster, the
DynamoDB table, the demo config in SSM), plus a disruption state machine and a provisioner function in moto.
It starts the project's Kubernetes API emulator (`KubeApiEmulator`) and seeds a realistic cluster
(`bench.lambda_world`):

- 50 EC2 instances (m5.2xlarge, on-demand, over the seeded zones) tagged as the `general` pool's, each with
  a claim in the DynamoDB table (state `initialized`) and a Ready Node whose `providerID` names it;
- per node 17 ReplicaSet pods (250m / 1 GiB each) and one pod of each of 3 DaemonSets: 1,000 pods;
- 5 PodDisruptionBudgets (maxUnavailable 1) over the ReplicaSet apps.

The handlers run as Lambda runs them (`handler(event, context)` with the function's environment), with one
bench-only substitution: `Runtime.from_env` is wrapped to pass `kube_endpoint=<the emulator's URL>`, as the
simulation does, because the EKS endpoint moto reports is not reachable. Each handler is invoked once cold
(not timed here; `bench.coldstart` measures that), then N times warm, timed with `time.perf_counter()`:

- provisioner: one pass with nothing pending (`ProvisionerService.run_pass` of the handler's runtime, lease
  and all). The handler itself loops passes until 15 s before its timeout, sleeping `poll_s` between them;
  Lambda bills that wall time, so one scheduled invocation bills ~timeout − 15 s whatever a pass costs.
- planner: the handler with a context whose remaining time allows exactly one pass (the same loop would
  otherwise run a pass every 10 s until ~15 s + one pass before its timeout).
- interruption: the handler with an SQS batch of one spot interruption warning for one of our instances
  (tests/events/spot-interruption-warning.json re-addressed), a different instance each run.
- workflow steps: `taint` then one `drain` pass on a different node each run (17 evictions per pass).

Prints a table of medians and writes bench/results/lambda_durations.json.

    .venv/bin/python -m bench.lambda_durations [--runs 9]
"""

from __future__ import annotations

import argparse
import compileall
import json
import logging
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from bench.coldstart import REPO, seed_world, start_moto_server
from bench.lambda_world import (
    APP_PODS_PER_NODE,
    DAEMONSETS,
    INSTANCE_TYPE,
    NODEPOOL,
    NODES,
    PDB_APPS,
    WEBHOOK_SECRET,
    iso,
    seed_aws_extras,
    seed_nodes,
    seed_workloads,
)

RESULTS = REPO / "bench" / "results" / "lambda_durations.json"
EVENTS = REPO / "tests" / "events"


class Context:
    """The LambdaContext fields the handlers read; `remaining` gives the remaining time in seconds."""

    function_name = "longshore-demo-bench"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:longshore-demo-bench"
    log_group_name = "/aws/lambda/longshore-demo-bench"
    log_stream_name = "bench"

    def __init__(self, request_id: str, remaining: Callable[[], float]) -> None:
        self.aws_request_id = request_id
        self._remaining = remaining

    def get_remaining_time_in_millis(self) -> int:
        return int(self._remaining() * 1000)


@contextmanager
def _kube_endpoint(url: str) -> Iterator[None]:
    """Bench-only: the handlers' `Runtime.from_env()` talks to the emulator instead of moto's EKS endpoint."""
    from longshore.config.settings import RuntimeSettings
    from longshore.wiring import runtime as runtime_module

    original = runtime_module.Runtime.from_env

    def from_env(cls: type[runtime_module.Runtime]) -> runtime_module.Runtime:
        return cls(RuntimeSettings.from_env(), kube_endpoint=url)

    runtime_module.Runtime.from_env = classmethod(from_env)  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        runtime_module.Runtime.from_env = original  # type: ignore[method-assign]


def _timed(call: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    out = call()
    return time.perf_counter() - began, out


def _spot_batch(instance_id: str, zone: str, index: int) -> dict[str, Any]:
    event = json.loads((EVENTS / "spot-interruption-warning.json").read_text())
    event["id"] = f"bench-spot-{index:04d}"
    event["time"] = iso(time.time())
    event["resources"] = [f"arn:aws:ec2:{zone}:instance/{instance_id}"]
    event["detail"]["instance-id"] = instance_id
    return {
        "Records": [
            {
                "messageId": f"bench-{index:04d}",
                "receiptHandle": "bench",
                "body": json.dumps(event),
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": str(int(time.time() * 1000)),
                    "SenderId": "events.amazonaws.com",
                    "ApproximateFirstReceiveTimestamp": str(int(time.time() * 1000)),
                },
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:longshore-demo-interruption",
                "awsRegion": "us-east-1",
            }
        ]
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "median_s": round(statistics.median(values), 4),
        "min_s": round(min(values), 4),
        "max_s": round(max(values), 4),
        "cold_or_first_s": round(values[0], 4),
    }


def measure(runs: int = 9) -> dict[str, Any]:
    """Seed the world, run each handler once cold and `runs` times warm; the figures in seconds."""
    import boto3

    from longshore_sim.kubeapi import KubeApiEmulator

    compileall.compile_dir(str(REPO / "functions" / "longshore"), quiet=1)
    server, endpoint = start_moto_server()
    # moto has no Pricing API: the catalog falls back to the shipped price table after one failed call,
    # which moto's werkzeug logs as a traceback at ERROR.
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    saved = dict(os.environ)
    emulator = KubeApiEmulator(kubernetes_version="1.31").start()
    try:
        env = seed_world(endpoint)
        os.environ.update(env)
        os.environ["POWERTOOLS_LOG_LEVEL"] = "WARNING"  # INFO logs go to stdout; Lambda ships them for free
        os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"
        session = boto3.session.Session(region_name="us-east-1")
        os.environ.update(seed_aws_extras(session, env))
        nodes = seed_nodes(session, env, emulator.store)
        seed_workloads(emulator.store, nodes)
        if runs * 2 + 2 > len(nodes):
            raise SystemExit(f"--runs {runs}: at most {(len(nodes) - 2) // 2} (one node per step run)")
        with _kube_endpoint(emulator.url):
            results = _measure_handlers(runs, nodes)
    finally:
        emulator.stop()
        server.stop()
        os.environ.clear()
        os.environ.update(saved)
    results["world"] = {
        "nodes": NODES,
        "pods": NODES * (APP_PODS_PER_NODE + len(DAEMONSETS)),
        "daemonsets": len(DAEMONSETS),
        "pdbs": PDB_APPS,
        "instance_type": INSTANCE_TYPE,
    }
    results["runs"] = runs
    results["machine"] = {
        "processor": platform.processor() or platform.machine(),
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "load_1m": round(os.getloadavg()[0], 2),
    }
    return results


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def _measure_handlers(runs: int, nodes: list[dict[str, str]]) -> dict[str, Any]:
    from longshore.adapters.events.admission import admission_review, function_url_event
    from longshore.handlers import interruption, planner, provisioner, trigger, workflow_steps
    from longshore.wiring import provisioner as provisioner_wiring

    out: dict[str, Any] = {}
    schedule_event = {"source": "aws.events", "detail-type": "Scheduled Event"}

    # provisioner: the cold invocation builds the runtime (remaining time: one pass, no idle wait after it).
    calls = iter([16.0])
    cold = Context("cold", lambda: next(calls, 0.0))
    cold_s, _ = _timed(partial(provisioner.handler, schedule_event, cold))
    service = provisioner_wiring.CONTAINER.get().service(owner="bench-warm")
    passes = []
    for _ in range(runs):
        seconds, result = _timed(service.run_pass)
        passes.append(seconds)
    service.release()
    out["provisioner_pass"] = {**_summary(passes), "cold_invocation_s": round(cold_s, 3),
                               "status": getattr(result, "status", "?")}  # fmt: skip

    # planner: remaining 20 s allows exactly one pass (the loop stops when remaining <= 15 + pass + 10).
    planner_runs: list[float] = []
    for index in range(runs + 1):
        context = Context(f"plan-{index}", lambda: 20.0)
        seconds, report = _timed(partial(planner.handler, schedule_event, context))
        planner_runs.append(seconds)
    out["planner_pass"] = {**_summary(planner_runs[1:]), "cold_invocation_s": round(planner_runs[0], 3),
                           "report": report}  # fmt: skip

    # interruption: one spot warning per batch, a different instance (the last nodes) each time.
    spot_runs: list[float] = []
    answers: list[dict[str, Any]] = []
    for index in range(runs + 1):
        node = nodes[-1 - index]
        batch = _spot_batch(node["instance_id"], node["zone"], index)
        context = Context(f"int-{index}", lambda: 30.0)
        seconds, answer = _timed(partial(interruption.handler, batch, context))
        spot_runs.append(seconds)
        answers.append(answer)
    out["interruption_spot_warning"] = {**_summary(spot_runs[1:]), "cold_invocation_s": round(spot_runs[0], 3),
                                        "failures": sum(len(a.get("batchItemFailures", [])) for a in answers)}  # fmt: skip

    # trigger: the admission webhook's function, one pod creation per request (one asynchronous invoke).
    trigger_runs: list[float] = []
    for index in range(runs + 1):
        pod = {"metadata": {"name": f"web-{index}", "namespace": "default"}, "spec": {"containers": []}}
        event = function_url_event(admission_review(f"bench-{index}", "CREATE", pod), secret=WEBHOOK_SECRET)
        context = Context(f"trigger-{index}", lambda: 5.0)
        seconds, answer = _timed(partial(trigger.handler, event, context))
        trigger_runs.append(seconds)
    out["trigger_pod_created"] = {**_summary(trigger_runs[1:]), "cold_invocation_s": round(trigger_runs[0], 3),
                                  "status": answer.get("statusCode")}  # fmt: skip

    # workflow steps: taint, then one drain pass, on a different node each run (the first nodes).
    taints: list[float] = []
    drains: list[float] = []
    evicted: list[dict[str, Any]] = []
    for index in range(runs + 1):
        node = nodes[index]
        state = {
            "instanceId": node["instance_id"], "reason": "underutilized", "nodeName": node["node"],
            "claimId": node["claim_id"], "urgent": False, "replace": False, "deadlineEpoch": None,
            "requestedAt": time.time(), "nodePool": NODEPOOL,
        }  # fmt: skip
        name = f"bench-{index:03d}"
        t_s, tainted = _timed(
            partial(workflow_steps.handler, {"step": "taint", "execution": name, "state": state}, None)
        )
        d_s, drained = _timed(
            partial(workflow_steps.handler, {"step": "drain", "execution": name, "state": tainted}, None)
        )
        taints.append(t_s)
        drains.append(d_s)
        evicted.append((drained.get("drain") or {}) if isinstance(drained, dict) else {})
    out["workflow_taint"] = {**_summary(taints[1:]), "cold_invocation_s": round(taints[0], 3)}
    out["workflow_drain_pass"] = {**_summary(drains[1:]), "cold_invocation_s": round(drains[0], 3),
                                  "last_drain_state": evicted[-1]}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    results = measure(args.runs)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(f"{'handler (warm, 50 nodes, 1,000 pods)':44} {'median':>8} {'min':>8} {'max':>8} {'first':>8}")
    for key in ("provisioner_pass", "planner_pass", "interruption_spot_warning", "trigger_pod_created",
                "workflow_taint", "workflow_drain_pass"):  # fmt: skip
        row = results[key]
        print(
            f"{key:44} {row['median_s']:8.3f} {row['min_s']:8.3f} {row['max_s']:8.3f} "
            f"{row['cold_invocation_s']:8.3f}"
        )
    print(f"median of {args.runs} warm runs, seconds; 'first' is the cold (first) invocation; "
          f"machine: {results['machine']['cpu_model']}, load {results['machine']['load_1m']}")  # fmt: skip
    print(f"written to {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
