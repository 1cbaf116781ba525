"""Deployment settings that are not part of the cluster config: where and how the stack is placed.

Theory of operation: the cluster config (clusters/NAME.yaml) says what the autoscaler manages; these settings
say how this account runs it. They come from CDK context (`cdk synth -c key=value` or cdk.json), are parsed
once into a frozen value, and every bad value is rejected with the context key and the value. Nothing here
calls AWS: synth must work offline.

Context keys read by app.py: `cluster` (required: clusters/NAME.yaml), `clustersDir` (another folder of
cluster files), `region` (only for cluster files without a Cluster document). Context keys read here (all
optional):
  account            12-digit account id; without it the stack is account-agnostic (the account is a token).
  subnetIds          comma-separated subnet ids: run the functions in a VPC (private cluster endpoints).
  securityGroupIds   comma-separated security group ids for the functions (required with subnetIds).
  nodeRole           IAM role name of the nodes, when the node classes name only an instance profile.
  alarmTopicArn      an existing SNS topic for the alarms (default: the stack creates one).
  alarmEmail         comma-separated e-mail addresses subscribed to the stack's alarm topic.
  accessEntry        "false" to skip the EKS access entry (clusters still on the aws-auth ConfigMap).
  dashboard          "false" to skip the dashboard ($3/month beyond CloudWatch's 3 free ones); alarms stay.
  logRetentionDays   retention of the functions' and state machines' log groups (default 30).
  mode               "active" (default) or "shadow": every function decides, logs and measures (ShadowWould*
                     metrics) but writes nothing to EC2 or Kubernetes (LONGSHORE_MODE on every function).
  functionMemoryMb   memory of the functions that read the whole cluster (provisioner, planner, steps), whole MB
                     from 1024 to 10240 (default 1024, also in cdk.json). One key, because all three list and
                     decode every pod and node at a container's first pass, so their memory and CPU grow with
                     the same number (the cluster's pods); Lambda's CPU share grows with memory (1769 MB is one
                     vCPU). Measured (docs/scale.md): about 100 MiB + 4 KiB a pod of peak RSS, 687 MiB at
                     150,000 pods; 1769 is recommended past about 100,000 pods, where a first pass at 1024 MB's
                     0.58 vCPU would take about 110 s of the 120 s timeout. Below 1024 is not measured.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

ACCOUNT = re.compile(r"^\d{12}$")
SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")
ROLE_NAME = re.compile(r"^[\w+=,.@-]{1,64}$")
EMAIL = re.compile(r"^[^@\s,]+@[^@\s,]+\.[^@\s,]+$")
TOPIC_ARN = re.compile(r"^arn:aws[\w-]*:sns:[a-z0-9-]+:\d{12}:[\w-]{1,256}$")
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
"""CloudWatch's retention periods, in the order of `aws_logs.RetentionDays` (a test checks the pairing)."""
MODES = ("active", "shadow")
"""What the functions do with their decisions: carry them out, or only log and measure them."""
FUNCTION_MEMORY_MB = (1024, 10240)
"""The smallest size measured and shipped, and Lambda's largest."""


class SettingsError(ValueError):
    """A context value that cannot be used; the message names the context key and the value."""


