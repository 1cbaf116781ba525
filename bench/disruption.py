"""Disruption planner benchmark: one consolidation pass over a 1,000-node, 20,000-pod synthetic cluster.

Theory of operation: the cluster is built as the Lambda would read it (Node and Pod dicts as the API server
returns them, NodeClaims as the store keeps them) on EC2's real us-east-1 catalog (offline: moto's shapes and
the shipped price table). 1,000 on-demand nodes of five types in three zones run 20 pods each, drawn from 50
deployments (cpu 100m-1, memory 256Mi-2Gi), so their utilisation ranges widely and consolidation has work
to do. The pass is timed in its two parts, as in `services.disruption.DisruptionService.run_pass`:

- `snapshot`: manifests and claims into the planner's input (`take_snapshot`, parsing every pod);
- `plan`: `core.disruption.planner.plan` (emptiness, drift, then multi-node consolidation by binary search
  over up to 100 candidates and single-node consolidation), with the packing engine placing every move.

Run: `.venv/bin/python -m bench.disruption [--nodes 1000] [--pods-per-node 20] [--fill 0.15 0.95] [--repeat 1]
[--profile]` (a dense cluster, `--fill 0.7 0.95`, makes the multi-node search bisect).
Target (issue #5): the pass takes <= 10 s. Results are printed and written to `bench/results/disruption.json`.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.catalogs import real_catalog
from longshore.adapters.memory import MemoryClaimStore, MemoryOfferingAvailability
from longshore.core import labels as wk
from longshore.core.allocatable import allocatable
from longshore.core.claims import NodeClaim, provider_id
from longshore.core.disruption import planner
from longshore.core.disruption.decisions import DisruptionPlan
from longshore.core.model import (
    Budget,
    ClusterConfig,
    Disruption,
    Expiry,
    NodeClass,
    NodePool,
    Origin,
    Requirement,
)
from longshore.ports.kube import EvictionResult, KubeEvent, Manifest, NodePatch
from longshore.services.disruption_snapshot import take_snapshot

NOW = 1_767_225_600.0
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
NODE_TYPES = ("m5.2xlarge", "m5.4xlarge", "c5.4xlarge", "r5.2xlarge", "m5.xlarge")
CPU_MENU = ("100m", "200m", "250m", "300m", "500m", "750m", "1")
MEMORY_MENU = ("256Mi", "512Mi", "1Gi", "2Gi")
RESULTS = Path(__file__).resolve().parent / "results" / "disruption.json"


class ListCluster:
    """The read half of `ports.kube.Cluster` over fixed lists (what a snapshot reads)."""

    def __init__(self, nodes: list[Manifest], pods: list[Manifest]) -> None:
        self.nodes, self.pods = nodes, pods

    def list_nodes(self, *, label_selector: str | None = None) -> list[Manifest]:
        return self.nodes

    def list_pods(self, *, node_name: str | None = None, label_selector: str | None = None) -> list[Manifest]:
        return self.pods

    def list_pending_pods(self) -> list[Manifest]:
        return []

    def get_node(self, name: str) -> Manifest | None:
        return None

    def list_daemonsets(self) -> list[Manifest]:
        return []

    def list_pdbs(self) -> list[Manifest]:
        return []

    def patch_node(self, name: str, patch: NodePatch) -> Manifest | None:
        return None

    def evict_pod(self, namespace: str, name: str, *, uid: str | None = None) -> EvictionResult:
        return EvictionResult("not-found")

    def delete_pod(self, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> bool:
        return False

    def delete_node(self, name: str) -> bool:
        return False

    def post_event(self, event: KubeEvent) -> None:
        return None


def _stamp(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def build(
    nodes: int, pods_per_node: int, fill: tuple[float, float] = (0.15, 0.95), seed: int = 5
) -> tuple[ClusterConfig, ListCluster, MemoryClaimStore]:
    rng = random.Random(seed)
    catalog = real_catalog("us-east-1")
    node_class = NodeClass(name="default", origin=Origin("karpenter.k8s.aws/v1", "EC2NodeClass"))
    pool = NodePool(
        name="default",
        origin=Origin("karpenter.sh/v1", "NodePool"),
        node_class="default",
        requirements=(
            Requirement(wk.CAPACITY_TYPE, "In", ("on-demand",)),
            Requirement(wk.ZONE, "In", ZONES),
            Requirement("karpenter.k8s.aws/instance-family", "In", ("m5", "c5", "r5")),
        ),
        disruption=Disruption("WhenEmptyOrUnderutilized", 0, (Budget(nodes="10%"),)),
        expiry=Expiry(after_seconds=None),
    )
    config = ClusterConfig("bench", "us-east-1", "1.31", (pool,), (node_class,))
    deployments = [(f"app-{k}", rng.choice(CPU_MENU), rng.choice(MEMORY_MENU)) for k in range(50)]
    store = MemoryClaimStore()
    node_manifests: list[Manifest] = []
    pod_manifests: list[Manifest] = []
    for index in range(nodes):
        type_name = rng.choice(NODE_TYPES)
        instance_type = catalog[type_name]
        zone = ZONES[index % 3]
        room = allocatable(instance_type, pool.effective_kubelet(node_class), node_class, config.settings)
        name, instance_id = f"node-{index:04d}", f"i-{index:017x}"
        labels = {
            **instance_type.node_labels(),
            wk.ZONE: zone,
            wk.CAPACITY_TYPE: "on-demand",
            wk.NODEPOOL: "default",
            wk.HOSTNAME: name,
            wk.INITIALIZED: "true",
            wk.NODECLASS: "default",
        }
        quantities = room.to_quantities()
        node_manifests.append(
            {
                "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels},
                "spec": {"providerID": provider_id(zone, instance_id)},
                "status": {
                    "allocatable": quantities,
                    "capacity": quantities,
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
        price = min(
            o.price for o in instance_type.offerings if o.zone == zone and o.capacity_type == "on-demand"
        )
        store.put(
            NodeClaim(
                id=f"claim-{index}",
                nodepool="default",
                node_class="default",
                instance_type=type_name,
                zone=zone,
                capacity_type="on-demand",
                price=price,
                instance_id=instance_id,
                node_name=name,
                provider_id=provider_id(zone, instance_id),
                state="initialized",
                launched_at=NOW - 86400,
                initialized_at=NOW - 86000,
                created_at=NOW - 86400,
            )
        )
        budget_cpu = rng.uniform(*fill) * room.get("cpu")  # how full this node was packed
        used = 0
        for slot in range(pods_per_node):
            app, cpu, memory = deployments[rng.randrange(len(deployments))]
            millis = int(float(cpu[:-1]) if cpu.endswith("m") else float(cpu) * 1000)
            if used + millis > budget_cpu and slot > 0:
                app, cpu, memory = deployments[0][0], "100m", "256Mi"
                millis = 100
            used += millis
            pod_name = f"{app}-{index}-{slot}"
            pod_manifests.append(
                {
                    "metadata": {
                        "name": pod_name,
                        "namespace": "default",
                        "uid": f"uid-{pod_name}",
                        "labels": {"app": app},
                        "creationTimestamp": _stamp(NOW - 7200),
                        "ownerReferences": [{"kind": "ReplicaSet", "name": f"{app}-rs", "controller": True}],
                    },
                    "spec": {
                        "nodeName": name,
                        "containers": [
                            {"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
                        ],
                    },
                    "status": {
                        "phase": "Running",
                        "conditions": [
                            {
                                "type": "PodScheduled",
                                "status": "True",
                                "lastTransitionTime": _stamp(NOW - 7200),
                            }
                        ],
                    },
                }
            )
    return config, ListCluster(node_manifests, pod_manifests), store


def run(
    nodes: int, pods_per_node: int, repeat: int, profile: bool, fill: tuple[float, float] = (0.15, 0.95)
) -> dict[str, Any]:
    config, cluster, store = build(nodes, pods_per_node, fill)
    catalog = real_catalog("us-east-1")
    timings: list[dict[str, float]] = []
    result: DisruptionPlan | None = None
    profiler = cProfile.Profile() if profile else None
    for _ in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        snapshot = take_snapshot(cluster, store, MemoryOfferingAvailability(), catalog, config, NOW)
        snapped = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        result = planner.plan(replace(snapshot.input))
        if profiler is not None:
            profiler.disable()
        planned, cpu_planned = time.perf_counter(), time.process_time()
        timings.append(
            {
                "snapshot_s": round(snapped - started, 3),
                "plan_s": round(planned - snapped, 3),
                "pass_s": round(planned - started, 3),
                "pass_cpu_s": round(cpu_planned - cpu_started, 3),
            }
        )
    assert result is not None
    decisions = [
        {
            "reason": d.reason,
            "nodes": len(d.nodes),
            "replacements": [c.instance_type for c in d.replacements],
            "savings_per_hour": d.savings_per_hour,
            "explanation": d.explanation[:160],
        }
        for d in result.decisions
    ]
    report = {
        "nodes": nodes,
        "pods": nodes * pods_per_node,
        "fill": list(fill),
        "catalog_types": len(catalog),
        "runs": timings,
        "best_pass_s": min(t["pass_s"] for t in timings),
        "decisions": decisions,
        "passed_over": len(result.passed_over),
        "target_s": 10.0,
    }
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--pods-per-node", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--fill",
        type=float,
        nargs=2,
        default=(0.15, 0.95),
        metavar=("LOW", "HIGH"),
        help="each node's cpu is packed to a uniform share in [LOW, HIGH]",
    )
    args = parser.parse_args()
    report = run(args.nodes, args.pods_per_node, args.repeat, args.profile, tuple(args.fill))
    print(json.dumps(report, indent=2))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
