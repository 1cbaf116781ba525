"""User data per AMI family, and the reverse: reading a node's bootstrap settings back out of user data.

Theory of operation: a node learns its labels, taints (including the `karpenter.sh/unregistered:NoExecute`
startup taint), max pods, reserved resources and eviction thresholds only from its user data, so the values
rendered here must be the ones the plan assumed. Each family has its own format (Karpenter's
`pkg/providers/amifamily/bootstrap/*.go`):

- AL2 (and Ubuntu): MIME multipart; the node class's own parts first, then a shell part calling
  `/etc/eks/bootstrap.sh` with `--kubelet-extra-args '--node-labels=... --register-with-taints=... ...'`.
- AL2023: MIME multipart; the node class's parts first (shell scripts and its own `NodeConfig`s, which nodeadm
  merges in order), then our `application/node.eks.aws` `NodeConfig` whose kubelet config and flags win.
- Bottlerocket: TOML; the node class's TOML is parsed and our `[settings.kubernetes]` keys are written over it.
- Windows2019/2022/2025: a `<powershell>` block; the node class's own PowerShell first, then a call of
  `Start-EKSBootstrap.ps1` with `-KubeletExtraArgs '--node-labels=... --register-with-taints=... ...'`
  (Karpenter's `bootstrap/windows.go`).
- Custom: the node class's user data, unchanged (nothing injected, as in Karpenter).

Output is deterministic (sorted labels, fixed MIME boundary `//`) so launch-template names, which hash the
rendered content, are stable. `parse_bootstrap` reads any of the three formats back into a `Bootstrap`; the
simulated kubelet uses it to create the Node the real kubelet would, and the round-trip tests pin both ways.
"""

from __future__ import annotations

import base64
import binascii
import email
import email.message
import ipaddress
import json
import re
import shlex
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import yaml

from longshore.core.model import AmiFamily, KubeletConfig, Pairs, Taint, TaintEffect

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


# --------------------------------------------------------------------------------------------------------------
# Rendering


def render_user_data(
    family: AmiFamily,
    cluster: ClusterInfo,
    bootstrap: Bootstrap,
    kubelet: KubeletConfig | None = None,
    custom: str | None = None,
) -> str:
    """The user data text (not base64) for a node of `family`, merged with the node class's `custom` text."""
    kubelet = kubelet or KubeletConfig()
    if family in ("AL2", "Ubuntu"):
        return _render_al2(cluster, bootstrap, kubelet, custom)
    if family == "AL2023":
        return _render_al2023(cluster, bootstrap, kubelet, custom)
    if family == "Bottlerocket":
        return _render_bottlerocket(cluster, bootstrap, kubelet, custom)
    if family.startswith("Windows"):
        return _render_windows(cluster, bootstrap, kubelet, custom)
    if family == "Custom":
        return custom or ""
    raise UserDataError(
        f"amiFamily {family!r}: user data rendering is not supported "
        "(use AL2, AL2023, Bottlerocket, Windows2019/2022/2025 or Custom)"
    )


def encode_user_data(text: str) -> str:
    """Base64, as EC2 launch templates take user data."""
    return base64.b64encode(text.encode()).decode()


def _mime(parts: Iterable[tuple[str, str]]) -> str:
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{BOUNDARY}"', ""]
    for content_type, body in parts:
        lines += [f"--{BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n")]
    lines += [f"--{BOUNDARY}--", ""]
    return "\n".join(lines)


def _is_mime(text: str) -> bool:
    head = text.lstrip()[:400].lower()
    return head.startswith("mime-version:") or head.startswith("content-type: multipart/")


def _mime_parts(text: str) -> list[tuple[str, str]]:
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


def _looks_like_nodeconfig(text: str) -> bool:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    return isinstance(doc, dict) and doc.get("kind") == "NodeConfig"


