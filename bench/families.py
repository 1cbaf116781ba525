"""Seeded workload families the engine was not tuned on (issue #16), on the real us-east-1 c/m/r catalog.

* `memory_heavy(n, seed)`: 12–20 deployments of 8–16 GiB per vCPU (250m–4 vCPU), spot and on-demand in
  three zones; a quarter of them on-demand only.
* `microservices(n, seed)`: 30–50 small services (100m–1 vCPU, 128 MiB–2 GiB per vCPU), each pod with a
  sidecar (100m–250m, 64–256 MiB) and an init container, every service spread over the three zones
  (maxSkew 1, DoNotSchedule), a third of them also with hostname anti-affinity (at most 30 replicas);
  on-demand only.
* `odd_shapes(n, seed)`: 15–25 deployments of unusual cpu:memory shapes (3 vCPU with 1 GiB, 250m with
  14 GiB, 7 vCPU with 5 GiB, …), spot and on-demand in three zones.
* `spot_batch(n, seed)`: 6–10 batch jobs (500m–8 vCPU, 2–4 GiB per vCPU) on a spot-only pool in three
  zones that asks for at least 5 instance families (`minValues`).
"""

from __future__ import annotations

import random
from typing import Any

from bench.catalogs import real_catalog
from bench.workloads import CATEGORIES, ZONES, Workload, _pod, _pool, _term
from longshore.core import labels as wk
from longshore.core.model import Requirement
from longshore.core.pod_manifest import pod_from_manifest
from longshore.core.pods import Pod

SPOT_AND_ON_DEMAND = [
    CATEGORIES,
    Requirement(wk.CAPACITY_TYPE, "In", ("spot", "on-demand")),
    Requirement(wk.ZONE, "In", ZONES),
]


def _split(rng: random.Random, total: int, kinds: int) -> list[int]:
    weights = [rng.gammavariate(1.0, 1.0) + 0.05 for _ in range(kinds)]
    return [max(1, round(w / sum(weights) * total)) for w in weights]


def memory_heavy(count: int = 1000, seed: int = 101) -> Workload:
    rng = random.Random(seed)
    pods: list[Pod] = []
    for k, replicas in enumerate(_split(rng, count, rng.randint(12, 20))):
        milli = rng.choice((250, 500, 1000, 2000, 4000))
        memory = f"{milli * rng.choice((8, 12, 16)) * 1024 // 1000}Mi"
        spec = {"nodeSelector": {wk.CAPACITY_TYPE: "on-demand"}} if k % 4 == 3 else {}
        pods += [_pod(f"m{k}-{i}", f"{milli}m", memory, {"app": f"m{k}"}, spec) for i in range(replicas)]
    pool = _pool(SPOT_AND_ON_DEMAND)
    return Workload(f"memory-heavy-s{seed}-{len(pods)}", tuple(pods), (pool,), real_catalog(), True)


def _container(name: str, cpu: str, memory: str) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": {"cpu": cpu, "memory": memory}}}


def microservices(count: int = 1000, seed: int = 202) -> Workload:
    rng = random.Random(seed)
    pods: list[Pod] = []
    for k, replicas in enumerate(_split(rng, count, rng.randint(30, 50))):
        name = f"svc{k}"
        milli = rng.choice((100, 250, 500, 750, 1000))
        memory = milli * rng.choice((128, 512, 1024, 2048)) // 1000
        side = (rng.choice((100, 150, 250)), rng.choice((64, 128, 256)))
        labels = {"app": name}
        spec: dict[str, Any] = {
            "initContainers": [_container("init", "50m", "64Mi")],
            "containers": [
                _container("app", f"{milli}m", f"{max(memory, 64)}Mi"),
                _container("proxy", f"{side[0]}m", f"{side[1]}Mi"),
            ],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": wk.ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": labels},
                }
            ],
        }
        if k % 3 == 0:
            replicas = min(replicas, 30)
            spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term("app", name, wk.HOSTNAME)]
                }
            }
        for i in range(replicas):
            manifest = {"metadata": {"name": f"{name}-{i}", "namespace": "default", "labels": labels}}
            pods.append(pod_from_manifest({**manifest, "spec": spec}))
    pool = _pool(
        [CATEGORIES, Requirement(wk.CAPACITY_TYPE, "In", ("on-demand",)), Requirement(wk.ZONE, "In", ZONES)]
    )
    return Workload(f"microservices-s{seed}-{len(pods)}", tuple(pods), (pool,), real_catalog(), True)


ODD = ((3000, 1024), (250, 14336), (7000, 5120), (1500, 11264), (5000, 2048), (600, 7168), (3500, 30720))


def odd_shapes(count: int = 1000, seed: int = 303) -> Workload:
    rng = random.Random(seed)
    pods: list[Pod] = []
    for k, replicas in enumerate(_split(rng, count, rng.randint(15, 25))):
        milli, mib = rng.choice(ODD)
        milli = int(milli * rng.uniform(0.8, 1.2)) // 10 * 10
        mib = int(mib * rng.uniform(0.8, 1.2))
        pods += [_pod(f"o{k}-{i}", f"{milli}m", f"{mib}Mi", {"app": f"o{k}"}) for i in range(replicas)]
    pool = _pool(SPOT_AND_ON_DEMAND)
    return Workload(f"odd-shapes-s{seed}-{len(pods)}", tuple(pods), (pool,), real_catalog(), True)


def spot_batch(count: int = 1000, seed: int = 404) -> Workload:
    rng = random.Random(seed)
    pods: list[Pod] = []
    for k, replicas in enumerate(_split(rng, count, rng.randint(6, 10))):
        milli = rng.choice((500, 1000, 2000, 4000, 8000))
        memory = f"{milli * rng.choice((2, 4)) * 1024 // 1000}Mi"
        pods += [_pod(f"b{k}-{i}", f"{milli}m", memory, {"job": f"b{k}"}) for i in range(replicas)]
    pool = _pool(
        [
            CATEGORIES,
            Requirement(wk.CAPACITY_TYPE, "In", ("spot",)),
            Requirement(wk.ZONE, "In", ZONES),
            Requirement(wk.INSTANCE_FAMILY, "Exists", (), min_values=5),
        ]
    )
    return Workload(f"spot-batch-s{seed}-{len(pods)}", tuple(pods), (pool,), real_catalog(), True)


def families(seeds: tuple[int, ...] = (1, 2)) -> list[Workload]:
    """Each family at 1,000 pods under two seeds (offset per family, so no two share a draw)."""
    result = []
    for seed in seeds:
        result += [
            memory_heavy(1000, 100 + seed),
            microservices(1000, 200 + seed),
            odd_shapes(1000, 300 + seed),
            spot_batch(1000, 400 + seed),
        ]
    return result
