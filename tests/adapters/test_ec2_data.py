"""The EC2 data the package ships (`longshore/data/ec2/`) is exactly what the pinned moto carries."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

import longshore
from longshore.adapters.aws.instance_types import offline_catalog
from longshore_sim.ec2_data import expected_files

pytestmark = pytest.mark.slow

SHIPPED = Path(longshore.__file__).resolve().parent / "data" / "ec2"


def test_shipped_files_match_the_pinned_moto_and_their_provenance() -> None:
    # GIVEN what the installed moto carries now, WHEN compared with the shipped files, THEN they are identical
    expected = expected_files()
    provenance = json.loads((SHIPPED / "PROVENANCE.json").read_text())
    shipped = {
        str(path.relative_to(SHIPPED)).removesuffix(".gz"): gzip.decompress(path.read_bytes())
        for path in SHIPPED.rglob("*.gz")
    }
    assert set(shipped) == set(expected), "regenerate with `python -m longshore_sim.ec2_data`"
    for name, data in expected.items():
        assert shipped[name] == data, f"{name} is stale: run `python -m longshore_sim.ec2_data`"
        assert provenance["sha256"][name] == hashlib.sha256(data).hexdigest()


def test_offline_catalog_has_real_zone_ids() -> None:
    catalog = offline_catalog("us-east-1")
    m5 = catalog["m5.large"]
    assert {o.zone for o in m5.offerings} >= {"us-east-1a", "us-east-1b"}
    assert all(o.zone_id.startswith("use1-az") for o in m5.offerings)
