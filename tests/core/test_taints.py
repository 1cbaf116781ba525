"""Taint/toleration matching with Kubernetes semantics, and the startup/ephemeral taint rules."""

from __future__ import annotations

import pytest

from longshore.core.model import Taint
from longshore.core.taints import (
    DISRUPTED_TAINT,
    UNREGISTERED_TAINT,
    Toleration,
    TolerationError,
    is_ephemeral,
    scheduling_taints,
    tolerates,
    untolerated,
    untolerated_reason,
)

GPU = Taint("nvidia.com/gpu", "NoSchedule", "true")


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        (Toleration("nvidia.com/gpu", "Equal", "true", "NoSchedule"), True),
        (Toleration("nvidia.com/gpu", "Equal", "false", "NoSchedule"), False),
        (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"), True),
        (Toleration("nvidia.com/gpu", "Exists"), True),  # empty effect matches all effects
        (Toleration("nvidia.com/gpu", "Equal", "true", "NoExecute"), False),
        (Toleration("", "Exists"), True),  # empty key + Exists tolerates everything
        (Toleration("", "Exists", "", "NoExecute"), False),
        (Toleration("other", "Exists"), False),
    ],
)
def test_toleration_matching(toleration: Toleration, expected: bool) -> None:
    assert toleration.tolerates(GPU) is expected


def test_every_taint_needs_a_toleration() -> None:
    spot = Taint("spot", "NoSchedule")
    held = [Toleration("nvidia.com/gpu", "Exists")]
    assert untolerated(held, [GPU, spot]) == (spot,)
    assert not tolerates(held, [GPU, spot])
    assert tolerates([*held, Toleration("spot", "Exists")], [GPU, spot])
    assert tolerates([], [])


def test_prefer_no_schedule_counts_unless_ignored() -> None:
    soft = Taint("soft", "PreferNoSchedule")
    assert not tolerates([], [soft])
    assert tolerates([], [soft], ignore_prefer_no_schedule=True)


def test_reason_names_the_taint() -> None:
    assert untolerated_reason([], [GPU], subject="pool gpu") == (
        "does not tolerate taint nvidia.com/gpu=true:NoSchedule of pool gpu"
    )
    assert untolerated_reason([Toleration("", "Exists")], [GPU]) is None


def test_from_dict_follows_kubernetes_defaults_and_rejects_nonsense() -> None:
    t = Toleration.from_dict({"key": "a", "value": "b"})
    assert (t.operator, t.effect) == ("Equal", "")
    assert Toleration.from_dict({"operator": "Exists", "tolerationSeconds": 30}).toleration_seconds == 30
    with pytest.raises(TolerationError, match="Exists or Equal"):
        Toleration.from_dict({"key": "a", "operator": "In"})
    with pytest.raises(TolerationError, match="takes no value"):
        Toleration.from_dict({"key": "a", "operator": "Exists", "value": "x"})
    with pytest.raises(TolerationError, match="empty key"):
        Toleration.from_dict({"value": "x"})


def test_ephemeral_taints() -> None:
    assert is_ephemeral(Taint("node.kubernetes.io/not-ready", "NoExecute"))
    assert is_ephemeral(Taint("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule", "true"))
    assert is_ephemeral(UNREGISTERED_TAINT)
    assert is_ephemeral(Taint("readiness.k8s.io/network", "NoSchedule"))
    assert not is_ephemeral(Taint("node.kubernetes.io/unreachable", "NoExecute"))
    assert not is_ephemeral(DISRUPTED_TAINT)


def test_startup_and_ephemeral_taints_are_ignored_only_before_initialization() -> None:
    startup = Taint("cilium.io/agent-not-ready", "NoExecute", "true")
    node = (GPU, startup, Taint("node.kubernetes.io/not-ready", "NoSchedule"))
    assert scheduling_taints(node, (startup,), initialized=False) == (GPU,)
    assert scheduling_taints(node, (startup,), initialized=True) == node
