"""The warm container's snapshot (`services.warm_snapshot`) and node bases (`core.scheduling.node_bases`)
equal a rebuild after any sequence of watch changes: pods that come, go, bind, finish, change labels or cannot
be read; nodes that come, go, are cordoned, relabelled or report no room; relists (every object new); and the
solver's working state built from the kept bases equals the one built from scratch (topology counts kept and
updated from the changed nodes included); the lifecycle's node
observations are kept only for the same node objects."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from longshore.core import labels as wk
from longshore.core.model import ClusterConfig, Taint
from longshore.core.requirements import Requirements
from longshore.core.resources import Resources
from longshore.core.scheduling.node_bases import NodeBases
from longshore.core.scheduling.solver_existing import could_fit_any
from longshore.core.scheduling.solver_state import Placed, PodClass, SolverState, Unit
from longshore.core.scheduling.templates import POD_SLOT
from longshore.services import snapshot
from longshore.services.node_observations import observe, observe_all
from longshore.services.warm_snapshot import WarmSnapshot
from tests.builders import (
    anti_affinity,
    catalog,
    instance_type,
    node,
    pod,
    pod_manifest,
    pool,
    scheduling_input,
)

ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
CONFIG = ClusterConfig(
    "test",
    "us-east-1",
    "1.31",
    node_pools=(pool(startup_taints=(Taint("boot", "NoSchedule"),)),),
    node_classes=(),
)


def _node(rng: random.Random, name: str) -> dict[str, Any]:
    labels = {wk.ZONE: rng.choice(ZONES), "kind": rng.choice("ab")}
    if rng.random() < 0.5:
        labels[wk.NODEPOOL] = "default"
        if rng.random() < 0.7:
            labels[wk.INITIALIZED] = "true"
    status: dict[str, Any] = {"conditions": [{"type": "Ready", "status": "True"}]}
    if rng.random() < 0.9:
        status["allocatable"] = {"cpu": rng.choice(("4", "8")), "memory": "16Gi", "pods": "20"}
        status["capacity"] = dict(status["allocatable"])
    spec: dict[str, Any] = {}
    if rng.random() < 0.1:
        spec["unschedulable"] = True
    if rng.random() < 0.2:
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    return {
        "metadata": {"name": name, "labels": labels, "resourceVersion": str(rng.random())},
        "spec": spec,
        "status": status,
    }


def _pod(rng: random.Random, name: str, nodes: list[str]) -> dict[str, Any]:
    bound = nodes and rng.random() < 0.85
    manifest = pod_manifest(
        name,
        cpu=rng.choice(("100m", "500m", "1", "bad")) if rng.random() < 0.97 else "bad",
        labels={"app": rng.choice("xyz"), **({"tier": "web"} if rng.random() < 0.5 else {})},
        affinity=anti_affinity("x", rng.choice((wk.HOSTNAME, wk.ZONE))) if rng.random() < 0.1 else None,
        node_name=rng.choice(nodes) if bound else "",
    )
    manifest["metadata"]["resourceVersion"] = str(rng.random())
    status: dict[str, Any] = {"phase": "Running" if bound else "Pending"}
    if bound and rng.random() < 0.1:
        status["phase"] = "Succeeded"
    if not bound:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    if rng.random() < 0.05:
        manifest["metadata"]["deletionTimestamp"] = "2026-11-25T00:00:00Z"
    manifest["status"] = status
    return manifest


def _fresh(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> tuple[object, ...]:
    cache = snapshot.PodCache()
    pending, skipped = snapshot.pending_pods(pods, cache)
    bound, skipped_bound = snapshot.bound_pods(pods, cache)
    existing, skipped_nodes = snapshot.existing_nodes(nodes, bound, CONFIG)
    return pending, skipped, skipped_bound, existing, skipped_nodes


def _solver_view(solver: SolverState) -> tuple[object, ...]:
    return (
        [(s.node, s.labels, s.free, s.pods, s.taints) for s in (*solver.nodes, *solver.in_flight)],
        solver.placed,
        solver.host_anti,
        solver.domain_anti,
        [list(solver._existing_positions(key, value)) for key, value in LABELS],  # the index, kept or built
        [_tallies(solver, key) for key in (wk.ZONE, wk.HOSTNAME)],  # counts, kept across changes or counted
    )


def _tallies(solver: SolverState, key: str) -> list[dict[str, int]]:
    """Topology counts of the running pods: anchored on each label of `LABELS`, and one without an anchor."""
    found = [solver.tally(("test", k, v), key, _labelled(k, v), (k, v)) for k, v in LABELS]
    found.append(solver.tally(("test", "web or x"), key, _web_or_x))
    return found


def _labelled(key: str, value: str) -> Callable[[Placed], bool]:
    return lambda placed: placed.namespace == "default" and placed.labels.get(key) == value


def _web_or_x(placed: Placed) -> bool:
    return placed.labels.get("tier") == "web" or placed.labels.get("app") == "x"


LABELS = (("app", "x"), ("app", "y"), ("app", "z"), ("tier", "web"), ("absent", "x"))


def _reference(solver: SolverState) -> tuple[object, ...]:
    """Free room and topology records as the solver computed them before `node_bases` (written out again)."""
    free, placed = [], []
    for state in (*solver.nodes, *solver.in_flight):
        node_ = state.node
        live = [p for p in node_.pods if not p.is_terminal]
        used = sum((p.requests + POD_SLOT for p in live), Resources.of({}))
        free.append({name: amount - used.get(name) for name, amount in node_.allocatable.items})
        for p in live:
            if p.counts_for_topology():
                domains = {**dict(node_.labels), wk.HOSTNAME: node_.name}
                placed.append(Placed(p.label_map(), p.namespace, domains, 1, p.pod_anti_affinity))
    return free, placed


def _change(rng: random.Random, nodes: dict[str, dict[str, Any]], pods: dict[str, dict[str, Any]]) -> None:
    """One watch event's worth of change (a changed object is a new dict, as the watch cache makes)."""
    names = sorted(nodes)
    roll = rng.random()
    if roll < 0.3 or not pods:
        name = f"p{rng.randrange(10_000)}"
        pods[name] = _pod(rng, name, names)
    elif roll < 0.5:
        del pods[rng.choice(sorted(pods))]
    elif roll < 0.7:  # bind, finish, relabel: a new object under the same name
        name = rng.choice(sorted(pods))
        changed = copy.deepcopy(pods[name])
        what = rng.random()
        if what < 0.4 and names:
            changed["spec"]["nodeName"] = rng.choice(names)
            changed["status"] = {"phase": "Running"}
        elif what < 0.6:
            changed["status"]["phase"] = "Failed"
        else:
            changed["metadata"]["labels"] = {"app": rng.choice("xyz")}
        pods[name] = changed
    elif roll < 0.8:
        name = f"n{rng.randrange(60)}"
        nodes[name] = _node(rng, name)
    elif roll < 0.88 and nodes:
        del nodes[rng.choice(names)]
    elif nodes:  # relabel or cordon
        name = rng.choice(names)
        changed = copy.deepcopy(nodes[name])
        changed["metadata"]["labels"]["kind"] = rng.choice("abc")
        changed["spec"]["unschedulable"] = rng.random() < 0.3
        nodes[name] = changed


