"""The seed pools behave as the seeds describe (issue #3 acceptance), checked by the independent checker."""

from __future__ import annotations

from collections import Counter

import pytest

from longshore.config import load_cluster
from longshore.config.workloads import load_workloads
from longshore.core import labels as wk
from longshore.core.catalog import Catalog
from longshore.core.scheduling import Plan, SchedulingInput, solve
from tests.builders import catalog, instance_type, real_catalog, replicas, scheduling_input
from tests.conftest import SEED_WORKLOADS, VALID_MANIFESTS
from tests.scheduling.checker import check


def _plan(
    manifest: str, pods, the_catalog: Catalog, region: str = "us-east-1"
) -> tuple[SchedulingInput, Plan]:
    config = load_cluster([VALID_MANIFESTS / manifest], region=region)
    inp = scheduling_input(pods, config.node_pools, the_catalog, node_classes=config.node_classes)
    plan = solve(inp)
    assert check(inp, plan) == []
    return inp, plan


def _inflate(count: int):
    workloads = load_workloads([SEED_WORKLOADS / "inflate.yaml"], replicas={"inflate": count})
    return workloads.pods


@pytest.mark.slow
def test_inflate_on_valid_01_lands_on_cheapest_t_or_m_generation_3_or_5():
    the_catalog = real_catalog("us-east-1")
    _inp, plan = _plan("01-requirements-ttl-empty.yaml", _inflate(5), the_catalog)
    assert not plan.unschedulable
    assert sum(len(c.pods) for c in plan.new_claims) == 5
    for claim in plan.new_claims:
        labels = the_catalog[claim.instance_type].requirements()
        assert labels.values(wk.INSTANCE_CATEGORY) <= {"t", "m"}
        assert labels.values(wk.INSTANCE_GENERATION) <= {"3", "5"}
        assert claim.capacity_type == "on-demand"
        assert the_catalog[claim.instance_type].arch == "amd64"
    # no cheaper on-demand t/m gen-3/5 amd64 type can hold one inflate pod (1 cpu) on its own
    cheapest_single = min(
        o.price
        for it in the_catalog
        if it.label(wk.INSTANCE_CATEGORY) in ("t", "m")
        and it.label(wk.INSTANCE_GENERATION) in ("3", "5")
        and it.arch == "amd64"
        and it.vcpus >= 2
        for o in it.offerings
        if o.capacity_type == "on-demand"
    )
    assert plan.cost_per_hour <= 5 * cheapest_single + 1e-9


def test_inflate_prefers_one_node_when_costs_tie():
    tied = catalog(
        instance_type("m5.large", vcpus=2, memory_gib=8, price=0.1),
        instance_type("m5.xlarge", vcpus=4, memory_gib=16, price=0.3),
    )
    _, plan = _plan("01-requirements-ttl-empty.yaml", _inflate(3), tied)
    # 3 pods: three m5.large (0.3) or one m5.xlarge (0.3, holds 3): the tie goes to fewer nodes
    assert plan.cost_per_hour == pytest.approx(0.3)
    assert len(plan.new_claims) == 1


@pytest.mark.slow
def test_valid_04_fills_savings_plan_to_its_cpu_limit_then_spills_to_default():
    _inp, plan = _plan("04-weighted-savings-plan.yaml", _inflate(60), real_catalog("us-east-1"))
    by_pool = Counter(c.nodepool for c in plan.new_claims)
    savings = [c for c in plan.new_claims if c.nodepool == "savings-plan-instance"]
    assert {c.instance_type for c in savings} == {"m5.large"}
    assert by_pool["savings-plan-instance"] == 50  # 50 x 2 vCPU = the 100 vCPU limit
    spilled = sum(len(c.pods) for c in plan.new_claims if c.nodepool == "default")
    assert spilled == 60 - sum(len(c.pods) for c in savings) > 0
    assert not plan.unschedulable


def test_valid_04_reports_the_limit_when_nothing_else_can_take_the_pods():
    config = load_cluster([VALID_MANIFESTS / "04-weighted-savings-plan.yaml"])
    only_savings = tuple(p for p in config.node_pools if p.name == "savings-plan-instance")
    inp = scheduling_input(
        _inflate(60), only_savings, real_catalog("us-east-1"), node_classes=config.node_classes
    )
    plan = solve(inp)
    assert check(inp, plan) == []
    assert len(plan.unschedulable) == 10
    assert {reason for _, reason in plan.unschedulable} == {
        "pool savings-plan-instance: cpu limit 100 reached"
    }


