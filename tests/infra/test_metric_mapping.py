"""The Karpenter -> Longshore metric mapping: every mapped metric is one the code emits, and docs/metrics.md
lists exactly the mapping (the dashboard's text widget is built from the same dict)."""

from __future__ import annotations

import re
from pathlib import Path

from longshore.core import telemetry

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def test_every_mapped_metric_is_emitted_by_the_code() -> None:
    assert set(telemetry.KARPENTER_EQUIVALENTS.values()) and all(
        name in telemetry.ALL_METRICS for name, _ in telemetry.KARPENTER_EQUIVALENTS.values()
    )


def test_the_doc_table_is_the_mapping() -> None:
    rows = re.findall(r"^\| `(karpenter_[a-z_]+)` \| `([A-Za-z0-9]+)` \|", DOC.read_text(), re.MULTILINE)
    assert dict(rows) == {k: v[0] for k, v in telemetry.KARPENTER_EQUIVALENTS.items()}
