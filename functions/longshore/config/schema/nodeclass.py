"""Schema of `karpenter.k8s.aws/v1beta1` and `v1` EC2NodeClass: selector terms, network interfaces, connection
tracking, CPU options and the CRD's rules (aws `pkg/apis/v1/ec2nodeclass.go`, v1.14).

Theory of operation: the v1 spec extends the v1beta1 one with the fields v1 added (kubelet, `alias` and
`ssmParameter` AMI terms, capacity reservations, placement groups, network interfaces, connection tracking,
CPU options). Every CEL rule and pattern of the CRD is a validator here, reporting each violation of an
object at once with the sub-path it is about; fields Karpenter does not have are rejected (strict models).
"""

# Mutable defaults are safe on pydantic models (each instance gets a copy); ruff cannot see that through
# StrictModel, so RUF012 is off in the schema modules.
# ruff: noqa: RUF012

from __future__ import annotations

import re
import typing

from pydantic import ValidationInfo, field_validator, model_validator

from longshore.config.schema.base import FieldRuleError, Metadata, StrictModel, raise_all
from longshore.config.schema.ec2 import (
    BlockDeviceMappingV1,
    BlockDeviceMappingV1beta1,
    MetadataOptions,
    check_tags,
)
from longshore.config.schema.kubelet import KubeletV1

# --- EC2NodeClass -------------------------------------------------------------------------------------------

AMI_FAMILIES_V1BETA1 = ("AL2", "AL2023", "Bottlerocket", "Ubuntu", "Custom", "Windows2019", "Windows2022")
AMI_FAMILIES_V1 = ("AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025")
#: alias family -> amiFamily
ALIAS_FAMILIES = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
_ALIAS = re.compile(r"^([a-zA-Z0-9]+)@(.+)$")


def _check_term_tags(tags: dict[str, str]) -> dict[str, str]:
    for key, value in tags.items():
        if not key or not value:
            raise FieldRuleError("empty tag keys or values are not supported", at=(key,), value=value)
    if len(tags) > 20:
        raise ValueError(f"a selector term matches at most 20 tags, got {len(tags)}")
    return tags


def _check_id(value: str | None, pattern: re.Pattern[str], example: str) -> str | None:
    """An EC2 id the CRD constrains with a pattern (`subnet-…`, `sg-…`, `ami-…`, `cr-…`, `pg-…`)."""
    if value is not None and not pattern.search(value):
        raise ValueError(f"{value!r} is not a valid id (expected the form {example})")
    return value


_SUBNET_ID = re.compile(r"subnet-[0-9a-z]+")
_SG_ID = re.compile(r"sg-[0-9a-z]+")
_AMI_ID = re.compile(r"ami-[0-9a-z]+")
_CR_ID = re.compile(r"^cr-[0-9a-z]+$")
_PG_ID = re.compile(r"^pg-[0-9a-z]+$")
_ACCOUNT_ID = re.compile(r"^[0-9]{12}$")


class _Term(StrictModel):
    """A selector term: set fields are ANDed; at least one must be set; `id` cannot be combined.

    `QUALIFIERS` narrow a term but cannot select on their own (an AMI `owner`, a reservation `ownerID`).
    """

    QUALIFIERS: typing.ClassVar[tuple[str, ...]] = ()
    EXCLUSIVE: typing.ClassVar[tuple[str, ...]] = ("id", "alias")

    tags: dict[str, str] = {}

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: dict[str, str]) -> dict[str, str]:
        return _check_term_tags(tags)

    def set_fields(self) -> list[str]:
        return [name for name in type(self).model_fields if getattr(self, name)]

    @model_validator(mode="after")
    def _shape(self) -> _Term:
        names = self.set_fields()
        selectors = [name for name in type(self).model_fields if name not in self.QUALIFIERS]
        if not any(name in selectors for name in names):
            raise FieldRuleError(f"a selector term needs at least one of {', '.join(selectors)}")
        for exclusive in self.EXCLUSIVE:
            if exclusive in names and len(names) > 1:
                others = ", ".join(n for n in names if n != exclusive)
                raise FieldRuleError(
                    f"'{exclusive}' cannot be combined with other fields in the same term (also set: {others})",
                    at=(exclusive,),
                    value=getattr(self, exclusive),
                )
        return self


class SubnetTerm(_Term):
    id: str | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        return _check_id(value, _SUBNET_ID, "subnet-0123456789abcdef0")


