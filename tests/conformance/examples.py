"""Example cases: every manifest in aws/karpenter-provider-aws `examples/` (kubernetes-sigs/karpenter has no
`examples/` folder at v1.14.1), rewritten under `tests/conformance/examples/` with the upstream path cited.

Rules: a NodePool/EC2NodeClass example must load through `load_cluster` (the CLI's path) and its pools must
schedule three 1-vCPU pods with the properties the example is about; a workload example is read with
`load_workloads` (Deployments scaled to `replicas`) and scheduled against a permissive pool, and must show
the behaviour it demonstrates (arm64, spot, GPUs, spreads ...).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longshore.config import load_cluster
from longshore.config.workloads import load_workloads
from longshore.core.pod_manifest import pod_from_manifest
from longshore.core.scheduling import SchedulingInput, solve
from tests.conformance import scheduling
from tests.conformance.model import AWS, Case, Source

HERE = Path(__file__).resolve().parent / "examples"
PERMISSIVE = Path(__file__).resolve().parent / "examples" / "permissive-pool.yaml"


def example(path: str, it: str, expect: dict[str, Any], *, replicas: int = 3, **marks: Any) -> Case:
    return Case(
        Source(AWS, f"examples/{path}"), it, {"path": path, "expect": expect, "replicas": replicas}, **marks
    )


def _inflate(count: int) -> tuple[Any, ...]:
    return tuple(
        pod_from_manifest(scheduling.pod(f"inflate-{i}", cpu="1", memory="256M", labels={"app": "inflate"}))
        for i in range(count)
    )


def run(case: Case) -> None:
    path = HERE / case.data["path"]
    if case.data["path"].startswith("v1/"):
        config = load_cluster([path])
        pods = _inflate(case.data["replicas"])
    else:
        config = load_cluster([PERMISSIVE])
        name = path.stem
        workloads = load_workloads([path], replicas={d: case.data["replicas"] for d in _deployments(path)})
        pods = workloads.pods
        assert pods, f"{name}: no pods read"
    inp = SchedulingInput(
        pods=pods,
        pools=config.node_pools,
        node_classes=config.node_classes,
        catalog=scheduling.catalog(),
        settings=config.settings,
    )
    scheduling.check(case.data["expect"], inp, solve(inp))


def _deployments(path: Path) -> list[str]:
    import yaml

    return [
        doc["metadata"]["name"]
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if doc and doc.get("kind") == "Deployment"
    ]
