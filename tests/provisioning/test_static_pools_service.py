"""The provisioner's static NodePools step (`services.static_pools`) on the planner's fakes and the real
disruption workflow: missing nodes launched without pods, extras removed through the workflow (PDBs honoured,
budgets not consulted), nothing done when the count is right."""

from __future__ import annotations

import logging
from dataclasses import replace

from longshore.core.resources import Limits
from longshore.services.static_pools import StaticPools
from tests.planner.fakes import TYPES, PlannerWorld, a_pool, cluster_config
from tests.workflow.fakes import make_pdb

logging.getLogger("longshore.services.static_pools").setLevel(logging.INFO)


def _static_pools(w: PlannerWorld) -> StaticPools:
    """The service over `w`'s fakes, with the claim store a cold container would read too."""
    return StaticPools(
        w.config,
        w.cluster,
        w.launcher,
        w.offerings,
        lambda: TYPES,
        w.metrics,
        w.workflows,
        store=w.world.claims,
    )


def _world(replicas: int, nodes: int, *, limit: int | None = None) -> tuple[PlannerWorld, StaticPools]:
    static = replace(a_pool("reserved", policy="WhenEmpty", after=None), replicas=replicas)
    if limit is not None:
        static = replace(static, limits=Limits.of({"nodes": limit}))
    w = PlannerWorld(cluster_config(static))
    for i in range(nodes):
        w.add_node(f"r{i}", pool_name="reserved", created=w.clock.now() - 3600 + i)
    pools = _static_pools(w)
    return w, pools


def test_missing_nodes_are_launched_with_no_pods_at_the_cheapest_offering_of_the_pool() -> None:
    w, pools = _world(replicas=3, nodes=1)
    outcome = pools.reconcile(w.world.claims.list(), w.clock.now())
    assert len(outcome.launched) == 2 and outcome.plans[0].launch == 2
    assert all(r.claim.pods == () and r.claim.nodepool == "reserved" for r in w.launcher.requests)
    assert {r.options[0].instance_type for r in w.launcher.requests} == {"m5.large"}
    again = pools.reconcile(w.world.claims.list(), w.clock.now())  # the launches count: nothing more
    assert again.launched == () and again.plans[0].active == 3


def test_limits_nodes_caps_the_launches() -> None:
    w, pools = _world(replicas=5, nodes=2, limit=3)
    outcome = pools.reconcile(w.world.claims.list(), w.clock.now())
    assert len(outcome.launched) == 1 and "limits.nodes 3" in outcome.plans[0].held


def test_extras_are_drained_through_the_workflow_empty_ones_first_and_pdbs_hold_the_busy_one() -> None:
    w, pools = _world(replicas=1, nodes=3)
    w.add_pod("db-0", "r0", cpu="1", labels={"app": "db"})
    w.cluster.pdbs.append(make_pdb("db", {"app": "db"}, max_unavailable=0))
    outcome = pools.reconcile(w.world.claims.list(), w.clock.now())
    assert sorted(outcome.removing) == ["r1", "r2"]
    assert pools.reconcile(w.world.claims.list(), w.clock.now()).removing == ()  # not twice
    w.clock.advance(600)
    assert (
        set(w.cluster.nodes) == {"r0"} and w.metrics.total("NodesDisrupted", Reason="static-scale-down") == 2
    )
    scaled = replace(w.config, node_pools=(replace(w.config.node_pools[0], replicas=0),))
    pools = StaticPools(
        scaled,
        w.cluster,
        w.launcher,
        w.offerings,
        lambda: TYPES,
        w.metrics,
        w.workflows,
        store=w.world.claims,
    )
    assert pools.reconcile(w.world.claims.list(), w.clock.now()).removing == ("r0",)
    w.clock.advance(300)
    assert "r0" in w.cluster.nodes and w.cluster.pods_on("r0") == [
        "default/db-0"
    ]  # the PDB allows no eviction


def test_a_cold_start_between_the_decision_and_the_workflows_first_step_removes_exactly_one_node() -> None:
    """Issue #12: scale down by 1; the provisioner's container is replaced after it started the removal and
    before the workflow tainted the node. The new container reads the claim's durable mark and counts that node
    as leaving (before: the mark lived in the old container's memory, and a second node was removed)."""
    w, warm = _world(replicas=2, nodes=3)
    first = warm.reconcile(w.world.claims.list(), w.clock.now())
    assert len(first.removing) == 1
    [marked] = [c for c in w.world.claims.list() if c.node_name == first.removing[0]]
    assert marked.removal_started_at == w.clock.now()
    taints = [t for n in w.cluster.nodes.values() for t in (n.get("spec") or {}).get("taints") or ()]
    assert not [t for t in taints if t.get("key") == "karpenter.sh/disrupted"], "not tainted yet"
    cold = _static_pools(w)
    again = cold.reconcile(w.world.claims.list(), w.clock.now())
    assert again.removing == () and again.plans[0].active == 2
    w.clock.advance(600)
    assert len(w.cluster.nodes) == 2 and first.removing[0] not in w.cluster.nodes
    assert w.metrics.total("NodesDisrupted", Reason="static-scale-down") == 1


def test_a_dynamic_only_config_does_nothing() -> None:
    w = PlannerWorld(cluster_config(a_pool()))
    pools = _static_pools(w)
    assert pools.reconcile(w.world.claims.list(), w.clock.now()).plans == ()