class SecurityGroupTerm(_Term):
    EXCLUSIVE = ("id", "name")

    id: str | None = None
    name: str | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        return _check_id(value, _SG_ID, "sg-0123456789abcdef0")


class AMITermV1beta1(_Term):
    QUALIFIERS = ("owner",)

    id: str | None = None
    name: str | None = None
    owner: str | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        return _check_id(value, _AMI_ID, "ami-0123456789abcdef0")


class AMITermV1(AMITermV1beta1):
    alias: str | None = None
    ssmParameter: str | None = None

    @field_validator("alias")
    @classmethod
    def _alias(cls, alias: str | None) -> str | None:
        if alias is None:
            return None
        if len(alias) > 30:
            raise ValueError(f"alias {alias!r} is longer than 30 characters")
        match = _ALIAS.match(alias)
        if match is None:
            raise ValueError(f"alias {alias!r} must have the form family@version, e.g. al2023@latest")
        family, version = match.group(1).lower(), match.group(2)
        if family not in ALIAS_FAMILIES:
            raise ValueError(f"alias family {family!r} is not one of {', '.join(ALIAS_FAMILIES)}")
        if family.startswith("windows") and version != "latest":
            raise ValueError(f"Windows aliases only support the version 'latest', got {alias!r}")
        return alias


class CapacityReservationTerm(_Term):
    QUALIFIERS = ("ownerID",)

    id: str | None = None
    ownerID: str | None = None
    instanceMatchCriteria: str | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        return _check_id(value, _CR_ID, "cr-0123456789abcdef0")

    @field_validator("ownerID")
    @classmethod
    def _owner(cls, value: str | None) -> str | None:
        if value is not None and not _ACCOUNT_ID.match(value):
            raise ValueError(f"ownerID {value!r} is not a 12-digit AWS account id")
        return value

    @field_validator("instanceMatchCriteria")
    @classmethod
    def _criteria(cls, value: str | None) -> str | None:
        if value is not None and value not in ("open", "targeted"):
            raise ValueError(f"instanceMatchCriteria {value!r} is not one of open, targeted")
        return value


class PlacementGroupSelector(StrictModel):
    name: str | None = None
    id: str | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        return _check_id(value, _PG_ID, "pg-0123456789abcdef0")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and not value:
            raise ValueError("placementGroupSelector name must not be empty")
        return value

    @model_validator(mode="after")
    def _one(self) -> PlacementGroupSelector:
        if (self.name is None) == (self.id is None):
            raise FieldRuleError("placementGroupSelector needs exactly one of name, id")
        return self


class NetworkInterface(StrictModel):
    networkCardIndex: int
    deviceIndex: int
    interfaceType: str

    @field_validator("networkCardIndex", "deviceIndex")
    @classmethod
    def _index(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"must not be negative, got {value}")
        return value

    @field_validator("interfaceType")
    @classmethod
    def _type(cls, value: str) -> str:
        if value not in ("interface", "efa-only"):
            raise ValueError(f"interfaceType {value!r} is not one of interface, efa-only")
        return value


def _network_interface_rules(interfaces: list[NetworkInterface]) -> list[FieldRuleError]:
    """The CRD's list rules: a primary ENA interface at card 0 / device 0, no (card, device) pair twice, at most
    one efa-only interface per card (aws `pkg/apis/v1/ec2nodeclass.go`)."""
    if not interfaces:
        return []
    issues: list[FieldRuleError] = []
    if not any(
        (n.networkCardIndex, n.deviceIndex, n.interfaceType) == (0, 0, "interface") for n in interfaces
    ):
        issues.append(
            FieldRuleError(
                "networkInterfaces must include a primary interface (networkCardIndex 0, deviceIndex 0, "
                "interfaceType interface)",
                at=("networkInterfaces",),
            )
        )
    pairs_seen: set[tuple[int, int]] = set()
    efa_cards: set[int] = set()
    for index, item in enumerate(interfaces):
        pair = (item.networkCardIndex, item.deviceIndex)
        if pair in pairs_seen:
            issues.append(
                FieldRuleError(
                    f"networkCardIndex {pair[0]} / deviceIndex {pair[1]} appears twice",
                    at=("networkInterfaces", index, "deviceIndex"),
                    value=item.deviceIndex,
                )
            )
        if item.interfaceType == "efa-only" and item.networkCardIndex in efa_cards:
            issues.append(
                FieldRuleError(
                    f"network card {item.networkCardIndex} has more than one efa-only interface",
                    at=("networkInterfaces", index, "interfaceType"),
                    value=item.interfaceType,
                )
            )
        pairs_seen.add(pair)
        if item.interfaceType == "efa-only":
            efa_cards.add(item.networkCardIndex)
    return issues


