"""User data: what it carries (`Bootstrap`), the cluster a node joins (`ClusterInfo`), and reading it back.

Theory of operation: a node learns its labels, taints (including the `karpenter.sh/unregistered:NoExecute`
startup taint), max pods, reserved resources and eviction thresholds only from its user data, so the values
rendered (`adapters.aws.userdata_render`, one format per AMI family) must be the ones the plan assumed.
`parse_bootstrap` reads any of the formats back into a `Bootstrap`, from text or base64: AL2/Ubuntu
(MIME with a `bootstrap.sh --kubelet-extra-args` shell part), AL2023 (MIME with nodeadm `NodeConfig`s),
Bottlerocket (TOML `[settings.kubernetes]`) and Windows (`Start-EKSBootstrap.ps1 -KubeletExtraArgs`); later
settings win, as on a node. `instanceStorePolicy: RAID0` is carried too, in each family's own words (Karpenter
`pkg/providers/amifamily/bootstrap/`): AL2 `bootstrap.sh --local-disks raid0`, AL2023
`spec.instance.localStorage.strategy: RAID0` in the NodeConfig, Bottlerocket the bootstrap command
`settings.bootstrap-commands."000-mount-instance-storage"` (`apiclient ephemeral-storage init`, then `bind`,
with `--dirs /var/lib/containerd /var/lib/kubelet /var/log/pods` before Bottlerocket 1.46). The simulated kubelet uses it to create the Node the real kubelet would, and the
round-trip tests (render, then read back) pin both directions.
"""

from __future__ import annotations

import base64
import binascii
import email
import email.message
import ipaddress
import shlex
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from longshore.core.model import Pairs, Taint, TaintEffect

BOUNDARY: Final = "//"
NODECONFIG_CONTENT_TYPE: Final = "application/node.eks.aws"
SHELL_CONTENT_TYPE: Final = 'text/x-shellscript; charset="us-ascii"'
_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class UserDataError(ValueError):
    """User data that cannot be rendered or read (names the family and what is wrong)."""


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """What a node needs to join the cluster (from `eks:DescribeCluster`)."""

    name: str
    endpoint: str
    ca_data: str  # base64 PEM, as DescribeCluster returns it
    version: str
    service_cidr: str = "10.100.0.0/16"
    ip_family: str = "ipv4"

    @property
    def dns_ip(self) -> str:
        """kube-dns's cluster IP: the 10th address of the service CIDR (EKS's convention)."""
        return str(ipaddress.ip_network(self.service_cidr, strict=False)[10])


@dataclass(frozen=True, slots=True)
class Bootstrap:
    """The node settings user data carries, in the form both the renderer and the parser use."""

    labels: Pairs = ()
    taints: tuple[Taint, ...] = ()
    max_pods: int | None = None
    kube_reserved: Pairs = ()
    system_reserved: Pairs = ()
    eviction_hard: Pairs = ()
    #: instanceStorePolicy RAID0: the node assembles its instance-store volumes into one RAID0 array that holds
    #: the kubelet's and containerd's state (its ephemeral storage)
    instance_store_raid0: bool = False
    #: Bottlerocket only: the directories `apiclient ephemeral-storage bind` names (empty: the OS's defaults,
    #: Bottlerocket 1.46 and later)
    ephemeral_bind_dirs: tuple[str, ...] = ()


#: Bottlerocket's RAID0 bootstrap command (Karpenter `bootstrap/bottlerocket.go`) and the directories it binds
#: on images older than 1.46 (`version.SupportsDefaultBind`).
BOTTLEROCKET_RAID0_COMMAND: Final = "000-mount-instance-storage"
BOTTLEROCKET_LEGACY_BIND_DIRS: Final = ("/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")


# --------------------------------------------------------------------------------------------------------------
# MIME multipart (shared with the renderer)


def is_mime(text: str) -> bool:
    head = text.lstrip()[:400].lower()
    return head.startswith("mime-version:") or head.startswith("content-type: multipart/")


