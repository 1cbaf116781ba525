"""Benchmark workloads: pods, pools and the catalog they run against.

* `karpenter_mix(n)`: Karpenter's scheduling benchmark (`makeDiversePods` in kubernetes-sigs/karpenter
  `pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go`): 400 fake types,
  one pool with huge limits, five equal fifths of pods: generic; zone spread (maxSkew 1, DoNotSchedule);
  hostname spread (maxSkew 1, DoNotSchedule); zone pod affinity; hostname anti-affinity (all `app=nginx`, so
  mutually anti-affine, as in Karpenter). cpu uniform over {100m, 250m, 500m, 1, 1.5} and memory over {100Mi,
  256Mi, 512Mi, 1Gi, 2Gi, 4Gi}, seeded. Labels and selectors pick one of seven values per pod, as Karpenter's
  do. One difference: Karpenter draws a pod's label and its selector independently (and the spread pods share
  `my-label` with the generic pods); here each constrained pod selects its own value under its own key.
  `faithful=True` builds Karpenter's exact draw: the engine places every pod, but final-state zone skew
  counted over pods the spread does not constrain (generic and affinity pods carrying its label) exceeds 1
  (Kubernetes only checks skew when the constrained pod is placed), so the benchmark uses the self-selecting
  form.
* `deployment_mix(n, spot_zones)`: 25 deployments, cpu 100m-8, 1-8 GiB per vCPU, Dirichlet replica counts,
  on the real us-east-1 catalog (the 837 c/m/r types), on-demand in one zone, or spot and on-demand in
  three zones.
* `constrained_mix(n)`: the same deployments, one fifth each with zonal spread, on-demand only, hostname
  anti-affinity (at most 40 replicas), pinned to one zone, and free; spot and on-demand in three zones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from bench.catalogs import fake_catalog, real_catalog
from longshore.core import labels as wk
from longshore.core.catalog import Catalog
from longshore.core.model import NodeClass, NodePool, Origin, Requirement
from longshore.core.pod_manifest import pod_from_manifest
from longshore.core.pods import Pod
from longshore.core.resources import Limits

POOL_ORIGIN = Origin("karpenter.sh/v1", "NodePool")
CLASS = NodeClass(name="default", origin=Origin("karpenter.k8s.aws/v1", "EC2NodeClass"))
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
#: The general-purpose, compute and memory families (837 types in us-east-1): what such a pool usually allows.
CATEGORIES = Requirement(wk.INSTANCE_CATEGORY, "In", ("c", "m", "r"))


@dataclass(frozen=True)
class Workload:
    name: str
    pods: tuple[Pod, ...]
    pools: tuple[NodePool, ...]
    catalog: Catalog
    constrained: bool

    @property
    def size(self) -> int:
        return len(self.pods)


def _pool(requirements: list[Requirement], limits: dict[str, str] | None = None) -> NodePool:
    return NodePool(
        name="default",
        origin=POOL_ORIGIN,
        node_class="default",
        requirements=tuple(requirements),
        limits=Limits.parse(limits or {}),
    )


def _pod(name: str, cpu: str, memory: str, labels: dict[str, str], spec: dict[str, Any] | None = None) -> Pod:
    body: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    }
    body.update(spec or {})
    return pod_from_manifest(
        {"metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": body}
    )


def _term(key: str, value: str, topology: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {key: value}}, "topologyKey": topology}


def karpenter_mix(count: int, seed: int = 42, *, faithful: bool = False) -> Workload:
    """Karpenter's `makeDiversePods`. With `faithful`, labels and selectors are drawn independently, exactly as
    Karpenter's benchmark draws them (spread selectors then also count generic pods); by default each
    constrained pod selects its own label value, as real deployments do."""
    rng = random.Random(seed)
    cpus = ("100m", "250m", "500m", "1", "1500m")
    mems = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
    values = "abcdefg"
    fifth = count // 5
    pods: list[Pod] = []
    for i in range(count):
        shape = (rng.choice(cpus), rng.choice(mems))
        value = rng.choice(values)
        chosen = rng.choice(values) if faithful else value  # the value the pod's selector asks for
        kind = min(i // fifth, 4) if fifth else 0
        if i >= 5 * fifth:
            kind = 0
        name = f"p-{i}"
        if kind == 0:
            pods.append(_pod(name, *shape, {"my-label": value}))
        elif kind in (1, 2):
            key = "my-label" if faithful else ("zspread" if kind == 1 else "hspread")
            spread = {
                "maxSkew": 1,
                "topologyKey": wk.ZONE if kind == 1 else wk.HOSTNAME,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {key: chosen}},
            }
            pods.append(_pod(name, *shape, {key: value}, {"topologySpreadConstraints": [spread]}))
        elif kind == 3:
            key = "my-affininity" if faithful else "my-affinity"
            pods.append(
                _pod(
                    name,
                    *shape,
                    {key: value},
                    {
                        "affinity": {
                            "podAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [
                                    _term(key, chosen, wk.ZONE)
                                ]
                            }
                        }
                    },
                )
            )
        else:
            pods.append(
                _pod(
                    name,
                    *shape,
                    {"app": "nginx"},
                    {
                        "affinity": {
                            "podAntiAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [
                                    _term("app", "nginx", wk.HOSTNAME)
                                ]
                            }
                        }
                    },
                )
            )
    pool = _pool(
        [Requirement(wk.CAPACITY_TYPE, "In", ("spot", "on-demand"))],
        {"cpu": "10000000", "memory": "10000000Gi"},
    )
    name = f"karpenter-{'exact' if faithful else 'mix'}-{count}"
    return Workload(name, tuple(pods), (pool,), fake_catalog(400), True)


def _deployments(rng: random.Random, count: int, kinds: int = 25) -> list[tuple[str, str, str, int]]:
    weights = [rng.gammavariate(1.0, 1.0) for _ in range(kinds)]
    total = sum(weights)
    shapes = []
    for k in range(kinds):
        milli = rng.choice((100, 250, 500, 1000, 2000, 4000, 8000))
        per_cpu = rng.choice((1, 2, 4, 8))
        memory = f"{milli * per_cpu * 1024 // 1000}Mi"
        replicas = max(1, round(weights[k] / total * count))
        shapes.append((f"d{k}", f"{milli}m", memory, replicas))
    return shapes


def deployment_mix(count: int, *, spot_zones: bool, seed: int = 7) -> Workload:
    rng = random.Random(seed)
    pods = [
        _pod(f"{name}-{i}", cpu, memory, {"app": name})
        for name, cpu, memory, replicas in _deployments(rng, count)
        for i in range(replicas)
    ]
    if spot_zones:
        requirements = [
            CATEGORIES,
            Requirement(wk.CAPACITY_TYPE, "In", ("spot", "on-demand")),
            Requirement(wk.ZONE, "In", ZONES),
        ]
        name = f"deploy-spot-3z-{len(pods)}"
    else:
        requirements = [
            CATEGORIES,
            Requirement(wk.CAPACITY_TYPE, "In", ("on-demand",)),
            Requirement(wk.ZONE, "In", ZONES[:1]),
        ]
        name = f"deploy-od-1z-{len(pods)}"
    return Workload(name, tuple(pods), (_pool(requirements),), real_catalog("us-east-1"), spot_zones)


def constrained_mix(count: int, seed: int = 11) -> Workload:
    rng = random.Random(seed)
    pods: list[Pod] = []
    for index, (name, cpu, memory, replicas) in enumerate(_deployments(rng, count)):
        kind = index % 5
        labels = {"app": name}
        spec: dict[str, Any] = {}
        if kind == 0:
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": wk.ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": labels},
                }
            ]
        elif kind == 1:
            spec["nodeSelector"] = {wk.CAPACITY_TYPE: "on-demand"}
        elif kind == 2:
            replicas = min(replicas, 40)
            spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term("app", name, wk.HOSTNAME)]
                }
            }
        elif kind == 3:
            spec["nodeSelector"] = {wk.ZONE: ZONES[0]}
        pods.extend(_pod(f"{name}-{i}", cpu, memory, labels, spec) for i in range(replicas))
    pool = _pool(
        [
            CATEGORIES,
            Requirement(wk.CAPACITY_TYPE, "In", ("spot", "on-demand")),
            Requirement(wk.ZONE, "In", ZONES),
        ]
    )
    return Workload(f"constrained-{len(pods)}", tuple(pods), (pool,), real_catalog("us-east-1"), True)
