"""User data per AMI family, rendered from a `userdata.Bootstrap` and merged with the node class's own.

Rules: each family has its own format (Karpenter's `pkg/providers/amifamily/bootstrap/*.go`):

- AL2 (and Ubuntu): MIME multipart; the node class's own parts first, then a shell part calling
  `/etc/eks/bootstrap.sh` with `--kubelet-extra-args '--node-labels=... --register-with-taints=... ...'`
  (and `--local-disks raid0` for instanceStorePolicy RAID0).
- AL2023: MIME multipart; the node class's parts first (shell scripts and its own `NodeConfig`s, which nodeadm
  merges in order), then our `application/node.eks.aws` `NodeConfig` whose kubelet config and flags win
  (RAID0: `spec.instance.localStorage.strategy: RAID0`).
- Bottlerocket: TOML; the node class's TOML is parsed and our `[settings.kubernetes]` keys are written over it;
  RAID0 adds the essential, `always` bootstrap command `settings.bootstrap-commands."000-mount-instance-storage"`
  (`apiclient ephemeral-storage init`, then `apiclient ephemeral-storage bind`, naming the directories on
  images older than 1.46), over any command of that name in the node class's TOML.
- Windows2019/2022/2025: a `<powershell>` block; the node class's own PowerShell first, then a call of
  `Start-EKSBootstrap.ps1` with `-KubeletExtraArgs '--node-labels=... --register-with-taints=... ...'`
  (Karpenter's `bootstrap/windows.go`).
- Custom: the node class's user data, unchanged (nothing injected, as in Karpenter).
- Any other family is refused with `UserDataError`.

Output is deterministic (sorted labels, fixed MIME boundary `//`) so launch-template names, which hash the
rendered content, are stable. `userdata.parse_bootstrap` reads every format back.
"""

from __future__ import annotations

import base64
import json
import re
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any, Final

import yaml

from longshore.adapters.aws.userdata import (
    BOTTLEROCKET_RAID0_COMMAND,
    BOUNDARY,
    NODECONFIG_CONTENT_TYPE,
    SHELL_CONTENT_TYPE,
    Bootstrap,
    ClusterInfo,
    UserDataError,
    is_mime,
    looks_like_nodeconfig,
    mime_parts,
)
from longshore.core.model import AmiFamily, KubeletConfig, Pairs, Taint


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


def _custom_parts(custom: str | None, family: str) -> list[tuple[str, str]]:
    """The node class's own user data as MIME parts (kept in order, before ours)."""
    if not custom or not custom.strip():
        return []
    if is_mime(custom):
        return mime_parts(custom)
    if family == "AL2023" and looks_like_nodeconfig(custom):
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
    if b.instance_store_raid0:
        command[-1] += " \\"
        command.append("--local-disks raid0")
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
    spec: dict[str, Any] = {
        "cluster": {
            "apiServerEndpoint": cluster.endpoint,
            "certificateAuthority": cluster.ca_data,
            "cidr": cluster.service_cidr,
            "name": cluster.name,
        },
    }
    if b.instance_store_raid0:
        spec["instance"] = {"localStorage": {"strategy": "RAID0"}}
    spec["kubelet"] = {
        "config": dict(sorted(config.items())),
        "flags": [f"--node-labels={_labels_arg(b.labels)}"] if b.labels else [],
    }
    node_config = {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}
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
    if b.instance_store_raid0:
        commands = settings.setdefault("bootstrap-commands", {})
        if not isinstance(commands, dict):
            raise UserDataError(
                "amiFamily Bottlerocket: the node class's userData has a non-table `settings.bootstrap-commands`"
            )
        bind = ["apiclient", "ephemeral-storage", "bind"]
        if b.ephemeral_bind_dirs:
            bind += ["--dirs", *b.ephemeral_bind_dirs]
        commands[BOTTLEROCKET_RAID0_COMMAND] = {
            "commands": [["apiclient", "ephemeral-storage", "init"], bind],
            "mode": "always",
            "essential": True,
        }
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