def _custom_parts(custom: str | None, family: str) -> list[tuple[str, str]]:
    """The node class's own user data as MIME parts (kept in order, before ours)."""
    if not custom or not custom.strip():
        return []
    if _is_mime(custom):
        return _mime_parts(custom)
    if family == "AL2023" and _looks_like_nodeconfig(custom):
        return [(NODECONFIG_CONTENT_TYPE, custom)]
    return [(SHELL_CONTENT_TYPE, custom)]


def _labels_arg(labels: Pairs) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels))


def _taint_arg(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}"


def _pairs_arg(pairs: Pairs) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(pairs))


def _eviction_arg(pairs: Pairs) -> str:
    return ",".join(f"{k}<{v}" for k, v in sorted(pairs))


WINDOWS_BOOTSTRAP: Final = r"$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"


def _render_windows(cluster: ClusterInfo, b: Bootstrap, kubelet: KubeletConfig, custom: str | None) -> str:
    args = _kubelet_args(b, kubelet)
    own = (custom or "").replace("<powershell>", "").replace("</powershell>", "").strip()
    dns = kubelet.cluster_dns[0] if kubelet.cluster_dns else cluster.dns_ip
    call = (
        f'[string]$EKSBootstrapScriptFile = "{WINDOWS_BOOTSTRAP}"\n'
        f"& $EKSBootstrapScriptFile -EKSClusterName '{cluster.name}' -APIServerEndpoint '{cluster.endpoint}' "
        f"-Base64ClusterCA '{cluster.ca_data}' -KubeletExtraArgs '{' '.join(args)}' -DNSClusterIP '{dns}'"
    )
    return "\n".join(["<powershell>", *([own] if own else []), call, "</powershell>", ""])


def _kubelet_args(b: Bootstrap, kubelet: KubeletConfig) -> list[str]:
    """The kubelet flags AL2's bootstrap.sh and Windows' Start-EKSBootstrap.ps1 pass through."""
    args: list[str] = []
    if b.labels:
        args.append(f'--node-labels="{_labels_arg(b.labels)}"')
    if b.taints:
        args.append(f'--register-with-taints="{",".join(_taint_arg(t) for t in b.taints)}"')
    if b.max_pods is not None:
        args.append(f"--max-pods={b.max_pods}")
    if kubelet.pods_per_core is not None:
        args.append(f"--pods-per-core={kubelet.pods_per_core}")
    if b.system_reserved:
        args.append(f"--system-reserved={_pairs_arg(b.system_reserved)}")
    if b.kube_reserved:
        args.append(f"--kube-reserved={_pairs_arg(b.kube_reserved)}")
    if b.eviction_hard:
        args.append(f'--eviction-hard="{_eviction_arg(b.eviction_hard)}"')
    if kubelet.eviction_soft:
        args.append(f'--eviction-soft="{_eviction_arg(kubelet.eviction_soft)}"')
    if kubelet.eviction_soft_grace_period:
        args.append(f'--eviction-soft-grace-period="{_pairs_arg(kubelet.eviction_soft_grace_period)}"')
    if kubelet.eviction_max_pod_grace_period is not None:
        args.append(f"--eviction-max-pod-grace-period={kubelet.eviction_max_pod_grace_period}")
    if kubelet.image_gc_high_threshold_percent is not None:
        args.append(f"--image-gc-high-threshold={kubelet.image_gc_high_threshold_percent}")
    if kubelet.image_gc_low_threshold_percent is not None:
        args.append(f"--image-gc-low-threshold={kubelet.image_gc_low_threshold_percent}")
    if kubelet.cpu_cfs_quota is not None:
        args.append(f"--cpu-cfs-quota={str(kubelet.cpu_cfs_quota).lower()}")
    return args