def mime_parts(text: str) -> list[tuple[str, str]]:
    """(content type, body) of every leaf part of a MIME multipart document."""
    message = email.message_from_string(text.lstrip())
    parts: list[tuple[str, str]] = []
    for part in message.walk():
        if part.is_multipart():
            continue
        payload = part.get_payload(decode=True)
        body = payload.decode() if isinstance(payload, bytes) else str(part.get_payload())
        parts.append((part.get("Content-Type", "text/plain"), body))
    return parts


def looks_like_nodeconfig(text: str) -> bool:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(doc, dict) and doc.get("kind") == "NodeConfig"


# --------------------------------------------------------------------------------------------------------------
# Reading back


def decode_user_data(data: str) -> str:
    """User data as text: base64 (as EC2 returns it) is decoded, text is returned unchanged."""
    stripped = data.strip()
    if not stripped or any(c.isspace() for c in stripped):
        return data
    try:
        decoded = base64.b64decode(stripped, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return data
    return decoded


def _parse_taint(text: str) -> Taint:
    """`key=value:Effect`, `key:Effect` or `key=:Effect`."""
    body, _, effect = text.rpartition(":")
    if effect not in _EFFECTS or not body:
        raise UserDataError(f"register-with-taints: {text!r} is not key[=value]:Effect")
    key, _, value = body.partition("=")
    return Taint(key, _effect(effect), value)


def _effect(text: str) -> TaintEffect:
    if text == "NoSchedule":
        return "NoSchedule"
    if text == "PreferNoSchedule":
        return "PreferNoSchedule"
    if text == "NoExecute":
        return "NoExecute"
    raise UserDataError(f"taint effect {text!r} is not NoSchedule, PreferNoSchedule or NoExecute")


def _split_pairs(text: str, sep: str) -> Pairs:
    pairs: list[tuple[str, str]] = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, found, value = item.partition(sep)
        if not found:
            raise UserDataError(f"{item!r} is not key{sep}value")
        pairs.append((key, value))
    return tuple(sorted(pairs))


def _str_pairs(mapping: Any) -> Pairs:
    if not isinstance(mapping, dict):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in mapping.items()))


def _parse_kubelet_flags(flags: Iterable[str], into: dict[str, Any]) -> None:
    for flag in flags:
        name, _, value = flag.partition("=")
        if name == "--node-labels":
            into["labels"] = _split_pairs(value, "=")
        elif name == "--register-with-taints":
            into["taints"] = tuple(_parse_taint(t) for t in value.split(",") if t)
        elif name == "--max-pods":
            into["max_pods"] = int(value)
        elif name == "--kube-reserved":
            into["kube_reserved"] = _split_pairs(value, "=")
        elif name == "--system-reserved":
            into["system_reserved"] = _split_pairs(value, "=")
        elif name == "--eviction-hard":
            into["eviction_hard"] = _split_pairs(value, "<")


def _parse_bootstrap_script(script: str, into: dict[str, Any]) -> bool:
    joined = script.replace("\\\n", " ")
    for line in joined.splitlines():
        if "/etc/eks/bootstrap.sh" not in line:
            continue
        words = shlex.split(line)
        for i, word in enumerate(words):
            if word == "--local-disks" and i + 1 < len(words):
                into["instance_store_raid0"] = words[i + 1].lower() == "raid0"
            elif word == "--kubelet-extra-args" and i + 1 < len(words):
                _parse_kubelet_flags(shlex.split(words[i + 1]), into)
            elif word.startswith("--kubelet-extra-args="):
                _parse_kubelet_flags(shlex.split(word.partition("=")[2]), into)
        return True
    return False


def _parse_windows_script(script: str, into: dict[str, Any]) -> None:
    for line in script.splitlines():
        if "-KubeletExtraArgs" not in line:
            continue
        words = shlex.split(line, posix=True)
        for i, word in enumerate(words):
            if word == "-KubeletExtraArgs" and i + 1 < len(words):
                _parse_kubelet_flags(shlex.split(words[i + 1]), into)


