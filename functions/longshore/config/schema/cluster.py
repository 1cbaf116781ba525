"""Schema of Longshore's own cluster config document (`longshore.io/v1alpha1 Cluster`).

Theory of operation: one Cluster document names the cluster, its region and Kubernetes version, the
interruption queue and how rebalance recommendations are handled, and Karpenter's global settings. The pool
documents come with it in three ways, which may be mixed: as further documents of the same file, inline in
`spec.manifests` (a list of Karpenter documents), or from other files named by `spec.include` (paths or glob
patterns relative to the cluster file). The loader resolves `manifests` and `include`; this module only checks
their shape.
"""

# Mutable defaults are safe on pydantic models (each instance gets a copy); ruff cannot see that through
# StrictModel, so RUF012 is off in the schema modules.
# ruff: noqa: RUF012

from __future__ import annotations

import re
from typing import Any

from pydantic import field_validator, model_validator

from longshore.config.durations import parse_go_duration
from longshore.config.schema.base import FieldRuleError, Metadata, StrictModel

CLUSTER_API_VERSION = "longshore.io/v1alpha1"
REBALANCE_POLICIES = ("ignore", "notify", "replace")
POOL_SOURCES = ("config", "cluster", "both")
"""Where NodePools and EC2NodeClasses come from: this config only, the cluster's objects only, or both (a
cluster object wins over a config document of the same kind and name)."""
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+$")
_KUBERNETES_VERSION = re.compile(r"^1\.[0-9]+$")
_CLUSTER_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


def check_rebalance(policy: str) -> str:
    if policy not in REBALANCE_POLICIES:
        raise ValueError(f"rebalance policy {policy!r} is not one of {', '.join(REBALANCE_POLICIES)}")
    return policy


class Interruption(StrictModel):
    queueName: str | None = None
    maxReceiveCount: int = 5
    rebalance: str = "ignore"
    rebalanceByPool: dict[str, str] = {}

    @field_validator("queueName")
    @classmethod
    def _queue(cls, name: str | None) -> str | None:
        if name is not None and not _QUEUE_NAME.match(name):
            raise ValueError(
                f"queueName {name!r} is not an SQS queue name (1-80 letters, digits, '-' or '_')"
            )
        return name

    @field_validator("maxReceiveCount")
    @classmethod
    def _receive(cls, count: int) -> int:
        if not 1 <= count <= 1000:
            raise ValueError(f"maxReceiveCount {count} is outside 1-1000")
        return count

    @field_validator("rebalance")
    @classmethod
    def _rebalance(cls, policy: str) -> str:
        return check_rebalance(policy)

    @field_validator("rebalanceByPool")
    @classmethod
    def _by_pool(cls, policies: dict[str, str]) -> dict[str, str]:
        for pool, policy in policies.items():
            try:
                check_rebalance(policy)
            except ValueError as exc:
                raise FieldRuleError(str(exc), at=(pool,), value=policy) from None
        return policies


class FeatureGates(StrictModel):
    """Karpenter's feature gates that change what Longshore does (Helm `settings.featureGates`, the controller's
    `--feature-gates` / `FEATURE_GATES`); each defaults as in Karpenter."""

    spotToSpotConsolidation: bool = False


