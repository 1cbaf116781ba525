"""Validation cases: a Karpenter object with one change, loaded through `longshore.config`; accept or reject.

Rules: a case starts from a minimal valid document (`BASES`), applies `set` (dotted paths, created as needed;
`DELETE` removes a field) and loads it with the NodePool and EC2NodeClass it needs, through the same
`load_cluster_text` the Lambda functions use. An accepted case must load without errors. A rejected case must
raise `ConfigErrors` with an error whose path is the named field (or inside it) and, when the case names a
value, whose message or value shows that value, so the user can find the mistake from the message alone.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from longshore.config import ConfigErrors, load_cluster_text
from tests.conformance.model import Case, Source

DELETE = object()
_ANY = object()

_REF_V1 = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
_DISCOVERY = [{"tags": {"karpenter.sh/discovery": "demo"}}]

BASES: dict[str, dict[str, Any]] = {
    "nodepool": {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {"template": {"spec": {"nodeClassRef": _REF_V1}}},
    },
    "nodeclass": {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-demo",
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": _DISCOVERY,
            "securityGroupSelectorTerms": _DISCOVERY,
        },
    },
    "nodepool_v1beta1": {
        "apiVersion": "karpenter.sh/v1beta1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {"template": {"spec": {"nodeClassRef": {"name": "default"}}}},
    },
    "nodeclass_v1beta1": {
        "apiVersion": "karpenter.k8s.aws/v1beta1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "role": "KarpenterNodeRole-demo",
            "amiFamily": "AL2023",
            "subnetSelectorTerms": _DISCOVERY,
            "securityGroupSelectorTerms": _DISCOVERY,
        },
    },
    "nodeoverlay": {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "overlay"},
        "spec": {"requirements": [{"key": "karpenter.sh/capacity-type", "operator": "Exists"}]},
    },
}
#: The companion documents each target is loaded with (a pool needs its class and the other way round).
_COMPANION = {
    "nodepool": ("nodeclass",),
    "nodeclass": ("nodepool",),
    "nodepool_v1beta1": ("nodeclass_v1beta1",),
    "nodeclass_v1beta1": ("nodepool_v1beta1",),
    "nodeoverlay": ("nodepool", "nodeclass"),
}


def _set(document: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = document
    for part in parents:
        node = node.setdefault(part, {})
    if value is DELETE:
        node.pop(last, None)
    else:
        node[last] = value


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def render(target: str, changes: dict[str, Any]) -> str:
    document = copy.deepcopy(BASES[target])
    for path, value in changes.items():
        _set(document, path, value)
    companions = [BASES[name] for name in _COMPANION[target]]
    return yaml.dump_all([document, *companions], Dumper=_NoAliases, sort_keys=False)


def accept(source: Source, it: str, changes: dict[str, Any], target: str = "nodepool", **marks: Any) -> Case:
    return Case(source, it, {"target": target, "set": changes, "reject": None}, **marks)


def reject(
    source: Source,
    it: str,
    changes: dict[str, Any],
    field: str,
    value: Any = _ANY,
    target: str = "nodepool",
    **marks: Any,
) -> Case:
    return Case(source, it, {"target": target, "set": changes, "reject": (field, value)}, **marks)


def _shows(error: Any, value: Any) -> bool:
    if value is _ANY:
        return True
    text = str(error)
    return error.value == value or str(value) in text or repr(value) in text


def run(case: Case) -> None:
    """Raise AssertionError unless Longshore accepts or rejects the case's document as Karpenter does."""
    text = render(case.data["target"], case.data["set"])
    try:
        load_cluster_text(text, "conformance.yaml")
    except ConfigErrors as errors:
        found = errors.errors
    else:
        found = ()
    expected = case.data["reject"]
    if expected is None:
        assert not found, f"Karpenter accepts this, Longshore rejected it:\n{text}\n" + "\n".join(
            map(str, found)
        )
        return
    field, value = expected
    assert found, f"Karpenter rejects this ({field}), Longshore accepted it:\n{text}"
    named = [error for error in found if (error.path or "").startswith(field)]
    assert named, f"no error names {field}:\n" + "\n".join(map(str, found))
    assert any(_shows(error, value) for error in named), (
        f"no error at {field} shows {value!r}:\n" + "\n".join(map(str, named))
    )
