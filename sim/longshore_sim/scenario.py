"""Scenario files for `longshore simulate`: the cluster, the initial workloads and timed steps.

Theory of operation: a scenario is YAML validated by pydantic at the edge. Paths inside it are relative
to the scenario file. Times are Kubernetes-style durations (`90s`, `5m`, `31d`) or plain seconds. The
runner replays the steps in time order on the simulated cluster's virtual clock; steps never sleep.

Example:
    name: seed-inflate
    cluster: ../clusters/demo.yaml        # or `manifests: [...]` with plain Karpenter YAML
    workloads: [../fixtures/inflate.yaml]
    duration: 10m
    steps:
      - at: 5s
        scale: {deployment: inflate, replicas: 5}
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?$")


def parse_duration(value: Any) -> float:
    """`"1h30m"` -> 5400.0; numbers are seconds."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    match = _DURATION.match(text)
    if not text or not match or not any(match.groups()):
        raise ValueError(f"{value!r} is not a duration (examples: 30s, 5m, 1h30m, 31d)")
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(seconds or 0)


Duration = Annotated[float, BeforeValidator(parse_duration)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Scale(_Strict):
    deployment: str
    replicas: int = Field(ge=0)
    namespace: str = "default"


class Delete(_Strict):
    deployment: str
    namespace: str = "default"


class Apply(_Strict):
    """Create more workloads (Deployment, DaemonSet, PodDisruptionBudget manifests) mid-run."""

    files: list[str]


class Unavailable(_Strict):
    """Make offerings fail with InsufficientInstanceCapacity, as EC2 does when a pool runs dry."""

    instance_types: list[str] = Field(alias="instanceTypes")
    zones: list[str] = Field(default_factory=list)
    capacity_type: Literal["spot", "on-demand", "any"] = Field("any", alias="capacityType")
    duration: Duration | None = None
    error_code: str = Field("InsufficientInstanceCapacity", alias="errorCode")


class CapacityReservation(_Strict):
    """A capacity reservation of the simulated account (`reservations.ReservationStore`)."""

    id: str
    instance_type: str = Field(alias="instanceType")
    zone: str
    count: int = Field(ge=1)
    type: Literal["default", "capacity-block"] = "default"
    instance_match_criteria: Literal["open", "targeted"] = Field("targeted", alias="instanceMatchCriteria")
    tags: dict[str, str] = Field(default_factory=dict)
    ends_after: Duration | None = Field(None, alias="endsAfter")
    interruptible: bool = False


class PlacementGroupSpec(_Strict):
    """A placement group of the simulated account (`placement_groups.PlacementGroups.define`): the world seeds
    a cluster group for every group a node class selects by name; this gives one its strategy."""

    name: str
    strategy: Literal["cluster", "partition", "spread"] = "cluster"
    partition_count: int = Field(0, alias="partitionCount", ge=0, le=7)


class ReservationChange(_Strict):
    """A reservation ends early: `expire` or `cancel` (its instances run on as on-demand)."""

    id: str
    action: Literal["expire", "cancel"] = "expire"


class Crash(_Strict):
    """Kill a function at a point: the provisioner in its next launch (the next run must recover), or the
    workflow-steps Lambda after the next `times` steps did their work but before they answered (Step
    Functions sees `Lambda.Unknown` and retries the step, which must be idempotent)."""

    point: Literal["after-launch-before-record", "before-launch", "workflow-step-after-work"]
    times: int = Field(1, ge=1, le=20)


class Event(_Strict):
    """Deliver an AWS-shaped EventBridge event (a JSON file) through the interruption queue, as EventBridge would.

    The k-th distinct instance id in the file becomes the k-th chosen node's instance (`nodes`: how many
    nodes, chosen oldest first among the nodes matching `selector`, or their names; 0 keeps the file's ids,
    e.g. for a foreign instance). Every timestamp in the event moves by the same amount so that its `time`
    is now. `copies` sends the same message more than once (SQS is at-least-once). A spot warning also makes
    EC2 reclaim each named instance `reclaimAfter` later (120 s), if it is still running then.
    """

    file: str
    nodes: int | list[str] = Field(1)
    selector: dict[str, str] = Field(default_factory=dict)
    copies: int = Field(1, ge=1, le=10)
    reclaim_after: Duration = Field(120.0, alias="reclaimAfter")


class Rotate(_Strict):
    """Start a rotation execution, as `longshore rotate` does (nodes: how many, oldest first, or names)."""

    nodes: int | list[str] = 1
    selector: dict[str, str] = Field(default_factory=dict)
    max_unavailable: int = Field(1, alias="maxUnavailable", ge=1)
    surge: bool = True
    canary: bool = True
    drain_seconds: int | None = Field(None, alias="drainSeconds", ge=0)


class Ami(_Strict):
    """AWS publishes a new EKS AMI release: new images, and the public SSM parameters point at them."""

    release: str = Field(min_length=1)


class DeleteNode(_Strict):
    """`kubectl delete node`: the Node gets a deletion timestamp (its finalizer holds it until Longshore drains)."""

    nodes: int | list[str] = 1
    selector: dict[str, str] = Field(default_factory=dict)


class NodeHealth(_Strict):
    """Nodes turn unhealthy: by default the kubelet stops reporting (`Ready=Unknown`, with the node lifecycle
    controller's NoSchedule taint); or an agent reports `condition=status` (`AcceleratedHardwareReady=False`...).
    The condition's `lastTransitionTime` is the step's time (`cluster/health.py`)."""

    nodes: int | list[str] = 1
    selector: dict[str, str] = Field(default_factory=dict)
    condition: str = Field("Ready", min_length=1)
    status: Literal["True", "False", "Unknown"] = "Unknown"


class ApiFaults(_Strict):
    """The Kubernetes API answers `status` (500, 503, 429...) to matching requests for `duration`."""

    status: int = Field(503, ge=400, le=599)
    duration: Duration = 30.0
    resource: str | None = None
    verb: str | None = None


class ApiTimeouts(_Strict):
    """Kubernetes API requests matching the rule time out for `duration`: the answer never comes, the client's
    read timeout passes (on virtual time) and urllib3 raises `ReadTimeoutError`; with `served` the server
    still carries each request out (a write applied, its answer lost)."""

    duration: Duration = 30.0
    served: bool = False
    resource: str | None = None
    verb: str | None = None


class DynamoThrottle(_Strict):
    """The claim table throttles: each listed DynamoDB operation fails its next `times` calls with
    `ProvisionedThroughputExceededException` (more than the functions' retries absorb when `times` > 4)."""

    operations: list[str] = Field(
        default_factory=lambda: ["Scan", "Query", "GetItem", "PutItem", "UpdateItem"]
    )
    times: int = Field(3, ge=1, le=100)


class LoseClaimTable(_Strict):
    """Every item of the claim table is deleted; live nodes must be re-adopted, not terminated."""


class ConfigChange(_Strict):
    """Publish a changed cluster config to the SSM parameter the functions read (a deploy): a NodePool's
    budgets, limits or requirements changed (`pool`), another config (`files`), or the first one back
    (`revert`). Every function uses it from its next invocation (`sim.config_change`)."""

    pool: str | None = None
    budgets: list[dict[str, Any]] | None = None
    limits: dict[str, Any] | None = None
    requirements: list[dict[str, Any]] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    revert: bool = False

    @model_validator(mode="after")
    def _one_kind(self) -> ConfigChange:
        changes_pool = self.budgets is not None or self.limits is not None or bool(self.requirements)
        kinds = [bool(self.files), self.revert, self.pool is not None]
        if sum(kinds) != 1:
            raise ValueError(
                "a config step gives one of `pool` (with its changes), `files` or `revert: true`"
            )
        if self.pool is not None and not changes_pool:
            raise ValueError(f"the config step names pool {self.pool} but changes nothing in it")
        if self.pool is None and changes_pool:
            raise ValueError("`budgets`, `limits` and `requirements` change a pool: name it with `pool`")
        return self


class ColdStart(_Strict):
    """A function's container is replaced: its next invocation starts from nothing (no warm memory)."""

    function: Literal["planner"] = "planner"


ACTIONS = (
    "scale",
    "delete",
    "apply",
    "unavailable",
    "crash",
    "event",
    "rotate",
    "ami",
    "delete_node",
    "node_health",
    "api_faults",
    "api_timeouts",
    "cold_start",
    "dynamo_throttle",
    "lose_claim_table",
    "config",
    "reservation",
)


class Window(_Strict):
    min: float
    max: float


class Step(_Strict):
    at: Duration
    scale: Scale | None = None
    delete: Delete | None = None
    apply: Apply | None = None
    unavailable: Unavailable | None = None
    crash: Crash | None = None
    event: Event | None = None
    rotate: Rotate | None = None
    ami: Ami | None = None
    delete_node: DeleteNode | None = Field(None, alias="deleteNode")
    node_health: NodeHealth | None = Field(None, alias="nodeHealth")
    api_faults: ApiFaults | None = Field(None, alias="apiFaults")
    api_timeouts: ApiTimeouts | None = Field(None, alias="apiTimeouts")
    cold_start: ColdStart | None = Field(None, alias="coldStart")
    dynamo_throttle: DynamoThrottle | None = Field(None, alias="dynamoThrottle")
    lose_claim_table: LoseClaimTable | None = Field(None, alias="loseClaimTable")
    config: ConfigChange | None = None
    reservation: ReservationChange | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _one_action(self) -> Step:
        actions = [n for n in ACTIONS if getattr(self, n)]
        if len(actions) > 1:
            raise ValueError(f"a step does one thing; this one has {', '.join(actions)}")
        return self

    @property
    def action(self) -> str:
        for name in ACTIONS:
            if getattr(self, name) is not None:
                return name
        return "note"


class Expect(_Strict):
    """Outcomes the scenario promises; tests and `simulate --check` assert them."""

    all_running: bool = Field(True, alias="allRunning")
    max_cost_ratio: float | None = Field(None, alias="maxCostRatio")
    max_first_fleet_request_s: float | None = Field(None, alias="maxFirstFleetRequestSeconds")
    zero_violations: bool = Field(True, alias="zeroViolations")
    taint_after_last_pod_left_s: Window | None = Field(None, alias="taintAfterLastPodLeftSeconds")
    cordon_after_warning_s: float | None = Field(None, alias="maxCordonAfterWarningSeconds")
    replacement_after_warning_s: float | None = Field(None, alias="maxReplacementRequestAfterWarningSeconds")
    evicted_pods_running_before_reclaim: bool = Field(False, alias="evictedPodsRunningBeforeReclaim")
    min_disruptions: dict[str, int] = Field(default_factory=dict, alias="minDisruptions")
    final_nodes: int | None = Field(None, alias="finalNodes")


class Scenario(_Strict):
    name: str
    description: str = ""
    cluster: str | None = None
    manifests: list[str] = Field(default_factory=list)
    region: str = "us-east-1"
    cluster_name: str = Field("demo", alias="clusterName")
    workloads: list[str] = Field(default_factory=list)
    capacity_reservations: list[CapacityReservation] = Field(
        default_factory=list, alias="capacityReservations"
    )
    placement_groups: list[PlacementGroupSpec] = Field(default_factory=list, alias="placementGroups")
    boot_delay: Duration = Field(30.0, alias="bootDelay")
    tick: Duration = 1.0
    duration: Duration
    steps: list[Step] = Field(default_factory=list)
    expect: Expect = Field(default_factory=lambda: Expect.model_validate({}))
    source: Path = Field(Path("."), exclude=True)

    @model_validator(mode="after")
    def _has_cluster(self) -> Scenario:
        if not self.cluster and not self.manifests:
            raise ValueError("give `cluster:` (a cluster config) or `manifests:` (Karpenter YAML)")
        for step in self.steps:
            if step.at > self.duration:
                raise ValueError(f"step at {step.at:g}s is after the scenario's duration {self.duration:g}s")
        return self

    def resolve(self, relative: str) -> Path:
        path = Path(relative)
        return path if path.is_absolute() else (self.source.parent / path).resolve()

    def config_paths(self) -> list[Path]:
        return [self.resolve(p) for p in ([self.cluster] if self.cluster else self.manifests)]

    def ordered_steps(self) -> list[Step]:
        return sorted(self.steps, key=lambda s: s.at)


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file, field and value."""


BUNDLED = Path(__file__).resolve().parent / "scenarios"
"""The scenarios shipped with the package (`longshore simulate seed-inflate` runs `BUNDLED/seed-inflate.yaml`)."""


def bundled_scenarios() -> list[str]:
    """The names of the shipped scenarios, sorted."""
    return sorted(p.stem for p in BUNDLED.glob("*.yaml"))


def resolve_scenario(path: Path | str) -> Path:
    """A scenario file: `path` itself when it exists, else the shipped scenario of that name (with or without
    `.yaml`, and with or without a leading `scenarios/`), else `path` unchanged (loading then says it is missing).
    """
    path = Path(path)
    if path.exists():
        return path
    bundled = BUNDLED / Path(path.name).with_suffix(".yaml")
    return bundled if bundled.exists() else path


def load_scenario(path: Path | str) -> Scenario:
    path = resolve_scenario(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError as exc:
        names = ", ".join(bundled_scenarios())
        raise ScenarioError(f"{path}: no such scenario file (shipped scenarios: {names})") from exc
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: a scenario is a mapping, got {type(data).__name__}")
    try:
        return Scenario.model_validate({**data, "source": path.resolve()})
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            field = ".".join(str(p) for p in error["loc"]) or "(top)"
            value = error.get("input")
            lines.append(f"{path}: {field}: {error['msg']} (value: {value!r})")
        raise ScenarioError("\n".join(lines)) from exc
