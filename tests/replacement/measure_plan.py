"""Time `ClusterReplacementLauncher.plan` for one node of an in-memory cluster of N nodes x 20 pods.

Run from the repository root: `PYTHONPATH=functions:. .venv/bin/python tests/replacement/measure_plan.py`.
The 20 pods of every node belong to one zone-spread deployment (maxSkew 1); the node replaced is `old`.
"""

from __future__ import annotations

import time

from tests.builders import zone_spread
from tests.replacement.conftest import (
    NOW,
    ZONES,
    Planning,
    cluster_config,
    node_manifest,
    old_claim,
    running_pod,
)


def measure(nodes: int, pods_per_node: int = 20) -> str:
    world = Planning(cluster_config())
    spread = [zone_spread("web", max_skew=1)]
    for n in range(nodes):
        name = "old" if n == 0 else f"node-{n}"
        world.cluster.add_node(
            node_manifest(name, f"i-{n:017d}", instance_type="m5.2xlarge", zone=ZONES[n % 3])
        )
        for p in range(pods_per_node):
            world.cluster.add_pod(
                running_pod(
                    f"web-{n}-{p}", name, cpu="250m", memory="512Mi", labels={"app": "web"}, spread=spread
                )
            )
    node = world.cluster.get_node("old")
    assert node is not None
    launcher = world.launcher()
    started = time.perf_counter()
    plan = launcher.plan(old_claim(node), node, "rotation", NOW)
    took_ms = (time.perf_counter() - started) * 1000.0
    claims = [(c.instance_type, c.zone, len(c.pods)) for c in plan.claims]
    return f"{nodes} nodes x {pods_per_node} pods: plan {took_ms:.0f} ms -> {claims}"


if __name__ == "__main__":
    for count in (10, 100, 1000):
        print(measure(count))