@dataclass(frozen=True, slots=True)
class VpcPlacement:
    subnet_ids: tuple[str, ...]
    security_group_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeploymentSettings:
    account: str | None = None
    vpc: VpcPlacement | None = None
    node_role: str | None = None
    alarm_topic_arn: str | None = None
    alarm_emails: tuple[str, ...] = ()
    access_entry: bool = True
    dashboard: bool = True
    log_retention_days: int = 30
    mode: str = "active"
    function_memory_mb: int = FUNCTION_MEMORY_MB[0]  # provisioner, planner and steps (`functionMemoryMb`)

    @property
    def shadow(self) -> bool:
        return self.mode == "shadow"

    @classmethod
    def from_context(cls, lookup: Callable[[str], object]) -> DeploymentSettings:
        """Read the settings through `lookup` (usually `node.try_get_context`)."""
        account = _text(lookup, "account")
        if account is not None and not ACCOUNT.match(account):
            raise SettingsError(f"context 'account': {account!r} is not a 12-digit AWS account id")
        subnets = _ids(lookup, "subnetIds", SUBNET_ID, "a subnet id (subnet-...)")
        groups = _ids(lookup, "securityGroupIds", SECURITY_GROUP_ID, "a security group id (sg-...)")
        if bool(subnets) != bool(groups):
            raise SettingsError(
                "context 'subnetIds' and 'securityGroupIds' go together: "
                f"got subnetIds={','.join(subnets)!r}, securityGroupIds={','.join(groups)!r}"
            )
        node_role = _text(lookup, "nodeRole")
        if node_role is not None and not ROLE_NAME.match(node_role):
            raise SettingsError(f"context 'nodeRole': {node_role!r} is not an IAM role name")
        topic = _text(lookup, "alarmTopicArn")
        if topic is not None and not TOPIC_ARN.match(topic):
            raise SettingsError(f"context 'alarmTopicArn': {topic!r} is not an SNS topic ARN")
        emails = _ids(lookup, "alarmEmail", EMAIL, "an e-mail address")
        if emails and topic is not None:
            raise SettingsError(
                "context 'alarmEmail' subscribes to the stack's own topic; with 'alarmTopicArn' "
                f"{topic!r} subscribe the addresses to that topic instead"
            )
        access_entry = _flag(lookup, "accessEntry")
        dashboard = _flag(lookup, "dashboard")
        retention = _text(lookup, "logRetentionDays")
        days = 30
        if retention is not None:
            if not retention.isdigit() or int(retention) not in LOG_RETENTION_DAYS:
                raise SettingsError(
                    f"context 'logRetentionDays': {retention!r} is not one of CloudWatch's retention periods "
                    f"{', '.join(map(str, LOG_RETENTION_DAYS))}"
                )
            days = int(retention)
        mode = (_text(lookup, "mode") or "active").lower()
        if mode not in MODES:
            raise SettingsError(f"context 'mode': {mode!r} is not one of {', '.join(MODES)}")
        memory = _memory(lookup, "functionMemoryMb")
        return cls(
            account=account,
            vpc=VpcPlacement(subnets, groups) if subnets else None,
            node_role=node_role,
            alarm_topic_arn=topic,
            alarm_emails=emails,
            access_entry=access_entry,
            dashboard=dashboard,
            log_retention_days=days,
            mode=mode,
            function_memory_mb=memory,
        )


def _text(lookup: Callable[[str], object], key: str) -> str | None:
    value = lookup(key)
    if value is None or value == "":
        return None
    if isinstance(value, bool | int):
        return str(value).lower()
    if not isinstance(value, str):
        raise SettingsError(f"context {key!r}: {value!r} must be a string")
    return value.strip()


def _memory(lookup: Callable[[str], object], key: str) -> int:
    raw = lookup(key)
    if raw is None or raw == "":
        return FUNCTION_MEMORY_MB[0]
    value = str(raw).strip() if isinstance(raw, str | int) and not isinstance(raw, bool) else None
    low, high = FUNCTION_MEMORY_MB
    if value is None or not value.isdigit() or not low <= int(value) <= high:
        raise SettingsError(
            f"context {key!r}: {raw!r} is not a whole number of MB from {low} to {high} (1769 is one vCPU; "
            "docs/scale.md has the sizes measured)"
        )
    return int(value)


def _flag(lookup: Callable[[str], object], key: str) -> bool:
    value = _text(lookup, key)
    if value is None:
        return True
    if value.lower() not in ("true", "false"):
        raise SettingsError(f"context {key!r}: {value!r} must be true or false")
    return value.lower() == "true"


def _ids(lookup: Callable[[str], object], key: str, pattern: re.Pattern[str], what: str) -> tuple[str, ...]:
    value = lookup(key)
    if value is None or value == "":
        return ()
    items = value if isinstance(value, list) else str(value).split(",")
    ids = tuple(str(item).strip() for item in items if str(item).strip())
    for item in ids:
        if not pattern.match(item):
            raise SettingsError(f"context {key!r}: {item!r} is not {what}")
    return ids
