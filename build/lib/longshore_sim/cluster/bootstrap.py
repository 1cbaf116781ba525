"""What a simulated node registers with: its bootstrap settings, read from the instance's user data.

Theory of operation: a real kubelet learns its labels, taints, max pods and reserved resources from the flags
its AMI's bootstrap passes it, and those come from the launch template's user data. The simulated kubelet does
the same: a `BootstrapReader` turns user data into a `NodeBootstrap`. The default reader is the AWS adapter's
`longshore.adapters.aws.userdata.parse_bootstrap` (AL2, AL2023 and Bottlerocket), adapted to plain values
here; when that module is unavailable a small flag reader (`read_kubelet_flags`) understands the kubelet flags
in AL2-style user data. Readers are pluggable so tests can register nodes from anything.
"""

from __future__ import annotations

import base64
import binascii
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

TaintDict = dict[str, str]


@dataclass(frozen=True, slots=True)
class NodeBootstrap:
    """Bootstrap settings as plain values (None and empty mean "the AMI's default")."""

    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[TaintDict, ...] = ()
    max_pods: int | None = None
    kube_reserved: Mapping[str, str] = field(default_factory=dict)
    system_reserved: Mapping[str, str] = field(default_factory=dict)
    eviction_hard: Mapping[str, str] = field(default_factory=dict)


BootstrapReader = Callable[[str], NodeBootstrap]


def _taint_dict(taint: Any) -> TaintDict:
    if isinstance(taint, Mapping):
        body = {"key": str(taint["key"]), "effect": str(taint["effect"])}
        if taint.get("value"):
            body["value"] = str(taint["value"])
        return body
    if isinstance(taint, str):
        return _parse_taint(taint)
    body = {"key": str(taint.key), "effect": str(taint.effect)}
    if getattr(taint, "value", ""):
        body["value"] = str(taint.value)
    return body


def from_adapter(bootstrap: Any) -> NodeBootstrap:
    """Convert the AWS adapter's `Bootstrap` (pairs and `Taint` values) into a `NodeBootstrap`."""
    return NodeBootstrap(
        labels=dict(bootstrap.labels),
        taints=tuple(_taint_dict(t) for t in bootstrap.taints),
        max_pods=bootstrap.max_pods,
        kube_reserved=dict(bootstrap.kube_reserved),
        system_reserved=dict(bootstrap.system_reserved),
        eviction_hard=dict(bootstrap.eviction_hard),
    )


def adapter_reader() -> BootstrapReader | None:
    """The AWS adapter's parser wrapped as a reader, or None when that module is not importable."""
    try:
        from longshore.adapters.aws.userdata import parse_bootstrap
    except ImportError:
        return None

    def read(user_data: str) -> NodeBootstrap:
        return from_adapter(parse_bootstrap(user_data))

    return read


def default_reader() -> BootstrapReader:
    return adapter_reader() or read_kubelet_flags


def _decode(user_data: str) -> str:
    stripped = user_data.strip()
    if stripped and not any(c.isspace() for c in stripped):
        try:
            return base64.b64decode(stripped, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            pass
    return user_data


def _parse_taint(text: str) -> TaintDict:
    body, _, effect = text.rpartition(":")
    key, _, value = body.partition("=")
    taint = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return taint


def _pairs(text: str, separator: str) -> dict[str, str]:
    result = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = item.partition(separator)
        result[key] = value
    return result


def read_kubelet_flags(user_data: str) -> NodeBootstrap:
    """Read `--node-labels`, `--register-with-taints`, `--max-pods`, `--kube-reserved`, `--system-reserved` and
    `--eviction-hard` kubelet flags wherever they appear in the (optionally base64) user data."""
    text = _decode(user_data)
    try:
        words = shlex.split(text, comments=False)
    except ValueError:
        words = text.split()
    flags: dict[str, str] = {}
    for word in words:
        for match in re.finditer(r"--([a-z-]+)=(\S*)", word):
            flags[match.group(1)] = match.group(2)
    max_pods = flags.get("max-pods")
    return NodeBootstrap(
        labels=_pairs(flags.get("node-labels", ""), "="),
        taints=tuple(_parse_taint(t) for t in flags.get("register-with-taints", "").split(",") if t),
        max_pods=int(max_pods) if max_pods and max_pods.isdigit() else None,
        kube_reserved=_pairs(flags.get("kube-reserved", ""), "="),
        system_reserved=_pairs(flags.get("system-reserved", ""), "="),
        eviction_hard=_pairs(flags.get("eviction-hard", ""), "<"),
    )
