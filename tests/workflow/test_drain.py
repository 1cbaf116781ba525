"""core.drain: which pods a drain leaves, evicts, waits for and deletes, and in which order."""

from __future__ import annotations

import pytest

from longshore.core.drain import (
    DrainPod,
    Toleration,
    do_not_disrupt_active,
    drain_pod_from_manifest,
    effective_deadline,
    left_reason,
    parse_go_duration,
    plan_drain,
)
from tests.workflow.fakes import START, make_pod

NOW = START


def pod(name: str, **kwargs: object) -> DrainPod:
    return drain_pod_from_manifest(make_pod(name, "n1", **kwargs))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("300ms", 0.3),
        ("0", 0.0),
        ("-1m", -60.0),
        ("2h45m0.5s", 9900.5),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "true", "10", "1x", "h", "1h 30m", "m5"])
def test_not_go_durations(text: str) -> None:
    assert parse_go_duration(text) is None


def test_manifest_fields_are_read() -> None:
    manifest = make_pod(
        "web",
        "n1",
        grace=45,
        priority_class="system-node-critical",
        owner_kind="DaemonSet",
        annotations={"karpenter.sh/do-not-disrupt": "true"},
    )
    manifest["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    parsed = drain_pod_from_manifest(manifest)
    assert (
        parsed.key == "default/web"
        and parsed.grace_seconds == 45
        and parsed.is_critical
        and parsed.is_daemonset
    )
    assert parsed.deletion_epoch == START + 60 and parsed.created_epoch == START - 3600


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"owner_kind": "DaemonSet"}, "daemonset"),
        ({"owner_kind": "Node"}, "mirror"),
        ({"annotations": {"kubernetes.io/config.mirror": "abc"}}, "mirror"),
        ({"phase": "Succeeded"}, "terminal"),
        ({"phase": "Failed"}, "terminal"),
        ({"tolerations": [{"key": "karpenter.sh/disrupted", "operator": "Exists"}]}, "tolerates-disrupted"),
        ({"tolerations": [{"operator": "Exists"}]}, "tolerates-disrupted"),
        (
            {"tolerations": [{"key": "karpenter.sh/disrupted", "operator": "Exists", "effect": "NoExecute"}]},
            None,
        ),
        ({"tolerations": [{"key": "other", "operator": "Exists"}]}, None),
        ({}, None),
    ],
)
def test_pods_the_drain_leaves_alone(kwargs: dict[str, object], reason: str | None) -> None:
    assert left_reason(pod("p", **kwargs), NOW) == reason


def test_a_pod_stuck_terminating_for_over_a_minute_is_left() -> None:
    stuck = DrainPod("default", "p", deletion_epoch=NOW - 61)
    recent = DrainPod("default", "q", deletion_epoch=NOW - 59)
    assert left_reason(stuck, NOW) == "stuck-terminating" and left_reason(recent, NOW) is None


@pytest.mark.parametrize(
    ("annotations", "created", "active"),
    [
        ({"karpenter.sh/do-not-disrupt": "true"}, NOW - 10 * 86400, True),
        ({"karpenter.sh/do-not-disrupt": "True"}, NOW, True),
        ({"karpenter.sh/do-not-disrupt": "false"}, NOW, False),
        ({"karpenter.sh/do-not-disrupt": "30m"}, NOW - 29 * 60, True),
        ({"karpenter.sh/do-not-disrupt": "30m"}, NOW - 31 * 60, False),
        ({"karpenter.sh/do-not-disrupt": "nonsense"}, NOW, False),
        ({"karpenter.sh/do-not-evict": "true"}, NOW - 10 * 86400, True),
        ({}, NOW, False),
    ],
)
def test_do_not_disrupt_forms(annotations: dict[str, str], created: float, active: bool) -> None:
    assert do_not_disrupt_active(pod("p", annotations=annotations, created=created), NOW) is active


def test_tiers_non_critical_before_critical() -> None:
    pods = [
        pod("app"),
        pod("dns", priority_class="system-cluster-critical"),
        pod("ds", owner_kind="DaemonSet"),
    ]
    plan = plan_drain(pods, NOW, deadline=None)
    assert [p.name for p in plan.evict] == ["app"]
    assert [(w.pod.name, w.reason) for w in plan.waiting] == [("dns", "later-tier")]
    assert [(left.pod.name, left.reason) for left in plan.left] == [("ds", "daemonset")]
    assert plan.remaining == 2
    # once the first tier is gone, the critical tier is evicted
    assert [p.name for p in plan_drain(pods[1:], NOW, None).evict] == ["dns"]


def test_terminating_pods_of_the_first_tier_hold_the_second_tier() -> None:
    terminating = DrainPod("default", "app", deletion_epoch=NOW + 20)
    critical = DrainPod("kube-system", "dns", priority_class_name="system-node-critical")
    plan = plan_drain([terminating, critical], NOW, None)
    assert plan.evict == () and {w.reason for w in plan.waiting} == {"terminating", "later-tier"}


def test_do_not_disrupt_waits_until_the_deadline_minus_its_grace_then_is_deleted_to_end_by_it() -> None:
    protected = pod("batch", annotations={"karpenter.sh/do-not-disrupt": "true"}, grace=30)
    deadline = NOW + 100
    early = plan_drain([protected], NOW, deadline)
    assert early.evict == () and early.delete == () and early.waiting[0].reason == "do-not-disrupt"
    assert early.next_forced_at == deadline - 30
    due = plan_drain([protected], deadline - 25, deadline)
    assert [(d.pod.name, d.grace_seconds) for d in due.delete] == [("batch", 25)]
    late = plan_drain([protected], deadline + 5, deadline)
    assert [(d.pod.name, d.grace_seconds) for d in late.delete] == [("batch", 0)]


def test_without_a_deadline_nothing_is_ever_forced() -> None:
    protected = pod("batch", annotations={"karpenter.sh/do-not-disrupt": "true"})
    plan = plan_drain([protected], NOW + 10**7, None)
    assert plan.delete == () and plan.remaining == 1 and plan.next_forced_at is None


def test_an_empty_node_is_drained() -> None:
    plan = plan_drain([pod("ds", owner_kind="DaemonSet"), pod("done", phase="Succeeded")], NOW, NOW)
    assert plan.remaining == 0


def test_effective_deadline_takes_the_earlier() -> None:
    assert effective_deadline(None, NOW, None) is None
    assert effective_deadline(NOW + 50, NOW, None) == NOW + 50
    assert effective_deadline(None, NOW, 300) == NOW + 300
    assert effective_deadline(NOW + 500, NOW, 300) == NOW + 300


def test_toleration_matching() -> None:
    assert Toleration("karpenter.sh/disrupted", "Equal", "", "NoSchedule").tolerates(
        "karpenter.sh/disrupted", "", "NoSchedule"
    )
    assert not Toleration("karpenter.sh/disrupted", "Equal", "x", "").tolerates(
        "karpenter.sh/disrupted", "", "NoSchedule"
    )
