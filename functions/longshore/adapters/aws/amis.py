"""AMI resolution: the image to boot for a node class, per architecture and accelerator variant.

Theory of operation: for the EKS-optimised families the image comes from the public SSM parameter that AWS
keeps for the cluster's Kubernetes version (`ssm_parameter_name`; Karpenter `pkg/providers/amifamily/*.go`):

    AL2           /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2[-arm64|-gpu]/recommended/image_id
    AL2023        /aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/<x86_64|arm64>/<standard|nvidia|neuron>/recommended/image_id
    Bottlerocket  /aws/service/bottlerocket/aws-k8s-<k8s>[-nvidia]/<x86_64|arm64>/latest/image_id
    Windows20xx   /aws/service/ami-windows-latest/Windows_Server-<2019|2022|2025>-English-Core-EKS_Optimized-<k8s>/image_id
                  (x86_64 only; only `latest`, as Karpenter's `windows.go`)

An alias (`al2023@latest`, `bottlerocket@v1.20.0`...) picks the family and version; no selector terms means
the node class's family at `latest`. Parameters are read by exact name with `GetParameter` (never a path scan:
`/aws/service` holds tens of thousands of names). Other selector terms (`id`, `name` + `owner`, `tags`,
`ssmParameter`) go through `DescribeImages`; among matching images of the wanted architecture the newest
`CreationDate` wins, then the name (Karpenter's order). Results are cached for the resolver's lifetime (one run).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from longshore.adapters.aws.retry import ClientError
from longshore.core.model import NodeClass, SelectorTerm

log = logging.getLogger(__name__)
DEFAULT_OWNERS: Final = ("self", "amazon")
_ALIAS_FAMILIES: Final = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
PUBLIC_FAMILIES: Final = frozenset(_ALIAS_FAMILIES.values())


class AmiError(ValueError):
    """No image for a node class (names the node class, the field and the parameter or term)."""


def _al2_suffix(arch: str, accelerator: str) -> str:
    if accelerator in ("nvidia", "neuron") and arch == "x86_64":
        return "-gpu"
    return "-arm64" if arch == "arm64" else ""


def ssm_parameter_name(
    family: str, k8s_version: str, arch: str, accelerator: str = "", version: str = "latest"
) -> str:
    """The public SSM parameter holding the image id of `family` for this Kubernetes version and variant."""
    if arch not in ("x86_64", "arm64"):
        raise AmiError(f"architecture {arch!r} is not x86_64 or arm64")
    if family == "AL2":
        suffix = _al2_suffix(arch, accelerator)
        leaf = "recommended" if version == "latest" else f"amazon-eks{suffix}-node-{k8s_version}-{version}"
        return f"/aws/service/eks/optimized-ami/{k8s_version}/amazon-linux-2{suffix}/{leaf}/image_id"
    if family == "AL2023":
        variant = accelerator if accelerator in ("nvidia", "neuron") else "standard"
        if variant == "neuron" and arch != "x86_64":
            variant = "standard"
        leaf = (
            "recommended"
            if version == "latest"
            else f"amazon-eks-node-al2023-{arch}-{variant}-{k8s_version}-{version}"
        )
        return (
            f"/aws/service/eks/optimized-ami/{k8s_version}/amazon-linux-2023/{arch}/{variant}/{leaf}/image_id"
        )
    if family == "Bottlerocket":
        flavour = "-nvidia" if accelerator == "nvidia" else ""
        return f"/aws/service/bottlerocket/aws-k8s-{k8s_version}{flavour}/{arch}/{version}/image_id"
    if family.startswith("Windows") and family in PUBLIC_FAMILIES:
        if arch != "x86_64":
            raise AmiError(f"amiFamily {family} runs on x86_64 only, not {arch}")
        if version != "latest":
            raise AmiError(f"amiFamily {family}: Windows AMIs are published as latest only, not {version!r}")
        year = family.removeprefix("Windows")
        return f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-{k8s_version}/image_id"
    raise AmiError(f"amiFamily {family!r} has no public SSM parameter; use amiSelectorTerms")


def parse_alias(alias: str) -> tuple[str, str]:
    """(`family`, `version`) of an alias such as `al2023@latest`."""
    name, _, version = alias.partition("@")
    family = _ALIAS_FAMILIES.get(name.lower())
    if family is None or not version:
        raise AmiError(
            f"amiSelectorTerms alias {alias!r} is not <al2|al2023|bottlerocket|windows20xx>@<version|latest>"
        )
    return family, version


def effective_family(node_class: NodeClass) -> str:
    """The family user data is rendered for: the alias's, else the node class's `amiFamily`."""
    for term in node_class.ami_selector_terms:
        if term.alias:
            return parse_alias(term.alias)[0]
    return node_class.ami_family


def _version_in_name(name: str) -> str:
    """`v1.46.0` from `bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a` ("" when the name has none)."""
    return next((part for part in name.split("-") if part.startswith("v") and "." in part), "")


def bottlerocket_version(node_class: NodeClass, image_name: str | None = None) -> str:
    """The Bottlerocket release a node class boots, found as Karpenter's `resolveAMIVersion` does: the alias's
    version (`latest` included), else a version in a `name` term, else in the booted image's name; "" when
    none says."""
    for term in node_class.ami_selector_terms:
        if term.alias and "@" in term.alias:
            return term.alias.partition("@")[2]
    for term in node_class.ami_selector_terms:
        if term.name and (found := _version_in_name(term.name)):
            return found
    return _version_in_name(image_name or "")


def supports_default_bind(version: str) -> bool:
    """Bottlerocket 1.46 and later bind ephemeral storage to its default directories without `--dirs`
    (Karpenter `pkg/providers/version/version.go` `SupportsDefaultBind`); `latest` counts as new, an unknown
    version as old."""
    if version == "latest":
        return True
    parts = version.lstrip("v").split(".")
    if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return False
    major, minor = int(parts[0]), int(parts[1])
    return major > 1 or (major == 1 and minor >= 46)


REFRESH_SECONDS = 300.0  # how long a resolved AMI is trusted; the planner re-reads drift targets as often


class AmiResolver:
    """Resolves image ids for node classes, caching answers until `refresh_if_stale` finds them too old.

    A warm Lambda container lives for hours; without a refresh it would keep launching the AMI it saw first
    after a new one is published, and the planner would find every new node drifted.
    """

    def __init__(self, ssm: Any, ec2: Any, *, ttl_s: float = REFRESH_SECONDS) -> None:
        self._ssm = ssm
        self._ec2 = ec2
        self._ttl_s = ttl_s
        self._fetched_at: float | None = None
        self._parameters: dict[str, str] = {}
        self._images: dict[tuple[SelectorTerm, ...], tuple[dict[str, Any], ...]] = {}

    def forget(self) -> None:
        """Drop every answer: the next resolve asks SSM and EC2 again (a cold start's view)."""
        self._fetched_at = None
        self._parameters.clear()
        self._images.clear()

    def refresh_if_stale(self, now: float) -> None:
        """Forget cached answers older than the TTL (`now` comes from the caller's clock)."""
        if self._fetched_at is None or now - self._fetched_at >= self._ttl_s:
            self._parameters.clear()
            self._images.clear()
            self._fetched_at = now

    def parameter(self, name: str, node_class: str = "") -> str:
        if name not in self._parameters:
            try:
                value = self._ssm.get_parameter(Name=name)["Parameter"]["Value"]
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                raise AmiError(
                    f"EC2NodeClass {node_class}: SSM parameter {name} cannot be read ({code})"
                ) from error
            self._parameters[name] = str(value)
        return self._parameters[name]

    def resolve(self, node_class: NodeClass, k8s_version: str, arch: str, accelerator: str = "") -> str:
        """The image id to boot instances of `arch`/`accelerator` with `node_class`."""
        terms = node_class.ami_selector_terms
        alias = next((t.alias for t in terms if t.alias), None)
        if alias or not terms:
            family, version = parse_alias(alias) if alias else (node_class.ami_family, "latest")
            if family not in PUBLIC_FAMILIES:
                raise AmiError(
                    f"EC2NodeClass {node_class.name}: amiFamily {family} needs spec.amiSelectorTerms (no public parameter)"
                )
            return self.parameter(
                ssm_parameter_name(family, k8s_version, arch, accelerator, version), node_class.name
            )
        images = [i for i in self._selected_images(node_class) if i.get("Architecture", "x86_64") == arch]
        if not images:
            raise AmiError(f"EC2NodeClass {node_class.name}: spec.amiSelectorTerms match no {arch} image")
        images.sort(key=lambda i: (str(i.get("CreationDate", "")), str(i.get("Name", ""))), reverse=True)
        return str(images[0]["ImageId"])

    def image_name(self, node_class: NodeClass, image_id: str) -> str | None:
        """The name of an image `resolve` picked through selector terms (None for SSM-resolved images)."""
        for image in self._images.get(node_class.ami_selector_terms, ()):
            if image.get("ImageId") == image_id:
                return str(image.get("Name", "")) or None
        return None

    def _selected_images(self, node_class: NodeClass) -> tuple[dict[str, Any], ...]:
        key = node_class.ami_selector_terms
        if key in self._images:
            return self._images[key]
        found: dict[str, dict[str, Any]] = {}
        for term in key:
            kwargs: dict[str, Any] = {}
            filters: list[dict[str, Any]] = [{"Name": "state", "Values": ["available"]}]
            if term.ssm_parameter:
                kwargs["ImageIds"] = [self.parameter(term.ssm_parameter, node_class.name)]
            elif term.id:
                kwargs["ImageIds"] = [term.id]
            else:
                if term.name:
                    filters.append({"Name": "name", "Values": [term.name]})
                for tag_key, tag_value in term.tags:
                    if tag_value == "*":
                        filters.append({"Name": "tag-key", "Values": [tag_key]})
                    else:
                        filters.append({"Name": f"tag:{tag_key}", "Values": [tag_value]})
                kwargs["Owners"] = [term.owner] if term.owner else list(DEFAULT_OWNERS)
            try:
                response = self._ec2.describe_images(Filters=filters, **kwargs)
            except ClientError as error:
                code = error.response.get("Error", {}).get("Code", "")
                raise AmiError(
                    f"EC2NodeClass {node_class.name}: spec.amiSelectorTerms {term} failed: {code}"
                ) from error
            for image in response.get("Images", []):
                found[str(image["ImageId"])] = image
        self._images[key] = tuple(found.values())
        return self._images[key]


IMAGE_REFRESH_S: Final = 300.0


class ResolvedImages:
    """`ImageResolver` on the launcher's AMI resolver: every image a node class resolves to now (each
    architecture and accelerator variant), re-read every `IMAGE_REFRESH_S` so a new AMI is seen."""

    VARIANTS = (("x86_64", ""), ("arm64", ""), ("x86_64", "nvidia"), ("x86_64", "neuron"))

    def __init__(
        self, new_resolver: Callable[[], Any], kubernetes_version: str, now: Callable[[], float]
    ) -> None:
        self._new_resolver = new_resolver
        self._version = kubernetes_version
        self._now = now
        self._resolver: Any = None
        self._fetched_at = 0.0

    def current_images(self, node_class: NodeClass) -> frozenset[str]:
        if self._resolver is None or self._now() - self._fetched_at > IMAGE_REFRESH_S:
            self._resolver, self._fetched_at = self._new_resolver(), self._now()
        found: set[str] = set()
        for arch, accelerator in self.VARIANTS:
            try:
                found.add(self._resolver.resolve(node_class, self._version, arch, accelerator))
            except (AmiError, LookupError, ValueError):
                continue
            except Exception as error:  # an SSM/EC2 error must not stop the pass: no AMI drift this time
                log.warning(
                    "cannot resolve current AMIs", extra={"node_class": node_class.name, "error": str(error)}
                )
                return frozenset()
        return frozenset(found)
