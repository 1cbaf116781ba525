"""A surge replacement keeps a moved pod on its volume's zone (`services.volume_topology.apply_moving`): a pod
whose claim is bound to a us-east-1b EBS volume gets a claim that allows us-east-1b only (the same pod without
the volume may go anywhere); a pod whose claim cannot be found has no known zone, so no replacement is planned
and the disruption rolls back."""

from __future__ import annotations

from typing import Any

import pytest

from longshore.core import labels as wk
from longshore.ports.workflow import ReplacementUnavailableError
from longshore.services.replacement_plan import ReplacementPlan
from tests.replacement.conftest import NOW, Planning, cluster_config, node_manifest, old_claim, running_pod

EBS_ZONE = "topology.ebs.csi.aws.com/zone"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def _plan(*, volume: bool, claim: bool = True) -> ReplacementPlan:
    world = Planning(cluster_config())
    node = node_manifest("old", "i-0000000000000old1", zone="us-east-1b")
    world.cluster.add_node(node)
    old = old_claim(node)
    world.store.put(old)
    db: dict[str, Any] = running_pod("db-0", "old", cpu="1")
    if volume:
        db["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]
    world.cluster.add_pod(db)
    if claim:
        world.cluster.pvcs.append(
            {"metadata": {"name": "data-db-0", "namespace": "default"}, "spec": {"volumeName": "pv-db"}}
        )
    world.cluster.pvs.append(
        {
            "metadata": {"name": "pv-db"},
            "spec": {
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": EBS_ZONE, "operator": "In", "values": ["us-east-1b"]}
                                ]
                            }
                        ]
                    }
                }
            },
        }
    )
    return world.launcher().plan(old, world.cluster.get_node("old"), "drifted", NOW)


def _zones(plan: ReplacementPlan) -> list[str]:
    [claim] = plan.claims
    return [zone for zone in ZONES if claim.requirements.allows(wk.ZONE, zone)]


def test_a_moved_pod_keeps_its_volume_zone() -> None:
    assert _zones(_plan(volume=False)) == list(ZONES)  # control: without the volume, any zone
    assert _zones(_plan(volume=True)) == ["us-east-1b"]


def test_a_moved_pod_whose_claim_is_gone_gets_no_replacement() -> None:
    with pytest.raises(
        ReplacementUnavailableError, match="PersistentVolumeClaim default/data-db-0 not found"
    ):
        _plan(volume=True, claim=False)