def test_warm_snapshot_and_bases_equal_a_rebuild_after_random_changes() -> None:
    for seed in range(12):
        rng = random.Random(seed)
        nodes = {f"n{i}": _node(rng, f"n{i}") for i in range(30)}
        pods: dict[str, dict[str, Any]] = {}
        for i in range(300):
            pods[f"p{i}"] = _pod(rng, f"p{i}", sorted(nodes))
        warm = WarmSnapshot()
        cache = snapshot.PodCache()  # the provisioner's run memo (`PodCache`), across the passes
        recounted = 0
        pool_catalog = catalog(instance_type("m5.xlarge"))
        for step in range(40):
            for _ in range(rng.randrange(0, 25)):
                _change(rng, nodes, pods)
            if step % 13 == 12:  # a relist: every object new, equal to the old one
                nodes = {k: copy.deepcopy(v) for k, v in nodes.items()}
                pods = {k: copy.deepcopy(v) for k, v in pods.items()}
            node_list = [nodes[k] for k in sorted(nodes)]
            pod_list = [pods[k] for k in sorted(pods)]
            seen = warm.update(node_list, pod_list, CONFIG, cache)
            listed = {(snapshot.pod_uid(m), m["metadata"]["resourceVersion"]) for m in pod_list}
            assert set(cache._pods) <= listed  # what left the list is forgotten
            got = (seen.pending, seen.skipped_pending, seen.skipped_bound, seen.existing, seen.skipped_nodes)
            assert got == _fresh(node_list, pod_list), (seed, step)
            inp = scheduling_input((), [pool()], pool_catalog, nodes=seen.existing)
            kept = SolverState(replace(inp, bases=warm.bases))
            assert _solver_view(kept) == _solver_view(SolverState(inp)), (seed, step)
            recounted += warm.bases.recounted  # counts brought up to date from the changed nodes
            again = SolverState(replace(inp, bases=warm.bases))  # the same bases: indexes kept
            assert _solver_view(again) == _solver_view(SolverState(inp)), (seed, step)
            assert ([s.free for s in kept.nodes], kept.placed) == _reference(kept), (seed, step)
        assert warm.rebuilt_nodes < len(nodes)  # the last pass rebuilt only what changed
        assert recounted > 0, seed  # the kept counts were updated, not only counted again


