"""Validation cases from core `pkg/apis/v1alpha1/nodeoverlay_validation_cel_test.go` (NodeOverlay CRD rules and
`RuntimeValidate`), each applied to a minimal NodeOverlay loaded beside a NodePool and its EC2NodeClass.

Upstream's "priceAdjustment / Invalid Input" table sets `price`, not `priceAdjustment` (its function body
assigns `Spec.Price`); the cases keep what the table tests, on the field it actually sets.
"""

from __future__ import annotations

from typing import Any

from tests.conformance.model import CORE, Case, Source
from tests.conformance.validation import accept, reject

OVERLAY = Source(CORE, "pkg/apis/v1alpha1/nodeoverlay_validation_cel_test.go")
R = "spec.requirements"
ZONE = "topology.kubernetes.io/zone"


def _req(key: str, op: str, *values: str) -> dict[str, object]:
    return {"key": key, "operator": op, "values": list(values)} if values else {"key": key, "operator": op}


def _ok(it: str, changes: dict[str, Any]) -> Case:
    return accept(OVERLAY, it, changes, target="nodeoverlay")


def _no(it: str, changes: dict[str, Any], field: str, value: object = None) -> Case:
    if value is None:
        return reject(OVERLAY, it, changes, field, target="nodeoverlay")
    return reject(OVERLAY, it, changes, field, value, target="nodeoverlay")


_BAD_PRICES = (
    ("No explicit plus sign allowed", "+42"),
    ("Must have leading digit", ".5"),
    ("Must have trailing digits after decimal", "42."),
    ("No percentage sign allowed", "42%"),
    ("No commas allowed", "3,14"),
    ("No scientific notation", "1e10"),
    ("No hex notation", "0x42"),
    ("No text", "forty-two"),
    ("No letters", "42a"),
    ("No spaces", "42 "),
    ("No leading spaces", " 42"),
    ("Multiple decimal points", "42.0.0"),
    ("Just a sign", "-"),
    ("Just a decimal point", "."),
    ("No leading digit after sign", "-.42"),
    ("No percentage with a sign", "-100.0%"),
    ("less -100% float", "-101.1%"),
    ("less -100% integer", "-129"),
)

CASES = [
    _no("should fail for no values for In operator", {R: [_req("Test", "In")]}, f"{R}[0].values"),
    _no("should fail for no values for NotIn operator", {R: [_req("Test", "NotIn")]}, f"{R}[0].values"),
    _ok(
        "should succeed for valid requirement keys",
        {
            R: [
                _req("Test", "Exists"),
                _req("test.com/Test", "Exists"),
                _req("test.com.com/test", "Exists"),
                _req("key-only", "Exists"),
            ]
        },
    ),
    *(
        _no(
            f"should fail for invalid requirement keys: {key}", {R: [_req(key, "Exists")]}, f"{R}[0].key", key
        )
        for key in ("test.com.com}", "Test.com/test", "test/test/test", "test/", "/test")
    ),
    _ok(
        "should allow for the karpenter.sh/nodepool label",
        {R: [_req("karpenter.sh/nodepool", "In", "Wolfgang")]},
    ),
    _no(
        "should fail at runtime for requirement keys that are too long (prefix)",
        {R: [_req("test.com.test." + "a" * 250 + "/test", "Exists")]},
        f"{R}[0].key",
    ),
    _no(
        "should fail at runtime for requirement keys that are too long (name)",
        {R: [_req("test.com.test/test-" + "a" * 250, "Exists")]},
        f"{R}[0].key",
    ),
    _ok(
        "should allow supported ops",
        {
            R: [
                _req(ZONE, "In", "test"),
                _req(ZONE, "Gt", "1"),
                _req(ZONE, "Lt", "1"),
                _req(ZONE, "NotIn", "1"),
                _req(ZONE, "Exists"),
            ]
        },
    ),
    _no(
        "should fail for unsupported ops", {R: [_req(ZONE, "unknown", "test")]}, f"{R}[0].operator", "unknown"
    ),
    *(
        _no(f"should fail for restricted domains: {d}", {R: [_req(f"{d}/test", "In", "test")]}, f"{R}[0].key")
        for d in ("karpenter.sh", "karpenter.k8s.aws")
    ),
    *(
        _ok(f"should allow restricted domains exceptions: {d}", {R: [_req(f"{d}/test", "In", "test")]})
        for d in ("node.kubernetes.io", "node-restriction.kubernetes.io", "kops.k8s.io")
    ),
    *(
        _ok(
            f"should allow restricted subdomains exceptions: {d}",
            {R: [_req(f"subdomain.{d}/test", "In", "test")]},
        )
        for d in ("node.kubernetes.io", "node-restriction.kubernetes.io", "kops.k8s.io")
    ),
    *(
        _ok(f"should allow well known label exceptions: {key}", {R: [_req(key, "In", "test")]})
        for key in (
            ZONE,
            "topology.kubernetes.io/region",
            "node.kubernetes.io/instance-type",
            "kubernetes.io/arch",
            "kubernetes.io/os",
            "node.kubernetes.io/windows-build",
        )
    ),
    _ok(
        "should allow non-empty set after removing overlapped value",
        {R: [_req(ZONE, "In", "test", "foo"), _req(ZONE, "NotIn", "test", "bar")]},
    ),
    _ok("should allow empty requirements", {R: [_req("test", "Exists")]}),
    _ok("should allow an empty requirements list", {R: []}),
    *(
        _no(
            f"should fail with invalid {op} values: {values}",
            {R: [_req(ZONE, op, *values)]},
            f"{R}[0].values",
        )
        for op in ("Gt", "Lt")
        for values in ((), ("1", "2"), ("a",), ("-1",))
    ),
    _no(
        "should not be able to set both price and priceAdjustment",
        {"spec.price": "0.432", "spec.priceAdjustment": "+10%"},
        "spec.priceAdjustment",
    ),
    *(
        _no(f"price: Invalid Input: {it}", {"spec.price": text}, "spec.price", text)
        for it, text in _BAD_PRICES
    ),
    *(
        _no(
            f"should not allow an unsigned priceAdjustment {it}",
            {"spec.priceAdjustment": text},
            "spec.priceAdjustment",
        )
        for it, text in (("percentage", "1%"), ("integer", "1"), ("float", "1.3"))
    ),
    *(
        _ok(f"should allow priceAdjustment {text}", {"spec.priceAdjustment": text})
        for text in ("+1%", "-1%", "-100%", "+100.102%", "+298%", "+43", "-43", "+34.43", "-34.43")
    ),
    _ok("price: should allow integer value", {"spec.price": "43"}),
    _ok("price: should allow float value", {"spec.price": "34.43"}),
    _ok("Capacity: should allow custom resources", {"spec.capacity": {"smarter-devices/fuse": "1"}}),
    *(
        _no(
            f"Capacity: should not allow {name} resources override",
            {"spec.capacity": {name: amount}},
            "spec.capacity",
        )
        for name, amount in (("cpu", "1"), ("memory", "34Gi"), ("pods", "324"), ("ephemeral-storage", "34Gi"))
    ),
]
