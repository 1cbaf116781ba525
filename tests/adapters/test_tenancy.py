"""`karpenter.k8s.aws/instance-tenancy`: every type offers default and dedicated; a claim that only allows
dedicated launches from a template with `Placement.Tenancy: dedicated` (aws provider `getTenancyType`); a pool
limited to dedicated is priced at the dedicated estimate (`core.pricing.DEDICATED_FACTOR`; Karpenter prices it
as shared)."""

from __future__ import annotations

import pytest

from longshore.adapters.aws.fleet import tenancy_of
from longshore.adapters.aws.launch_templates import TemplateSpec
from longshore.core import labels as wk
from longshore.core.claims import NodeClaim
from longshore.core.model import MetadataOptions, Requirement
from longshore.core.overlays import pool_view, price_of
from longshore.core.pricing import DEDICATED_FACTOR, dedicated_price
from longshore.core.scheduling import solve
from longshore.services.launch_requests import launch_request
from tests.builders import catalog, instance_type, pod, pool, scheduling_input
from tests.planner.fakes import cluster_config


def _catalog():
    return catalog(instance_type("m5.large", vcpus=2, memory_gib=8, price=0.096, zones=("us-east-1a",)))


def test_every_type_offers_both_tenancies():
    (m5,) = list(_catalog())
    requirements = m5.requirements()
    assert requirements.allows(wk.INSTANCE_TENANCY, "default")
    assert requirements.allows(wk.INSTANCE_TENANCY, "dedicated")


def test_a_pod_that_selects_dedicated_gets_a_dedicated_claim():
    the_pool = pool()
    plan = solve(
        scheduling_input(
            [pod("p", node_selector={wk.INSTANCE_TENANCY: "dedicated"}), pod("q")], [the_pool], _catalog()
        )
    )
    assert not plan.unschedulable
    by_pod = {key: claim for claim in plan.new_claims for key in claim.pods}
    dedicated = launch_request(by_pod["default/p"], _catalog(), cluster_config(the_pool), now=0.0).claim
    shared = launch_request(by_pod["default/q"], _catalog(), cluster_config(the_pool), now=0.0).claim
    assert tenancy_of(dedicated) == "dedicated" and tenancy_of(shared) == "default"


def test_tenancy_of_prefers_default_and_the_template_places_dedicated():
    claim = NodeClaim(id="c", nodepool="p", node_class="c")
    assert tenancy_of(claim) == "default"
    either = (Requirement(wk.INSTANCE_TENANCY, "In", ("default", "dedicated")),)
    assert tenancy_of(NodeClaim(id="c", nodepool="p", node_class="c", requirements=either)) == "default"
    spec = TemplateSpec("ami-1", ("sg-1",), "", (), MetadataOptions())
    assert "Placement" not in spec.data()
    dedicated = TemplateSpec("ami-1", ("sg-1",), "", (), MetadataOptions(), tenancy="dedicated")
    assert dedicated.data()["Placement"] == {"Tenancy": "dedicated"} and dedicated.name() != spec.name()


def test_a_dedicated_only_pool_is_priced_at_the_dedicated_estimate() -> None:
    dedicated_pool = pool("dedicated", requirements=(Requirement(wk.INSTANCE_TENANCY, "In", ("dedicated",)),))
    plan = solve(scheduling_input([pod("p")], [dedicated_pool], _catalog()))
    (claim,) = plan.new_claims
    assert claim.price_per_hour == pytest.approx(0.096 * DEDICATED_FACTOR) == dedicated_price(0.096)
    request = launch_request(claim, _catalog(), cluster_config(dedicated_pool), now=0.0)
    assert tenancy_of(request.claim) == "dedicated"
    assert {o.price for o in request.options} == {dedicated_price(0.096)}
    assert price_of(pool_view(_catalog(), dedicated_pool, "AL2023"), {wk.INSTANCE_TYPE: "m5.large"}) == (
        dedicated_price(0.096)
    )
    shared = solve(scheduling_input([pod("p")], [pool()], _catalog())).new_claims[0]
    assert shared.price_per_hour == pytest.approx(0.096)
    assert price_of(pool_view(_catalog(), pool(), "AL2023"), {wk.INSTANCE_TYPE: "m5.large"}) == 0.096