#: Connection tracking timeouts, in seconds: (minimum, maximum) as the CRD bounds them.
CONNECTION_TRACKING_BOUNDS = {
    "tcpEstablishedTimeout": (60, 432000),
    "udpStreamTimeout": (60, 180),
    "udpTimeout": (30, 60),
}


class ConnectionTracking(StrictModel):
    """Idle connection-tracking timeouts on the ENIs Karpenter creates, as whole seconds."""

    tcpEstablishedTimeout: int | None = None
    udpStreamTimeout: int | None = None
    udpTimeout: int | None = None

    @field_validator("tcpEstablishedTimeout", "udpStreamTimeout", "udpTimeout")
    @classmethod
    def _bounds(cls, value: int | None, info: ValidationInfo) -> int | None:
        low, high = CONNECTION_TRACKING_BOUNDS[str(info.field_name)]
        if value is not None and not low <= value <= high:
            raise ValueError(f"{info.field_name} must be between {low} and {high} seconds, got {value}")
        return value

    @model_validator(mode="after")
    def _some(self) -> ConnectionTracking:
        if self.tcpEstablishedTimeout is None and self.udpStreamTimeout is None and self.udpTimeout is None:
            raise FieldRuleError(
                "connectionTracking needs at least one of " + ", ".join(CONNECTION_TRACKING_BOUNDS)
            )
        return self


class CPUOptions(StrictModel):
    nestedVirtualization: str | None = None

    @field_validator("nestedVirtualization")
    @classmethod
    def _nested(cls, value: str | None) -> str | None:
        if value is not None and value not in ("enabled", "disabled"):
            raise ValueError(f"nestedVirtualization {value!r} is not one of enabled, disabled")
        return value


def _terms_required(terms: list[_Term], name: str) -> list[FieldRuleError]:
    if not terms:
        return [FieldRuleError(f"{name} needs at least one term", at=(name,))]
    if len(terms) > 30:
        return [FieldRuleError(f"{name} allows at most 30 terms, got {len(terms)}", at=(name,))]
    return []


class EC2NodeClassSpecV1beta1(StrictModel):
    subnetSelectorTerms: list[SubnetTerm] = []
    securityGroupSelectorTerms: list[SecurityGroupTerm] = []
    amiSelectorTerms: list[AMITermV1beta1] = []
    amiFamily: str | None = None
    userData: str | None = None
    role: str | None = None
    instanceProfile: str | None = None
    tags: dict[str, str] = {}
    blockDeviceMappings: list[BlockDeviceMappingV1beta1] = []
    instanceStorePolicy: str | None = None
    detailedMonitoring: bool = False
    associatePublicIPAddress: bool | None = None
    metadataOptions: MetadataOptions | None = None
    context: str | None = None

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: dict[str, str]) -> dict[str, str]:
        return check_tags(tags)

    @field_validator("instanceStorePolicy")
    @classmethod
    def _instance_store(cls, policy: str | None) -> str | None:
        if policy is not None and policy != "RAID0":
            raise ValueError(f"instanceStorePolicy {policy!r} is not supported; the only policy is RAID0")
        return policy

    def common_rules(self, families: tuple[str, ...]) -> list[FieldRuleError]:
        issues = _terms_required(list(self.subnetSelectorTerms), "subnetSelectorTerms")
        issues += _terms_required(list(self.securityGroupSelectorTerms), "securityGroupSelectorTerms")
        if self.amiFamily is not None and self.amiFamily not in families:
            issues.append(
                FieldRuleError(
                    f"amiFamily {self.amiFamily!r} is not one of {', '.join(families)}",
                    at=("amiFamily",),
                    value=self.amiFamily,
                )
            )
        if self.role is not None and self.instanceProfile is not None:
            issues.append(
                FieldRuleError(
                    "role and instanceProfile cannot both be set: give exactly one (Longshore creates an instance "
                    "profile for the role, or uses the instance profile you name)",
                    at=("instanceProfile",),
                    value=self.instanceProfile,
                )
            )
        if self.role is None and self.instanceProfile is None:
            issues.append(FieldRuleError("one of role, instanceProfile is required", at=("role",)))
        for name in ("role", "instanceProfile"):
            if getattr(self, name) == "":
                issues.append(FieldRuleError(f"{name} cannot be empty", at=(name,), value=""))
        roots = [index for index, mapping in enumerate(self.blockDeviceMappings) if mapping.rootVolume]
        if len(roots) > 1:
            issues.append(
                FieldRuleError(
                    "only one block device mapping may set rootVolume: true",
                    at=("blockDeviceMappings", roots[1], "rootVolume"),
                )
            )
        return issues

    @model_validator(mode="after")
    def _rules(self) -> EC2NodeClassSpecV1beta1:
        issues = self.common_rules(AMI_FAMILIES_V1BETA1)
        if self.amiFamily is None:
            issues.append(
                FieldRuleError("amiFamily is required in karpenter.k8s.aws/v1beta1", at=("amiFamily",))
            )
        if self.amiFamily == "Custom" and not self.amiSelectorTerms:
            issues.append(
                FieldRuleError(
                    "amiFamily Custom needs amiSelectorTerms naming the AMIs", at=("amiSelectorTerms",)
                )
            )
        raise_all(issues)
        return self