def _parse_nodeconfig(text: str, into: dict[str, Any]) -> None:
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict) or doc.get("kind") != "NodeConfig":
        return
    spec = doc.get("spec") or {}
    strategy = ((spec.get("instance") or {}).get("localStorage") or {}).get("strategy")
    if strategy is not None:
        into["instance_store_raid0"] = str(strategy) == "RAID0"
    kubelet = spec.get("kubelet") or {}
    config = kubelet.get("config") or {}
    if "maxPods" in config:
        into["max_pods"] = int(config["maxPods"])
    if "registerWithTaints" in config:
        into["taints"] = tuple(
            Taint(str(t["key"]), _effect(str(t["effect"])), str(t.get("value", "")))
            for t in config["registerWithTaints"]
        )
    for field_name, key in (
        ("kube_reserved", "kubeReserved"),
        ("system_reserved", "systemReserved"),
        ("eviction_hard", "evictionHard"),
    ):
        if key in config:
            into[field_name] = _str_pairs(config[key])
    _parse_kubelet_flags(kubelet.get("flags") or [], into)


def _bottlerocket_raid0(settings: Mapping[str, Any]) -> tuple[bool, tuple[str, ...]]:
    """Whether the RAID0 bootstrap command is there, and the directories its bind step names."""
    command = (settings.get("bootstrap-commands") or {}).get(BOTTLEROCKET_RAID0_COMMAND)
    if not isinstance(command, dict):
        return False, ()
    for step in command.get("commands") or []:
        words = [str(w) for w in step] if isinstance(step, list) else []
        if words[:3] == ["apiclient", "ephemeral-storage", "bind"] and "--dirs" in words:
            return True, tuple(words[words.index("--dirs") + 1 :])
    return True, ()


def _parse_bottlerocket(doc: Mapping[str, Any]) -> Bootstrap:
    settings = doc.get("settings") or {}
    k8s = settings.get("kubernetes") or {}
    raid0, bind_dirs = _bottlerocket_raid0(settings)
    taints: list[Taint] = []
    for key, values in (k8s.get("node-taints") or {}).items():
        for entry in values if isinstance(values, list) else [values]:
            value, _, effect = str(entry).rpartition(":")
            taints.append(Taint(str(key), _effect(effect), value))
    return Bootstrap(
        labels=_str_pairs(k8s.get("node-labels")),
        taints=tuple(taints),
        max_pods=int(k8s["max-pods"]) if "max-pods" in k8s else None,
        kube_reserved=_str_pairs(k8s.get("kube-reserved")),
        system_reserved=_str_pairs(k8s.get("system-reserved")),
        eviction_hard=_str_pairs(k8s.get("eviction-hard")),
        instance_store_raid0=raid0,
        ephemeral_bind_dirs=bind_dirs,
    )


def parse_bootstrap(user_data: str) -> Bootstrap:
    """The bootstrap settings in AL2, AL2023, Bottlerocket or Windows user data (text or base64).

    Later settings win, as on a node: in a MIME document the parts are read in order (nodeadm merges NodeConfigs
    in order; the last bootstrap.sh call is the one that joins). User data without any of the three (Custom)
    gives an empty `Bootstrap`.
    """
    text = decode_user_data(user_data)
    fields: dict[str, Any] = {}
    if is_mime(text):
        for content_type, body in mime_parts(text):
            if content_type.startswith(NODECONFIG_CONTENT_TYPE):
                _parse_nodeconfig(body, fields)
            elif "bootstrap.sh" in body:
                _parse_bootstrap_script(body, fields)
        return Bootstrap(**fields)
    if "/etc/eks/bootstrap.sh" in text:
        _parse_bootstrap_script(text, fields)
        return Bootstrap(**fields)
    if "Start-EKSBootstrap.ps1" in text:
        _parse_windows_script(text, fields)
        return Bootstrap(**fields)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        doc = {}
    if isinstance(doc.get("settings"), dict) and "kubernetes" in doc["settings"]:
        return _parse_bottlerocket(doc)
    if looks_like_nodeconfig(text):
        _parse_nodeconfig(text, fields)
    return Bootstrap(**fields)
