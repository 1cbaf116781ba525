"""The requirements algebra: operators, intersection laws, compatibility and its reasons, minValues."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longshore.core import labels as wk
from longshore.core.model import Requirement
from longshore.core.requirements import (
    KeyRequirement,
    RequirementError,
    Requirements,
    min_values_shortfall,
)

CATEGORY = wk.INSTANCE_CATEGORY
CPU = wk.INSTANCE_CPU


def reqs(*written: Requirement) -> Requirements:
    return Requirements.of(written)


def r(key: str, op: str, *values: str, min_values: int | None = None) -> Requirement:
    return Requirement(key, op, tuple(values), min_values)  # type: ignore[arg-type]


# --- operators -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("written", "value", "allowed"),
    [
        (r(CATEGORY, "In", "c", "m"), "c", True),
        (r(CATEGORY, "In", "c", "m"), "r", False),
        (r(CATEGORY, "NotIn", "t"), "t", False),
        (r(CATEGORY, "NotIn", "t"), "m", True),
        (r(CATEGORY, "Exists"), "anything", True),
        (r(CATEGORY, "DoesNotExist"), "c", False),
        (r(CPU, "Gt", "4"), "4", False),
        (r(CPU, "Gt", "4"), "5", True),
        (r(CPU, "Gte", "4"), "4", True),
        (r(CPU, "Lt", "4"), "4", False),
        (r(CPU, "Lt", "4"), "3", True),
        (r(CPU, "Lte", "4"), "4", True),
        (r(CPU, "Gt", "4"), "large", False),
    ],
)
def test_operator_membership(written: Requirement, value: str, allowed: bool) -> None:
    assert reqs(written).allows(written.key, value) is allowed


def test_gt_is_gte_plus_one_and_lt_is_lte_minus_one() -> None:
    assert reqs(r(CPU, "Gt", "4")) == reqs(r(CPU, "Gte", "5"))
    assert reqs(r(CPU, "Lt", "4")) == reqs(r(CPU, "Lte", "3"))


def test_beta_aliases_are_the_stable_keys() -> None:
    beta = reqs(
        r("beta.kubernetes.io/arch", "In", "arm64"), r("failure-domain.beta.kubernetes.io/zone", "In", "a")
    )
    assert beta.keys() == {wk.ARCH, wk.ZONE}
    assert beta == reqs(r(wk.ARCH, "In", "arm64"), r(wk.ZONE, "In", "a"))
    assert beta.values("beta.kubernetes.io/arch") == {"arm64"}
    assert reqs(r("beta.kubernetes.io/instance-type", "In", "m5.large")).keys() == {wk.INSTANCE_TYPE}
    assert reqs(r("beta.kubernetes.io/os", "In", "linux")).keys() == {wk.OS}


@pytest.mark.parametrize(
    ("written", "message"),
    [
        (r(CPU, "Gt", "four"), "non-negative integer"),
        (r(CPU, "Gt", "-1"), "non-negative integer"),
        (r(CPU, "Lt", "1", "2"), "exactly one"),
        (r(CATEGORY, "Exists", "c"), "takes no values"),
        (r(CATEGORY, "Near", "c"), "unknown operator"),
        (r(CATEGORY, "In", "c", min_values=0), "minValues"),
    ],
)
def test_meaningless_requirements_are_rejected_with_the_key(written: Requirement, message: str) -> None:
    with pytest.raises(RequirementError, match=message) as info:
        reqs(written)
    assert CPU in str(info.value) or CATEGORY in str(info.value)


def test_same_key_twice_is_intersected() -> None:
    both = reqs(r(CATEGORY, "In", "c", "m", "r"), r(CATEGORY, "NotIn", "m"))
    assert both.values(CATEGORY) == {"c", "r"}


def test_crossed_bounds_collapse_to_does_not_exist() -> None:
    crossed = reqs(r(CPU, "Gt", "8"), r(CPU, "Lt", "4"))
    item = crossed.get(CPU)
    assert item is not None and item.operator == "DoesNotExist"


def test_bounds_filter_a_concrete_set_and_vanish() -> None:
    mixed = reqs(r(CPU, "In", "2", "4", "8", "16"), r(CPU, "Gte", "4"), r(CPU, "Lt", "16"))
    item = mixed.get(CPU)
    assert item is not None
    assert item.values == {"4", "8"} and item.gte is None and item.lte is None


def test_single_values_are_the_node_labels() -> None:
    pinned = reqs(r(wk.ZONE, "In", "a"), r(CATEGORY, "In", "c", "m"), r(wk.CAPACITY_TYPE, "In", "spot"))
    assert pinned.single_values() == {wk.ZONE: "a", wk.CAPACITY_TYPE: "spot"}


def test_written_form_round_trips() -> None:
    original = reqs(r(CPU, "NotIn", "6"), r(CPU, "Gte", "4"), r(CPU, "Lte", "9"), r(CATEGORY, "In", "c"))
    assert Requirements.of(original.to_written()) == original


# --- compatibility ---------------------------------------------------------------------------------------
def test_incompatibility_reason_names_key_and_both_sides() -> None:
    pool = reqs(r(CATEGORY, "In", "r"))
    pod = reqs(r(CATEGORY, "In", "c", "m"))
    assert not pool.compatible(pod)
    assert pool.incompatibility(pod) == (
        "requires karpenter.k8s.aws/instance-category In [c,m] but the pool allows [r]"
    )


def test_not_in_and_does_not_exist_are_compatible_even_when_disjoint() -> None:
    assert reqs(r(CATEGORY, "NotIn", "c")).compatible(reqs(r(CATEGORY, "DoesNotExist")))
    assert reqs(r(CATEGORY, "DoesNotExist")).compatible(reqs(r(CATEGORY, "DoesNotExist")))
    assert not reqs(r(CATEGORY, "In", "c")).compatible(reqs(r(CATEGORY, "DoesNotExist")))
    assert not reqs(r(CATEGORY, "Exists")).compatible(reqs(r(CATEGORY, "DoesNotExist")))


def test_keys_on_one_side_only_do_not_conflict() -> None:
    assert reqs(r(CATEGORY, "In", "c")).compatible(reqs(r(wk.ZONE, "In", "a")))


def test_admits_refuses_undefined_custom_labels_but_allows_undefined_well_known() -> None:
    pool = reqs(r(CATEGORY, "In", "c"))
    assert pool.admits(reqs(r(wk.ZONE, "In", "a")))
    custom = reqs(r("team", "In", "payments"))
    assert not pool.admits(custom)
    assert (
        pool.admission_failure(custom)
        == "requires team In [payments] but the pool does not define label team"
    )
    assert pool.admits(reqs(r("team", "NotIn", "payments")))
    assert pool.admits(reqs(r("team", "DoesNotExist")))
    assert reqs(r("team", "In", "payments", "web")).admits(custom)


def test_matches_node_labels_with_kubernetes_absent_semantics() -> None:
    node = {wk.ZONE: "a", "beta.kubernetes.io/arch": "amd64"}
    assert reqs(r(wk.ARCH, "In", "amd64")).matches(node)
    assert reqs(r("team", "NotIn", "x")).matches(node)
    assert reqs(r("team", "DoesNotExist")).matches(node)
    assert not reqs(r("team", "Exists")).matches(node)
    assert not reqs(r(CPU, "Gt", "1")).matches(node)
    assert reqs(r(wk.ZONE, "In", "b")).mismatch(node) == (
        "requires topology.kubernetes.io/zone In [b] but the node has topology.kubernetes.io/zone=a"
    )


# --- minValues -------------------------------------------------------------------------------------------
def test_min_values_take_the_maximum_and_count_distinct_values() -> None:
    merged = reqs(r(CATEGORY, "In", "c", "m", "r", min_values=2), r(CATEGORY, "Exists", min_values=3))
    assert merged.min_values(CATEGORY) == 3
    options = [Requirements.from_labels({CATEGORY: c}) for c in ("c", "m", "m")]
    assert min_values_shortfall(merged, options) == (
        "minValues 3 for karpenter.k8s.aws/instance-category not met: only 2 distinct values remain"
    )
    options.append(Requirements.from_labels({CATEGORY: "r"}))
    assert min_values_shortfall(merged, options) is None


# --- laws ------------------------------------------------------------------------------------------------
KEYS = ("k1", "k2")
VALUES = ("1", "2", "3", "5", "8", "x")


@st.composite
def key_requirements(draw: st.DrawFn) -> Requirement:
    key = draw(st.sampled_from(KEYS))
    op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]))
    min_values = draw(st.none() | st.integers(1, 3))
    if op in ("In", "NotIn"):
        values = tuple(draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=4, unique=True)))
    elif op in ("Gt", "Lt", "Gte", "Lte"):
        values = (str(draw(st.integers(0, 9))),)
    else:
        values = ()
    return Requirement(key, op, values, min_values)  # type: ignore[arg-type]


requirement_sets = st.lists(key_requirements(), max_size=3).map(Requirements.of)
PROBES = (*VALUES, "0", "4", "9", "10")


def semantic(requirements: Requirements) -> dict[str, tuple[bool, ...]]:
    return {key: tuple(requirements.allows(key, v) for v in PROBES) for key in KEYS}


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(requirement_sets, requirement_sets)
def test_intersection_is_commutative(a: Requirements, b: Requirements) -> None:
    assert a.intersect(b) == b.intersect(a)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(requirement_sets, requirement_sets, requirement_sets)
def test_intersection_is_associative(a: Requirements, b: Requirements, c: Requirements) -> None:
    assert a.intersect(b).intersect(c) == a.intersect(b.intersect(c))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(requirement_sets)
def test_intersection_is_idempotent(a: Requirements) -> None:
    assert a.intersect(a) == a


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(requirement_sets, requirement_sets)
def test_intersection_allows_exactly_what_both_allow(a: Requirements, b: Requirements) -> None:
    both = a.intersect(b)
    for key in KEYS:
        for value in PROBES:
            assert both.allows(key, value) == (a.allows(key, value) and b.allows(key, value))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(requirement_sets, requirement_sets)
def test_compatibility_is_symmetric(a: Requirements, b: Requirements) -> None:
    assert a.compatible(b) == b.compatible(a)
    assert (a.incompatibility(b) is None) == (b.incompatibility(a) is None)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(requirement_sets, requirement_sets)
def test_compatible_means_a_common_value_or_both_tolerate_absence(a: Requirements, b: Requirements) -> None:
    both = a.intersect(b)
    for key in a.keys() & b.keys():
        item = both.get(key)
        assert item is not None
        left, right = a.get(key), b.get(key)
        assert left is not None and right is not None
        tolerant = left.operator in ("NotIn", "DoesNotExist") and right.operator in ("NotIn", "DoesNotExist")
        if not item.is_empty() or tolerant:
            continue
        assert not a.compatible(b)
    if a.compatible(b):
        for key in a.keys() & b.keys():
            item = both.get(key)
            assert item is not None
            left, right = a.get(key), b.get(key)
            assert left is not None and right is not None
            assert not item.is_empty() or (
                left.operator in ("NotIn", "DoesNotExist") and right.operator in ("NotIn", "DoesNotExist")
            )


def test_key_requirement_describe_forms() -> None:
    assert KeyRequirement.make("k", True, ["7"], gte=4, lte=9).describe() == "NotIn [7] Gte 4 Lte 9"
    assert KeyRequirement.exists("k").describe() == "Exists"
    assert KeyRequirement.does_not_exist("k").describe_allowed() == "no value (DoesNotExist)"
    assert KeyRequirement.make("k", True, gte=6).describe_allowed() == ">= 6"
