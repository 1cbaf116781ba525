"""Allocatable cases: capacity, overhead and max pods of a real instance type under an EC2NodeClass.

Rules: the node class is written as Karpenter YAML (changes over the validation base) and loaded through
`longshore.config`, the instance type comes from the production offline catalog (EC2's shapes as moto ships
them), and the figures come from `longshore.core.allocatable`. An expectation is `(figure, op, value)`:
figure is `capacity.<res>`, `kube_reserved.<res>`, `system_reserved.<res>`, `eviction.<res>` or
`allocatable.<res>`; op is `==` (a quantity), `<=` (a quantity), `!=` (a quantity), or `~` with value
`(other figure, fraction)` (within 10 bytes, as the upstream tests allow). A value may be a function of the
instance type. Type `*` checks every type in the catalog.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

from longshore.config import load_cluster_text
from longshore.core import allocatable, quantity
from longshore.core.catalog import Catalog, InstanceType
from longshore.core.model import NodeClass, Settings
from tests.conformance.model import Case, Source
from tests.conformance.validation import render

Expectation = tuple[str, str, Any]


@cache
def catalog() -> Catalog:
    from longshore.adapters.aws.instance_types import offline_catalog

    return offline_catalog("us-east-1")


def case(
    source: Source,
    it: str,
    instance_type: str,
    expect: list[Expectation],
    *,
    nodeclass: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    **marks: Any,
) -> Case:
    data = {"type": instance_type, "nodeclass": nodeclass or {}, "settings": settings or {}, "expect": expect}
    return Case(source, it, data, **marks)


def _node_class(changes: dict[str, Any]) -> tuple[NodeClass, Any]:
    config = load_cluster_text(render("nodeclass", changes), "conformance.yaml")
    node_class = config.node_classes[0]
    return node_class, config.node_pools[0].effective_kubelet(node_class)


def _figures(it: InstanceType, node_class: NodeClass, kubelet: Any, settings: Settings) -> dict[str, Any]:
    overhead = allocatable.overhead(it, kubelet, node_class, settings)
    return {
        "capacity": allocatable.node_capacity(it, kubelet, node_class, settings),
        "kube_reserved": overhead.kube_reserved,
        "system_reserved": overhead.system_reserved,
        "eviction": overhead.eviction_threshold,
        "allocatable": allocatable.allocatable(it, kubelet, node_class, settings),
    }


def _value(figures: dict[str, Any], name: str) -> int:
    group, _, resource = name.partition(".")
    return int(figures[group].get(resource))


def _check(it: InstanceType, figures: dict[str, Any], expectation: Expectation) -> None:
    name, op, want = expectation
    if callable(want):  # a figure that depends on the type (e.g. its vCPUs)
        want = want(it)
    got = _value(figures, name)
    resource = name.partition(".")[2]
    if op == "~":
        other, fraction = want
        target = _value(figures, other) * fraction
        assert abs(got - target) <= 10 * (1000 if resource == "cpu" else 1), (
            f"{it.name} {name}: {got} !~ {target}"
        )
        return
    expected = quantity.parse(resource, str(want))
    if op == "==":
        assert got == expected, f"{it.name} {name}: {got} != {want} ({expected})"
    elif op == "!=":
        assert got != expected, f"{it.name} {name}: {got} == {want}"
    else:
        assert got <= expected, f"{it.name} {name}: {got} > {want} ({expected})"


def run(case: Case) -> None:
    node_class, kubelet = _node_class(case.data["nodeclass"])
    settings = replace(Settings(), **case.data["settings"])
    names = [it.name for it in catalog().instance_types] if case.data["type"] == "*" else [case.data["type"]]
    for name in names:
        it = catalog().get(name)
        assert it is not None, f"{name} is not in the catalog"
        figures = _figures(it, node_class, kubelet, settings)
        for expectation in case.data["expect"]:
            _check(it, figures, expectation)
