"""The template's fast type filter agrees with the catalog's own `compatible` and `compatible_offerings`."""

from __future__ import annotations

import pytest

from longshore.core import labels as wk
from longshore.core.catalog import Offering
from longshore.core.model import Requirement
from longshore.core.requirements import Requirements
from longshore.core.scheduling.templates import _compatible
from tests.builders import real_catalog

CASES = [
    [],
    [Requirement(wk.ZONE, "In", ("us-east-1a",))],
    [Requirement(wk.CAPACITY_TYPE, "In", ("spot",)), Requirement(wk.ZONE, "NotIn", ("us-east-1b",))],
    [
        Requirement(wk.INSTANCE_CATEGORY, "In", ("c", "m", "r")),
        Requirement(wk.CAPACITY_TYPE, "In", ("on-demand",)),
    ],
    [Requirement(wk.ARCH, "In", ("arm64",)), Requirement(wk.ZONE, "In", ("us-east-1c", "us-east-1d"))],
    [Requirement(wk.ZONE, "In", ("nowhere-1a",))],
]


@pytest.mark.parametrize("written", CASES)
def test_fast_filter_matches_the_catalog(written):
    catalog = real_catalog("us-east-1")
    # one unavailable offering: it must be skipped exactly as the catalog skips it
    first = catalog.instance_types[0]
    catalog = catalog.without_offerings(
        {(first.name, first.offerings[0].zone, first.offerings[0].capacity_type)}
    )
    requirements = Requirements.of(written)
    expected = [(it, it.compatible_offerings(requirements)) for it in catalog.compatible(requirements)]
    found = _compatible(catalog, requirements)
    assert [(it.name, offers) for it, offers in found] == [(it.name, offers) for it, offers in expected]
    assert all(isinstance(o, Offering) for _, offers in found for o in offers)