def _gpu_catalog() -> Catalog:
    base = real_catalog("us-east-1")
    gpus = (
        instance_type(
            "p3.8xlarge",
            vcpus=32,
            memory_gib=244,
            price=12.24,
            extended={"nvidia.com/gpu": 4},
            zones=("us-east-1a", "us-east-1b"),
        ),
        instance_type(
            "p3.16xlarge",
            vcpus=64,
            memory_gib=488,
            price=24.48,
            extended={"nvidia.com/gpu": 8},
            zones=("us-east-1a", "us-east-1b"),
        ),
    )
    return Catalog((*base.instance_types, *gpus), region="us-east-1")


def test_valid_05_only_tolerating_pods_land_on_gpu_nodes():
    tolerate = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    pods = (
        *replicas(
            "train", 6, cpu="4", memory="16Gi", extra_requests={"nvidia.com/gpu": "1"}, tolerations=tolerate
        ),
        *replicas("web", 3, cpu="1", memory="1Gi"),
    )
    _inp, plan = _plan("05-gpu-tainted.yaml", pods, _gpu_catalog())
    on_gpu = {k for c in plan.new_claims for k in c.pods}
    assert on_gpu == {f"default/train-{i}" for i in range(6)}
    assert {c.instance_type for c in plan.new_claims} <= {"p3.8xlarge", "p3.16xlarge"}
    reasons = dict(plan.unschedulable)
    assert set(reasons) == {f"default/web-{i}" for i in range(3)}
    assert "does not tolerate taint nvidia.com/gpu=true:NoSchedule" in reasons["default/web-0"]


def test_valid_05_names_the_missing_memory():
    tolerate = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    pods = replicas("huge", 1, cpu="4", memory="600Gi", tolerations=tolerate)
    _, plan = _plan("05-gpu-tainted.yaml", pods, _gpu_catalog())
    ((_, reason),) = plan.unschedulable
    assert reason.startswith("pool gpu: no instance type has 600Gi of memory")


@pytest.mark.slow
def test_valid_08_keeps_to_its_two_zones_and_two_types():
    pods = (
        *replicas("api", 40, cpu="3", memory="4Gi"),
        *replicas(
            "spread",
            12,
            cpu="1",
            memory="1Gi",
            spread=[
                {
                    "maxSkew": 1,
                    "topologyKey": wk.ZONE,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "spread"}},
                }
            ],
        ),
    )
    _inp, plan = _plan(
        "08-c6i-zonal-expiring.yaml", pods, real_catalog("ap-northeast-2"), region="ap-northeast-2"
    )
    assert not plan.unschedulable
    assert {c.instance_type for c in plan.new_claims} <= {"c6i.8xlarge", "c6i.4xlarge"}
    assert {c.zone for c in plan.new_claims} <= {"ap-northeast-2a", "ap-northeast-2c"}
    for claim in plan.new_claims:
        assert set(claim.instance_types) <= {"c6i.8xlarge", "c6i.4xlarge"}
        assert {o.zone for o in claim.offerings} <= {"ap-northeast-2a", "ap-northeast-2c"}
    zones = Counter(c.zone for c in plan.new_claims for k in c.pods if "spread" in k)
    assert sorted(zones.values()) == [6, 6]


@pytest.mark.slow
def test_valid_07_capacity_spread_splits_two_to_three():
    pods = replicas(
        "web",
        10,
        cpu="1",
        memory="1Gi",
        spread=[
            {
                "maxSkew": 1,
                "topologyKey": "capacity-spread",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    )
    _inp, plan = _plan("07-capacity-spread.yaml", pods, real_catalog("us-east-1"))
    assert not plan.unschedulable
    per_value = Counter(dict(c.labels)["capacity-spread"] for c in plan.new_claims for _ in c.pods)
    assert sorted(per_value) == ["on-demand-1", "on-demand-2", "spot-1", "spot-2", "spot-3"]
    assert set(per_value.values()) == {2}
    on_demand = sum(n for v, n in per_value.items() if v.startswith("on-demand"))
    assert (on_demand, 10 - on_demand) == (4, 6)
    for claim in plan.new_claims:
        expected = "on-demand" if dict(claim.labels)["capacity-spread"].startswith("on-demand") else "spot"
        assert claim.capacity_type == expected