class SpotDiversity(StrictModel):
    """Longshore's spot diversity rule (`core/scheduling/solver_diversity.py`): once a batch has at least
    `minClaims` spot claims, no spot (instance type, zone) pool keeps more than `maxPoolShare` of its spot vCPU,
    for at most `maxCostIncrease` (a fraction: 0.01 is 1 %) more than the cheapest plan. `enabled: false` (or
    `maxPoolShare: 1`) turns it off."""

    enabled: bool = True
    maxPoolShare: float = 0.5
    minClaims: int = 10
    maxCostIncrease: float = 0.01

    @field_validator("maxPoolShare")
    @classmethod
    def _share(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise ValueError(
                f"maxPoolShare is a fraction of a batch's spot vCPU above 0 and at most 1 (0.5 means half; 1 turns "
                f"the rule off), got {value}"
            )
        return value

    @field_validator("minClaims")
    @classmethod
    def _claims(cls, value: int) -> int:
        if value < 2:
            raise ValueError(
                f"minClaims is a number of spot claims, at least 2 (one claim cannot spread), got {value}"
            )
        return value

    @field_validator("maxCostIncrease")
    @classmethod
    def _cost(cls, value: float) -> float:
        if not 0 <= value <= 1:
            raise ValueError(
                f"maxCostIncrease is a fraction of the plan's cost from 0 to 1 (0.01 means 1 %), got {value}"
            )
        return value


class GlobalSettings(StrictModel):
    """Karpenter's global settings (v1alpha5 ConfigMap `karpenter-global-settings`, later flags/env)."""

    vmMemoryOverheadPercent: float = 0.075
    reservedENIs: int = 0
    batchIdleDuration: str = "1s"
    batchMaxDuration: str = "10s"
    defaultInstanceProfile: str | None = None
    isolatedVPC: bool = False
    enableENILimitedPodDensity: bool = True
    tags: dict[str, str] = {}
    clusterEndpoint: str | None = None
    assumeRoleARN: str | None = None
    enablePodENI: bool = False
    driftEnabled: bool = True
    preferencePolicy: str = "Respect"
    minValuesPolicy: str = "Strict"
    maxCostPerHour: float | None = None  # Longshore: cluster-wide dollar limit (USD/h) on every pool's nodes
    featureGates: FeatureGates = FeatureGates()
    spotDiversity: SpotDiversity = SpotDiversity()  # Longshore: spread large spot batches over pools

    @field_validator("preferencePolicy")
    @classmethod
    def _preference(cls, value: str) -> str:
        if value not in ("Respect", "Ignore"):
            raise ValueError(f"preferencePolicy {value!r} is not one of Respect, Ignore")
        return value

    @field_validator("minValuesPolicy")
    @classmethod
    def _min_values(cls, value: str) -> str:
        if value not in ("Strict", "BestEffort"):
            raise ValueError(f"minValuesPolicy {value!r} is not one of Strict, BestEffort")
        return value

    @field_validator("vmMemoryOverheadPercent")
    @classmethod
    def _overhead(cls, value: float) -> float:
        if not 0 <= value < 1:
            raise ValueError(f"vmMemoryOverheadPercent is a fraction (0.075 means 7.5%), got {value}")
        return value

    @field_validator("maxCostPerHour")
    @classmethod
    def _cost(cls, value: float | None) -> float | None:
        if value is not None and not 0 <= value < float("inf"):
            raise ValueError(f"maxCostPerHour is USD per hour and must not be negative, got {value}")
        return value

    @field_validator("reservedENIs")
    @classmethod
    def _enis(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"reservedENIs must not be negative, got {value}")
        return value

    @field_validator("batchIdleDuration", "batchMaxDuration")
    @classmethod
    def _duration(cls, value: str) -> str:
        if parse_go_duration(value) <= 0:
            raise ValueError(f"{value!r} must be longer than zero")
        return value

    @model_validator(mode="after")
    def _idle_within_max(self) -> GlobalSettings:
        if parse_go_duration(self.batchIdleDuration) > parse_go_duration(self.batchMaxDuration):
            raise FieldRuleError(
                f"batchIdleDuration ({self.batchIdleDuration}) must not exceed batchMaxDuration "
                f"({self.batchMaxDuration})",
                at=("batchIdleDuration",),
                value=self.batchIdleDuration,
            )
        return self


class ClusterSpec(StrictModel):
    region: str = "us-east-1"
    kubernetesVersion: str = "1.31"
    interruption: Interruption = Interruption()
    settings: GlobalSettings = GlobalSettings()
    include: list[str] = []
    manifests: list[dict[str, Any]] = []
    poolSource: str = "config"

    @field_validator("poolSource")
    @classmethod
    def _pool_source(cls, source: str) -> str:
        if source not in POOL_SOURCES:
            raise ValueError(f"poolSource {source!r} is not one of {', '.join(POOL_SOURCES)}")
        return source

    @field_validator("region")
    @classmethod
    def _region(cls, region: str) -> str:
        if not _REGION.match(region):
            raise ValueError(f"region {region!r} is not an AWS region name such as us-east-1")
        return region

    @field_validator("kubernetesVersion", mode="before")
    @classmethod
    def _version(cls, version: Any) -> Any:
        if isinstance(version, float):
            raise ValueError(
                f'kubernetesVersion must be a quoted string such as "1.31", got the number {version}'
            )
        if isinstance(version, str) and not _KUBERNETES_VERSION.match(version):
            raise ValueError(f'kubernetesVersion {version!r} is not a minor version such as "1.31"')
        return version


class ClusterMetadata(Metadata):
    """The cluster's metadata; `name` is the EKS cluster name (letters, digits, '-' and '_')."""

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _CLUSTER_NAME.match(name):
            raise ValueError(
                f"{name!r} is not an EKS cluster name: 1-100 letters, digits, '-' or '_', starting with a "
                "letter or digit"
            )
        return name


class Cluster(StrictModel):
    apiVersion: str
    kind: str
    metadata: ClusterMetadata
    spec: ClusterSpec = ClusterSpec()
