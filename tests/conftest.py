"""Test setup: paths to the Karpenter fixtures kept in this repository, and environment that keeps moto fast and offline."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_SECURITY_TOKEN", "testing")
os.environ.setdefault("AWS_SESSION_TOKEN", "testing")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Longshore")
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "longshore")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "karpenter"
VALID_MANIFESTS = FIXTURES / "seed-manifests" / "valid"
VALID_V1_MANIFESTS = FIXTURES / "seed-manifests" / "valid-v1"
INVALID_MANIFESTS = FIXTURES / "seed-manifests" / "invalid"
SEED_WORKLOADS = FIXTURES / "seed-workloads"
