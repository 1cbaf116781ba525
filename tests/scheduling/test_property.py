"""Hypothesis: whatever the pods, pools and nodes, no plan overcommits a node or breaks a rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longshore.core import labels as wk
from longshore.core.model import Taint
from longshore.core.scheduling import solve
from tests.builders import (
    anti_affinity,
    catalog,
    instance_type,
    node,
    pod,
    pool,
    req,
    scheduling_input,
    zone_spread,
)
from tests.scheduling.checker import check

pytestmark = pytest.mark.slow

ZONES = ("us-east-1a", "us-east-1b")
TYPES = catalog(
    instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096, zones=ZONES, spot_price=0.04),
    instance_type("m5.2xlarge", vcpus=8, memory_gib=32, price=0.384, zones=ZONES, spot_price=0.15),
    instance_type("r5.xlarge", vcpus=4, memory_gib=32, price=0.252, zones=ZONES[:1]),
)

pod_specs = st.lists(
    st.tuples(
        st.sampled_from(["100m", "500m", "1", "3", "9"]),
        st.sampled_from(["128Mi", "1Gi", "6Gi", "40Gi"]),
        st.sampled_from(["none", "spread", "anti", "zone-a", "tolerate"]),
        st.integers(1, 6),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=30, deadline=None)
@given(pod_specs, st.booleans(), st.booleans())
def test_plans_never_overcommit_or_break_constraints(specs, with_node, limited):
    pods = []
    for index, (cpu, memory, kind, count) in enumerate(specs):
        app = f"app{index}"
        options: dict[str, object] = {"cpu": cpu, "memory": memory, "labels": {"app": app}}
        if kind == "spread":
            options["spread"] = [zone_spread(app)]
        elif kind == "anti":
            options["affinity"] = anti_affinity(app)
        elif kind == "zone-a":
            options["node_selector"] = {wk.ZONE: "us-east-1a"}
        elif kind == "tolerate":
            options["tolerations"] = [{"key": "special", "operator": "Exists"}]
        pods += [pod(f"{app}-{i}", **options) for i in range(count)]
    pools = [
        pool(
            "special",
            weight=10,
            taints=[Taint("special", "NoSchedule")],
            limits={"cpu": "8"} if limited else None,
        ),
        pool(
            "general",
            requirements=[req(wk.CAPACITY_TYPE, "In", "spot", "on-demand")],
            limits={"cpu": "24"} if limited else None,
        ),
    ]
    nodes = (
        (node("n1", allocatable={"cpu": "2", "memory": "4Gi", "pods": "8"}, pool_name=None),)
        if with_node
        else ()
    )
    inp = scheduling_input(pods, pools, TYPES, nodes=nodes)
    plan = solve(inp)
    assert check(inp, plan) == []