def _render_al2(cluster: ClusterInfo, b: Bootstrap, kubelet: KubeletConfig, custom: str | None) -> str:
    args = _kubelet_args(b, kubelet)
    dns = kubelet.cluster_dns[0] if kubelet.cluster_dns else cluster.dns_ip
    command = [
        f"/etc/eks/bootstrap.sh '{cluster.name}' --apiserver-endpoint '{cluster.endpoint}' --b64-cluster-ca '{cluster.ca_data}' \\",
        f"--dns-cluster-ip '{dns}' \\",
    ]
    if cluster.ip_family == "ipv6":
        command.append("--ip-family ipv6 \\")
    if b.max_pods is not None:
        command.append("--use-max-pods false \\")
    command.append(f"--kubelet-extra-args '{' '.join(args)}'")
    script = "\n".join(
        [
            "#!/bin/bash -xe",
            "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
            *command,
        ]
    )
    return _mime([*_custom_parts(custom, "AL2"), (SHELL_CONTENT_TYPE, script)])


def _json_value(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _render_al2023(cluster: ClusterInfo, b: Bootstrap, kubelet: KubeletConfig, custom: str | None) -> str:
    config: dict[str, Any] = {key: _json_value(raw) for key, raw in kubelet.extra}
    config["clusterDNS"] = list(kubelet.cluster_dns) or [cluster.dns_ip]
    if b.max_pods is not None:
        config["maxPods"] = b.max_pods
    if kubelet.pods_per_core is not None:
        config["podsPerCore"] = kubelet.pods_per_core
    if b.taints:
        config["registerWithTaints"] = [
            {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect} for t in b.taints
        ]
    if b.kube_reserved:
        config["kubeReserved"] = dict(sorted(b.kube_reserved))
    if b.system_reserved:
        config["systemReserved"] = dict(sorted(b.system_reserved))
    if b.eviction_hard:
        config["evictionHard"] = dict(sorted(b.eviction_hard))
    if kubelet.eviction_soft:
        config["evictionSoft"] = dict(sorted(kubelet.eviction_soft))
    if kubelet.eviction_soft_grace_period:
        config["evictionSoftGracePeriod"] = dict(sorted(kubelet.eviction_soft_grace_period))
    if kubelet.eviction_max_pod_grace_period is not None:
        config["evictionMaxPodGracePeriod"] = kubelet.eviction_max_pod_grace_period
    if kubelet.image_gc_high_threshold_percent is not None:
        config["imageGCHighThresholdPercent"] = kubelet.image_gc_high_threshold_percent
    if kubelet.image_gc_low_threshold_percent is not None:
        config["imageGCLowThresholdPercent"] = kubelet.image_gc_low_threshold_percent
    if kubelet.cpu_cfs_quota is not None:
        config["cpuCFSQuota"] = kubelet.cpu_cfs_quota
    node_config = {
        "apiVersion": "node.eks.aws/v1alpha1",
        "kind": "NodeConfig",
        "spec": {
            "cluster": {
                "apiServerEndpoint": cluster.endpoint,
                "certificateAuthority": cluster.ca_data,
                "cidr": cluster.service_cidr,
                "name": cluster.name,
            },
            "kubelet": {
                "config": dict(sorted(config.items())),
                "flags": [f"--node-labels={_labels_arg(b.labels)}"] if b.labels else [],
            },
        },
    }
    body = yaml.safe_dump(node_config, sort_keys=False, default_flow_style=False, width=100000)
    return _mime([*_custom_parts(custom, "AL2023"), (NODECONFIG_CONTENT_TYPE, body)])


def _render_bottlerocket(
    cluster: ClusterInfo, b: Bootstrap, kubelet: KubeletConfig, custom: str | None
) -> str:
    try:
        doc: dict[str, Any] = tomllib.loads(custom) if custom and custom.strip() else {}
    except tomllib.TOMLDecodeError as error:
        raise UserDataError(
            f"amiFamily Bottlerocket: the node class's userData is not valid TOML: {error}"
        ) from error
    ours: dict[str, Any] = {
        "api-server": cluster.endpoint,
        "cluster-certificate": cluster.ca_data,
        "cluster-name": cluster.name,
        "cluster-dns-ip": kubelet.cluster_dns[0] if kubelet.cluster_dns else cluster.dns_ip,
    }
    if b.max_pods is not None:
        ours["max-pods"] = b.max_pods
    if kubelet.eviction_max_pod_grace_period is not None:
        ours["eviction-max-pod-grace-period"] = kubelet.eviction_max_pod_grace_period
    if kubelet.image_gc_high_threshold_percent is not None:
        ours["image-gc-high-threshold-percent"] = kubelet.image_gc_high_threshold_percent
    if kubelet.image_gc_low_threshold_percent is not None:
        ours["image-gc-low-threshold-percent"] = kubelet.image_gc_low_threshold_percent
    if kubelet.cpu_cfs_quota is not None:
        ours["cpu-cfs-quota-enforced"] = kubelet.cpu_cfs_quota
    if b.labels:
        ours["node-labels"] = dict(sorted(b.labels))
    if b.taints:
        taints: dict[str, list[str]] = {}
        for taint in b.taints:
            taints.setdefault(taint.key, []).append(f"{taint.value}:{taint.effect}")
        ours["node-taints"] = taints
    for key, pairs in (
        ("kube-reserved", b.kube_reserved),
        ("system-reserved", b.system_reserved),
        ("eviction-hard", b.eviction_hard),
    ):
        if pairs:
            ours[key] = dict(sorted(pairs))
    settings = doc.setdefault("settings", {})
    if not isinstance(settings, dict):
        raise UserDataError("amiFamily Bottlerocket: the node class's userData has a non-table `settings`")
    kubernetes = settings.setdefault("kubernetes", {})
    if not isinstance(kubernetes, dict):
        raise UserDataError(
            "amiFamily Bottlerocket: the node class's userData has a non-table `settings.kubernetes`"
        )
    for key, value in ours.items():
        if isinstance(value, dict) and isinstance(kubernetes.get(key), dict):
            kubernetes[key] = {**kubernetes[key], **value}
        else:
            kubernetes[key] = value
    return _toml_dumps(doc)


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise UserDataError(f"cannot write {type(value).__name__} value {value!r} as TOML")


def _toml_dumps(doc: Mapping[str, Any]) -> str:
    """A small TOML writer for the shapes Bottlerocket settings use (tables, scalars, arrays of scalars)."""
    lines: list[str] = []

    def table(path: tuple[str, ...], data: Mapping[str, Any]) -> None:
        scalars = [(k, v) for k, v in data.items() if not isinstance(v, dict)]
        tables = [(k, v) for k, v in data.items() if isinstance(v, dict)]
        if path and (scalars or not tables):
            if lines:
                lines.append("")
            lines.append("[" + ".".join(_toml_key(p) for p in path) + "]")
        for key, value in scalars:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
        for key, value in tables:
            table((*path, key), value)

    table((), doc)
    return "\n".join(lines) + "\n"


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
            if word == "--kubelet-extra-args" and i + 1 < len(words):
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
    kubelet = (doc.get("spec") or {}).get("kubelet") or {}
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


def _parse_bottlerocket(doc: Mapping[str, Any]) -> Bootstrap:
    k8s = (doc.get("settings") or {}).get("kubernetes") or {}
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
    )


def parse_bootstrap(user_data: str) -> Bootstrap:
    """The bootstrap settings in AL2, AL2023, Bottlerocket or Windows user data (text or base64).

    Later settings win, as on a node: in a MIME document the parts are read in order (nodeadm merges NodeConfigs
    in order; the last bootstrap.sh call is the one that joins). User data without any of the three (Custom)
    gives an empty `Bootstrap`.
    """
    text = decode_user_data(user_data)
    fields: dict[str, Any] = {}
    if _is_mime(text):
        for content_type, body in _mime_parts(text):
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
    if _looks_like_nodeconfig(text):
        _parse_nodeconfig(text, fields)
    return Bootstrap(**fields)
