"""The CRDs Longshore ships (`deploy/crds/`) and what the emulator serves for them cannot drift apart."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from longshore_sim.kubeapi.resources import BY_PLURAL
from longshore_sim.kubeapi.tables import COLUMNS

CRDS = sorted((Path(__file__).resolve().parents[2] / "deploy" / "crds").glob("*.yaml"))


def test_the_karpenter_and_capacitybuffer_crds_are_shipped() -> None:
    assert [p.name for p in CRDS] == [
        "capacitybuffers.autoscaling.x-k8s.io.yaml",
        "ec2nodeclasses.karpenter.k8s.aws.yaml",
        "nodeclaims.karpenter.sh.yaml",
        "nodepools.karpenter.sh.yaml",
    ]


@pytest.mark.parametrize("path", CRDS, ids=lambda p: p.stem)
def test_the_emulator_serves_each_crd_as_defined(path: Path) -> None:
    crd = yaml.safe_load(path.read_text())
    spec = crd["spec"]
    (version,) = spec["versions"]
    served = BY_PLURAL[spec["names"]["plural"]]
    assert (served.group, served.version, served.kind) == (
        spec["group"],
        version["name"],
        spec["names"]["kind"],
    )
    assert served.namespaced == (spec["scope"] == "Namespaced")
    assert served.subresources == frozenset(version["subresources"])
    assert tuple(spec["names"].get("shortNames", ())) == served.short_names
    columns = [c["name"].lower() for c in version["additionalPrinterColumns"]]
    assert [c.name.lower() for c in COLUMNS[served.plural]] == ["name", *columns]
    assert [c.priority for c in COLUMNS[served.plural]][1:] == [
        c.get("priority", 0) for c in version["additionalPrinterColumns"]
    ]
