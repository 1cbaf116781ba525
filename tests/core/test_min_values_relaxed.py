"""`minValuesPolicy: BestEffort`: a relaxed claim is stored with the flag and its NodeClaim object carries
Karpenter's `karpenter.sh/nodeclaim-min-values-relaxed` annotation."""

from __future__ import annotations

from dataclasses import replace

from longshore.adapters.aws.dynamodb import claim_from_doc, claim_to_doc
from longshore.core import labels as wk
from longshore.core.claims import NodeClaim
from longshore.core.karpenter_objects import MIN_VALUES_RELAXED, nodeclaim_object
from longshore.core.model import Settings
from longshore.core.scheduling import solve
from longshore.services.launch_requests import launch_request
from tests.builders import catalog, instance_type, pod, pool, req, scheduling_input
from tests.planner.fakes import cluster_config

ZONES = ("us-east-1a",)


def _plan(policy: str):
    the_pool = pool(requirements=[req(wk.INSTANCE_FAMILY, "Exists", min_values=2)])
    the_catalog = catalog(
        instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096, zones=ZONES),
        instance_type("m5.2xlarge", vcpus=8, memory_gib=32, price=0.384, zones=ZONES),
        instance_type("c5.xlarge", vcpus=4, memory_gib=8, price=0.17, zones=ZONES),
    )
    inp = scheduling_input(
        [pod("big", cpu="6", memory="4Gi")],
        [the_pool],
        the_catalog,
        settings=Settings(min_values_policy=policy),  # type: ignore[arg-type]
    )
    return solve(inp), the_pool, the_catalog


def _record() -> NodeClaim:
    return NodeClaim(id="c1", nodepool="default", node_class="default", state="launched")


def test_a_relaxed_claim_is_annotated_and_stored_with_its_lowered_min_values():
    plan, the_pool, the_catalog = _plan("BestEffort")
    (claim,) = plan.new_claims
    request = launch_request(claim, the_catalog, cluster_config(the_pool), now=0.0)
    record = request.claim
    assert record.min_values_relaxed is True
    family = next(r for r in record.requirements if r.key == wk.INSTANCE_FAMILY)
    assert family.min_values == 1
    assert claim_from_doc(claim_to_doc(record)) == record
    obj = nodeclaim_object(replace(record, state="launched"), None, None, 0.0)
    assert obj["metadata"]["annotations"][MIN_VALUES_RELAXED] == "true"


def test_strict_refuses_and_claims_without_min_values_carry_no_annotation():
    plan, _, _ = _plan("Strict")
    assert not plan.new_claims and plan.unschedulable
    record = replace(_record(), min_values_relaxed=False)
    assert nodeclaim_object(record, None, None, 0.0)["metadata"]["annotations"][MIN_VALUES_RELAXED] == "false"
    plain = _record()
    assert MIN_VALUES_RELAXED not in nodeclaim_object(plain, None, None, 0.0)["metadata"]["annotations"]
