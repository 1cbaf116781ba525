"""Scheduling cases: pools (Karpenter YAML), pods (Kubernetes manifests), existing nodes; what the plan must show.

Rules: pools are v1 NodePools written as changes over a minimal one and loaded through `longshore.config`
(so the YAML a user brings is what is scheduled); pods go through the production pod parser; the catalog is
the one `longshore plan` uses offline (EC2's us-east-1 shapes and zones, shipped prices). Karpenter's fake
cloud provider has a handful of made-up types; where an upstream count depends on them, the case asserts the
property the test is named for instead (same node, different zones, label values, unschedulable ...).

Expectations (all optional): `scheduled` / `unschedulable` (pod names, or "all"); `claims` (new nodes);
`same_node` / `different_nodes` (groups of pods); `labels` ({pod: {key: want}}, the node the pod lands on
carries it; see `_label_matches`); `not_labels` ({pod: {key: [values]}}); `on_node` ({pod: existing node});
`skew` ((topology key, pods, max)) the spread of those pods over that key's values; `counts` ((key, pods,
[n, ...])) pods per value, as upstream's `ExpectSkew(...).To(ConsistOf(...))` (pods "app=web" also counts the
bound pods labelled so); `domains` ((key, pods, count)) how many distinct values they use; `cheapest` (every claim is priced at its cheapest offering and no
allowed type at least as large is cheaper); `max_vcpus` ({pod: n}) every fallback type of the pod's claim has
at most n vCPUs (what is left under the pool's limits); `min_distinct` ({pod: (key, n)}) the claim's fallback
types offer at least n values of a label (minValues); `types` ({pod: predicate name}).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from typing import Any

import yaml

from longshore.config import load_cluster_text
from longshore.core import labels as wk
from longshore.core.catalog import Catalog
from longshore.core.model import Taint
from longshore.core.pod_manifest import pod_from_manifest
from longshore.core.scheduling import Plan, SchedulingInput, solve
from longshore.core.scheduling.inputs import ExistingNode
from tests.builders import node as build_node
from tests.builders import pod_manifest
from tests.conformance.model import Case, Source
from tests.conformance.validation import BASES, _NoAliases

NS = "default"


@cache
def catalog() -> Catalog:
    from longshore.adapters.aws.instance_types import offline_catalog

    return offline_catalog("us-east-1")


# --- building the input ---------------------------------------------------------------------------------------


def pool(name: str = "default", **spec: Any) -> dict[str, Any]:
    """A v1 NodePool: `labels`, `annotations` go to template.metadata; `requirements`, `taints`,
    `startupTaints`, `expireAfter` to template.spec; `limits`, `weight`, `disruption` to spec."""
    document = copy.deepcopy(BASES["nodepool"])
    document["metadata"]["name"] = name
    template = document["spec"]["template"]
    for key in ("labels", "annotations"):
        if key in spec:
            template.setdefault("metadata", {})[key] = spec.pop(key)
    for key in ("requirements", "taints", "startupTaints", "expireAfter"):
        if key in spec:
            template["spec"][key] = spec.pop(key)
    document["spec"].update(spec)
    return document


def pod(name: str, **options: Any) -> dict[str, Any]:
    """A pending pod manifest (no requests unless given, like Karpenter's test pods)."""
    options.setdefault("cpu", None)
    options.setdefault("memory", None)
    extra = options.pop("manifest", None)
    manifest = pod_manifest(name, **options)
    if extra:
        _merge(manifest, extra)
    return manifest


def _merge(into: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def pods(prefix: str, count: int, **options: Any) -> list[dict[str, Any]]:
    options.setdefault("labels", {"app": prefix})
    return [pod(f"{prefix}-{i}", **options) for i in range(count)]


def node(name: str, **options: Any) -> dict[str, Any]:
    """An existing node (`tests.builders.node` options; `pods` are pod manifests bound to it)."""
    return {"name": name, **options}


def case(source: Source, it: str, *, pools: list[dict[str, Any]] | None = None, **data: Any) -> Case:
    marks = {key: data.pop(key) for key in ("known_bug", "difference") if key in data}
    data["pools"] = pools if pools is not None else [pool()]
    return Case(source, it, data, **marks)


def _taints(items: list[dict[str, str]]) -> tuple[Taint, ...]:
    return tuple(Taint(key=t["key"], effect=t["effect"], value=t.get("value", "")) for t in items)  # type: ignore[arg-type]


def _node(spec: dict[str, Any]) -> ExistingNode:
    options = dict(spec)
    options["pods"] = [pod_from_manifest(p) for p in options.get("pods", ())]
    options["taints"] = _taints(options.get("taints", []))
    deleting = options.pop("deleting", False)
    startup = _taints(options.pop("startup_taints", []))
    return replace(build_node(options.pop("name"), **options), deleting=deleting, startup_taints=startup)


def build(data: dict[str, Any]) -> SchedulingInput:
    nodeclass = copy.deepcopy(BASES["nodeclass"])
    for path, value in data.get("nodeclass", {}).items():
        nodeclass["spec"][path] = value
    text = yaml.dump_all([*data["pools"], nodeclass], Dumper=_NoAliases, sort_keys=False)
    config = load_cluster_text(text, "conformance.yaml")
    existing = [_node(spec) for spec in data.get("nodes", ())]
    return SchedulingInput(
        pods=tuple(pod_from_manifest(p) for p in data.get("pods", ())),
        # static pools (`replicas`) are not provisioned for pods; the provisioner service leaves them out too
        pools=tuple(p for p in config.node_pools if p.replicas is None),
        node_classes=config.node_classes,
        catalog=catalog(),
        nodes=tuple(n for n in existing if not n.in_flight),
        in_flight=tuple(n for n in existing if n.in_flight),
        daemonsets=tuple(pod_from_manifest(p) for p in data.get("daemonsets", ())),
        settings=config.settings,
    )


# --- reading the plan -----------------------------------------------------------------------------------------


def node_labels(inp: SchedulingInput, plan: Plan) -> dict[str, dict[str, str]]:
    """Node name -> the labels it carries (existing nodes as given; claims as they would launch)."""
    found = {n.name: dict(n.labels) for n in (*inp.nodes, *inp.in_flight)}
    for claim in plan.new_claims:
        it = inp.catalog.get(claim.instance_type)
        labels = dict(it.node_labels()) if it else {}
        labels.update(dict(claim.labels))
        labels.update(
            {
                wk.ZONE: claim.zone,
                wk.CAPACITY_TYPE: claim.capacity_type,
                wk.INSTANCE_TYPE: claim.instance_type,
                wk.HOSTNAME: claim.name,
                wk.NODEPOOL: claim.nodepool,
            }
        )
        found[claim.name] = labels
    return found


def _names(value: Any, every: list[str], inp: SchedulingInput | None = None) -> list[str]:
    if isinstance(value, str) and "=" in value and inp is not None:  # "app=web": the pending pods labelled so
        key, _, wanted = value.partition("=")
        return [p.name for p in inp.pods if dict(p.labels).get(key) == wanted]
    return every if value == "all" else list(value)


PREDICATES: dict[str, Callable[[Any], bool]] = {
    "any": lambda it: it is not None,
    "arm64": lambda it: it.arch == "arm64",
    "cpu>15": lambda it: it.vcpus > 15,
    "m6g": lambda it: it.name.startswith("m6g."),
    "fits-30cpu-100Gi": lambda it: it.vcpus >= 30 and it.capacity.get("memory") >= 100 * 2**30,
}


def _cheapest_compatible(inp: SchedulingInput, claim: Any) -> float:
    """The cheapest offering of any type the claim's requirements allow that is at least as large as the type
    chosen (so the check is "no equal-or-bigger type is cheaper", which holds for every cheapest packing)."""
    chosen = inp.catalog.get(claim.instance_type)
    assert chosen is not None
    best = claim.price_per_hour
    for option in claim.offerings:
        it = inp.catalog.get(option.instance_type)
        if (
            it
            and it.capacity.get("cpu") >= chosen.capacity.get("cpu")
            and it.capacity.get("memory") >= chosen.capacity.get("memory")
        ):
            best = min(best, option.price)
    return best


def _existing_counts(inp: SchedulingInput, key: str, group: Any) -> Counter[str | None]:
    """Bound pods (on existing nodes) that a `counts` expectation includes: those carrying label `app=<group>`
    when `group` is such a selector string ("app=web"), else none."""
    if not isinstance(group, str) or "=" not in group:
        return Counter()
    name, _, value = group.partition("=")
    return Counter(
        dict(n.labels).get(key)
        for n in (*inp.nodes, *inp.in_flight)
        for p in n.pods
        if p.namespace == NS and dict(p.labels).get(name) == value
    )


def _label_matches(got: str | None, want: Any) -> bool:
    """`want`: a value, a list of values, None (the label is absent), "*" (present), or ">8" / "<8"."""
    if want is None:
        return got is None
    if want == "*":
        return got is not None
    if isinstance(want, str) and want[:1] in "<>" and got is not None:
        return int(got) > int(want[1:]) if want[0] == ">" else int(got) < int(want[1:])
    return got in (want if isinstance(want, list) else [want])


def check(expect: dict[str, Any], inp: SchedulingInput, plan: Plan) -> None:
    """Raise AssertionError unless `plan` (for `inp`) shows every expectation (see the module docstring)."""
    every = [p.name for p in inp.pods]
    where = {key.split("/", 1)[1]: node for key, node in plan.placements().items()}
    labels = node_labels(inp, plan)
    why = {key.split("/", 1)[1]: reason for key, reason in plan.unschedulable}
    summary = f"placements={where} unschedulable={why} claims={[(c.name, c.instance_type, c.zone) for c in plan.new_claims]}"
    for name in _names(expect.get("scheduled", ()), every):
        assert name in where, f"{name} should schedule: {why.get(name)}; {summary}"
    for name in _names(expect.get("unschedulable", ()), every):
        assert name not in where, f"{name} should not schedule; {summary}"
    if "claims" in expect:
        assert len(plan.new_claims) == expect["claims"], f"expected {expect['claims']} new nodes; {summary}"
    for group in expect.get("same_node", ()):
        assert len({where.get(n) for n in group}) == 1, f"{group} should share a node; {summary}"
    for group in expect.get("different_nodes", ()):
        nodes = [where.get(n) for n in group]
        assert None not in nodes and len(set(nodes)) == len(nodes), (
            f"{group} should use different nodes; {summary}"
        )
    for name, wanted in expect.get("labels", {}).items():
        got = labels.get(where.get(name, ""), {})
        for key, value in wanted.items():
            assert _label_matches(got.get(key), value), (
                f"{name}: node label {key}={got.get(key)}, want {value}; {summary}"
            )
    for name, unwanted in expect.get("not_labels", {}).items():
        got = labels.get(where.get(name, ""), {})
        for key, values in unwanted.items():
            assert got.get(key) not in values, f"{name}: node label {key}={got.get(key)}; {summary}"
    for name, node_name in expect.get("on_node", {}).items():
        assert where.get(name) == node_name, f"{name} should land on {node_name}; {summary}"
    for key, group, most in expect.get("skew", ()):
        counts = Counter(labels[where[n]].get(key) for n in group if n in where)
        domains = expect.get("skew_domains", {}).get(key) or list(counts)
        values = [counts.get(d, 0) for d in domains]
        assert values and max(values) - min(values) <= most, f"skew over {key}: {dict(counts)}; {summary}"
    for key, group, wanted in expect.get("counts", ()):
        counts = Counter(labels[where[n]].get(key) for n in _names(group, every, inp) if n in where)
        counts.update(_existing_counts(inp, key, group))
        assert sorted(counts.values()) == sorted(wanted), (
            f"pods per {key}: {dict(counts)}, want {wanted}; {summary}"
        )
    for key, group, count in expect.get("domains", ()):
        used = {labels[where[n]].get(key) for n in group if n in where}
        assert len(used) == count, (
            f"{group} use {len(used)} values of {key} ({used}), want {count}; {summary}"
        )
    if expect.get("cheapest"):
        for claim in plan.new_claims:
            assert claim.price_per_hour <= min(o.price for o in claim.offerings), (
                f"{claim.name} not cheapest; {summary}"
            )
            assert _cheapest_compatible(inp, claim) >= claim.price_per_hour - 1e-9, (
                f"{claim.name}: cheaper type fits; {summary}"
            )
    for name, limit in expect.get("max_vcpus", {}).items():
        claim = next(c for c in plan.new_claims if f"{NS}/{name}" in c.pods)
        big = [t for t in claim.instance_types if inp.catalog.get(t).vcpus > limit]  # type: ignore[union-attr]
        assert not big, (
            f"{name}: fallback types {big[:5]} exceed {limit} vCPUs left under the pool's limits; {summary}"
        )
    for name, (key, least) in expect.get("min_distinct", {}).items():
        claim = next(c for c in plan.new_claims if f"{NS}/{name}" in c.pods)
        values = {inp.catalog.get(t).node_labels().get(key) for t in claim.instance_types}  # type: ignore[union-attr]
        assert len(values) >= least, (
            f"{name}: fallback types offer {len(values)} values of {key}, want {least}; {summary}"
        )
    for name, predicate in expect.get("types", {}).items():
        claim = next(c for c in plan.new_claims if f"{NS}/{name}" in c.pods)
        bad = [t for t in claim.instance_types if not PREDICATES[predicate](inp.catalog.get(t))]
        assert not bad, f"{name}: types {bad[:5]} break {predicate}; {summary}"


def run(case: Case) -> None:
    inp = build(case.data)
    plan = solve(inp)
    check(case.data["expect"], inp, plan)