class EC2NodeClassSpecV1(EC2NodeClassSpecV1beta1):
    amiSelectorTerms: list[AMITermV1] = []  # type: ignore[assignment]
    blockDeviceMappings: list[BlockDeviceMappingV1] = []  # type: ignore[assignment]
    kubelet: KubeletV1 | None = None
    capacityReservationSelectorTerms: list[CapacityReservationTerm] = []
    placementGroupSelector: PlacementGroupSelector | None = None
    networkInterfaces: list[NetworkInterface] = []
    ipPrefixCount: int | None = None
    connectionTracking: ConnectionTracking | None = None
    cpuOptions: CPUOptions | None = None

    @model_validator(mode="after")
    def _rules(self) -> EC2NodeClassSpecV1:
        issues = self.common_rules(AMI_FAMILIES_V1)
        terms = self.amiSelectorTerms
        aliases = [index for index, term in enumerate(terms) if term.alias is not None]
        if not terms:
            issues.append(
                FieldRuleError(
                    "amiSelectorTerms is required (for example [{alias: al2023@latest}])",
                    at=("amiSelectorTerms",),
                )
            )
        if aliases and len(terms) > 1:
            issues.append(
                FieldRuleError(
                    "an alias AMI selector term cannot be combined with other amiSelectorTerms; use the alias alone",
                    at=("amiSelectorTerms", aliases[0], "alias"),
                    value=terms[aliases[0]].alias,
                )
            )
        if aliases:
            alias = terms[aliases[0]].alias or ""
            alias_family = ALIAS_FAMILIES.get(alias.partition("@")[0].lower())
            if self.amiFamily is not None and self.amiFamily not in (alias_family, "Custom"):
                issues.append(
                    FieldRuleError(
                        f"amiFamily {self.amiFamily!r} contradicts the alias {alias!r}: leave amiFamily out, "
                        f"set it to {alias_family} or Custom",
                        at=("amiFamily",),
                        value=self.amiFamily,
                    )
                )
        elif terms and self.amiFamily is None:
            issues.append(
                FieldRuleError(
                    "amiFamily is required when amiSelectorTerms has no alias term", at=("amiFamily",)
                )
            )
        if self.ipPrefixCount is not None and self.ipPrefixCount < 0:
            issues.append(FieldRuleError("ipPrefixCount must not be negative", at=("ipPrefixCount",)))
        issues += _network_interface_rules(self.networkInterfaces)
        for name, most in (
            ("blockDeviceMappings", 50),
            ("networkInterfaces", 150),
            ("capacityReservationSelectorTerms", 30),
        ):
            count = len(getattr(self, name))
            if count > most:
                issues.append(
                    FieldRuleError(
                        f"{name} allows at most {most} items, got {count}", at=(name,), value=count
                    )
                )
        raise_all(issues)
        return self


class EC2NodeClassV1beta1(StrictModel):
    apiVersion: str
    kind: str
    metadata: Metadata
    spec: EC2NodeClassSpecV1beta1
    status: object = None


class EC2NodeClassV1(StrictModel):
    apiVersion: str
    kind: str
    metadata: Metadata
    spec: EC2NodeClassSpecV1
    status: object = None