def test_unchanged_lists_rebuild_nothing_and_another_config_rebuilds_everything() -> None:
    rng = random.Random(7)
    nodes = [_node(rng, f"n{i}") for i in range(10)]
    pods = [_pod(rng, f"p{i}", [f"n{i}" for i in range(10)]) for i in range(50)]
    warm, cache = WarmSnapshot(), snapshot.PodCache()
    first = warm.update(nodes, pods, CONFIG, cache)
    assert warm.rebuilt_nodes == len(nodes)
    again = warm.update(nodes, pods, CONFIG, cache)
    assert warm.rebuilt_nodes == 0
    assert all(a is b for a, b in zip(first.existing, again.existing, strict=True))
    other = ClusterConfig("test", "us-east-1", "1.31", node_pools=(), node_classes=())
    warm.update(nodes, pods, other, cache)
    assert warm.rebuilt_nodes == len(nodes)
    doubled = warm.update(nodes, [*pods, pods[0]], other, cache)  # the same object twice: a plain rebuild
    assert doubled.existing == _fresh_existing(nodes, [*pods, pods[0]], other)


def _fresh_existing(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], config: ClusterConfig) -> object:
    bound, _ = snapshot.bound_pods(pods)
    return snapshot.existing_nodes(nodes, bound, config)[0]


def test_node_bases_keep_one_entry_per_live_node() -> None:
    rng = random.Random(3)
    nodes = [_node(rng, f"n{i}") for i in range(5)]
    existing, _ = snapshot.existing_nodes(nodes, (), CONFIG)
    bases = NodeBases()
    first = [bases.base(n) for n in existing]
    assert [bases.base(n) for n in existing] == first and bases.built == len(existing)
    bases.retain(existing[:2])
    assert len(bases) == 2


def test_full_nodes_are_left_out_of_the_existing_phase() -> None:
    inp = scheduling_input((), [pool()], catalog(instance_type("m5.xlarge")))
    solver = SolverState(inp)
    small, large = pod("small", cpu="500m"), pod("large", cpu="3")
    classes = [PodClass([p], p, p.requests, p.label_map()) for p in (small, large)]
    units = [Unit(c, Requirements(()), list(c.pods)) for c in classes]
    half = small.requests.get("cpu")
    free = [{"cpu": half - 1, "memory": 10**12, "pods": 5}, {"cpu": half + 1, "memory": 10**12, "pods": 5}]
    states = [solver.node_state(n, b) for n, b in (solver.base(x) for x in _nodes(len(free)))]
    for state, room in zip(states, free, strict=True):
        state.free = dict(room)
    assert could_fit_any(units, states) == [states[1]]  # the smallest pod (500m) fits only the second
    units[0].pods = []  # only the large pod left: no node has 3 cpu
    assert could_fit_any(units, states) == []


def _nodes(count: int) -> list[Any]:
    return [node(f"n{i}", zone=ZONES[0]) for i in range(count)]


def test_node_observations_are_reused_only_for_the_same_objects() -> None:
    rng = random.Random(5)
    nodes = [_node(rng, f"n{i}") for i in range(8)]
    first = observe_all(nodes)
    assert first == [observe(n) for n in nodes]
    changed = copy.deepcopy(nodes[3])
    changed["metadata"]["labels"]["kind"] = "c"
    changed["spec"]["taints"] = [{"key": "new", "effect": "NoSchedule"}]
    later = [*nodes[:3], changed, *nodes[4:], _node(rng, "n9")]
    again = observe_all(later)
    assert again == [observe(n) for n in later]
    assert all(a is b for a, b in zip(first[:3], again[:3], strict=True))  # unchanged objects: kept


def test_an_update_that_raises_half_way_leaves_nothing_behind() -> None:
    rng = random.Random(11)
    nodes = [_node(rng, f"n{i}") for i in range(4)]
    pods = [_pod(rng, f"p{i}", ["n0", "n1"]) for i in range(20)]
    warm, cache = WarmSnapshot(), snapshot.PodCache()
    warm.update(nodes, pods, CONFIG, cache)
    broken = {"metadata": {"name": "zz", "namespace": "default"}, "spec": ["not", "a", "mapping"]}
    with pytest.raises(AttributeError):  # as `snapshot.bound_pods` raises on it
        warm.update(nodes, [*pods, broken], CONFIG, cache)
    again = warm.update(nodes, pods, CONFIG, cache)
    fresh = _fresh(nodes, pods)
    assert (again.pending, again.existing, again.skipped_nodes) == (fresh[0], fresh[3], fresh[4])
