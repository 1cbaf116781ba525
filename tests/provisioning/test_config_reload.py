"""Issue #12: a changed cluster config takes effect from the next pass of every function, not its next invocation.

`wiring.container.Container.refresh` is what a loop calls before each pass after its first: it re-reads the
config (`Runtime.refreshed`: one GetParameter when the pools come from the config alone), rebuilds the
function when it changed, hands the old one's memory over (`carry`), and keeps the last good function when
the read or the build fails. The provisioner's and the planner's loops take the rebuilt function from the
next pass on; the provisioner's run (its lease) moves to the new service and is released once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from longshore.config.settings import RuntimeSettings
from longshore.services import disruption_invocation
from longshore.services import provisioner as provisioner_service
from longshore.wiring.container import Container
from longshore.wiring.runtime import Runtime

SETTINGS = RuntimeSettings(
    cluster_name="demo-cluster", region="us-east-1", config_parameter="/longshore/demo", table_name="t"
)
CONFIG = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  limits: {cpu: "%s"}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: node-role
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo-cluster}}]
"""


class FakeSsm:
    """The SSM client's GetParameter, counted; `fail` makes the next reads raise."""

    def __init__(self, text: str) -> None:
        self.text, self.version, self.calls, self.fail = text, 1, 0, False

    def publish(self, text: str) -> None:
        self.text, self.version = text, self.version + 1

    def get_parameter(self, **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        if self.fail:
            raise RuntimeError("ssm is unavailable")
        return {"Parameter": {"Name": kwargs["Name"], "Value": self.text, "Version": self.version}}


def _container(ssm: FakeSsm, carried: list[tuple[Any, Any]]) -> Container[Runtime]:
    def new_runtime() -> Runtime:
        return Runtime(SETTINGS, session=object(), clock=None, parts=_parts(ssm))

    def build(runtime: Runtime) -> Runtime:
        assert runtime.config.node_pools  # a function is built on its config, as every `build_*` is
        return runtime

    return Container(build, new_runtime, carry=lambda old, new: carried.append((old, new)))


def _parts(ssm: FakeSsm) -> Any:
    from longshore.wiring.runtime_parts import RuntimeParts

    return RuntimeParts(clients={"ssm": ssm})


def _cpu(runtime: Runtime) -> float:
    return float(dict(runtime.config.pool("general").limits.items)["cpu"]) / 1000  # millicores


def test_an_unchanged_config_costs_one_get_parameter_a_pass_and_no_rebuild() -> None:
    ssm, carried = FakeSsm(CONFIG % "100"), []
    container = _container(ssm, carried)
    built = container.get()
    assert _cpu(built) == 100 and ssm.calls == 1
    assert container.refresh() is None and container.refresh() is None
    assert ssm.calls == 3 and container.current() is built and carried == []


def test_a_changed_config_rebuilds_at_the_next_pass_and_carries_the_memory_over() -> None:
    ssm, carried = FakeSsm(CONFIG % "100"), []
    container = _container(ssm, carried)
    old = container.get()
    ssm.publish(CONFIG % "0")
    fresh = container.refresh()
    assert fresh is not None and _cpu(fresh) == 0 and container.current() is fresh
    assert carried == [(old, fresh)]
    assert container.refresh() is None, "built on the new config: nothing changed since"


def test_a_failed_read_or_a_bad_config_keeps_the_last_good_one(caplog: pytest.LogCaptureFixture) -> None:
    ssm, carried = FakeSsm(CONFIG % "100"), []
    container = _container(ssm, carried)
    good = container.get()
    ssm.fail = True
    with caplog.at_level(logging.WARNING, logger="longshore.wiring.container"):
        assert container.refresh() is None
        assert container.get() is good  # an invocation's start too
        ssm.fail = False
        ssm.publish("kind: NodePool\nmetadata: {name: general}\nspec: {limits: [1]}\n")  # does not load
        assert container.refresh() is None
    assert container.current() is good and carried == []
    assert [r.message for r in caplog.records].count(
        "cannot re-read the cluster config; keeping the last one"
    ) == 3
    ssm.publish(CONFIG % "8")
    fresh = container.refresh()
    assert fresh is not None and _cpu(fresh) == 8, "a good config is taken again"


# -- the loops ----------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class FakeProvisioner:
    """Enough of `ProvisionerService` for `run_invocation`: its passes and its lease."""

    name: str
    passes: list[str]
    settings: provisioner_service.ProvisionerSettings = field(
        default_factory=lambda: provisioner_service.ProvisionerSettings(exit_when_quiet=False)
    )
    holding: bool = True
    released: int = 0

    def run_pass(self) -> provisioner_service.PassResult:
        self.passes.append(self.name)
        return provisioner_service.PassResult("idle", 0.0)

    def release(self) -> None:
        self.released += self.holding
        self.holding = False


def test_the_provisioner_loop_runs_every_later_pass_on_the_reloaded_service() -> None:
    clock, passes = Clock(), []
    old, new = FakeProvisioner("old", passes), FakeProvisioner("new", passes, holding=False)
    asked: list[str] = []

    def reload(previous: Any) -> Any:
        asked.append(previous.name)
        if len(asked) == 2:  # the config changed before the third pass
            new.holding, previous.holding = previous.holding, False  # `take_over`
            return new
        return None

    report = provisioner_service.run_invocation(
        old,  # type: ignore[arg-type]
        remaining_s=lambda: 1005.0 + 15.0 - clock.now(),
        idle_wait=clock.sleep,
        reload=reload,
    )
    assert passes == ["old", "old", "new", "new", "new"] and report.passes == 5
    assert asked == ["old", "old", "new", "new"], "asked before every pass but the first"
    assert (old.released, new.released) == (0, 1), "the lease is released once, by the service holding it"


@dataclass
class FakePlanner:
    name: str
    passes: list[str]
    ports: Any = None
    staged: tuple[()] = ()

    def run_pass(self) -> Any:
        self.passes.append(self.name)
        return _Report(self.ports.clock.now())


@dataclass
class _Pending:
    node_names: tuple[str, ...] = ("a-node",)  # a consolidation awaiting re-validation


@dataclass
class _Report:
    now: float
    acted: tuple[()] = ()
    pending: Any = field(default_factory=lambda: _Pending())
    dropped: tuple[()] = ()


def test_the_planner_loop_runs_every_later_pass_on_the_reloaded_planner() -> None:
    clock, passes = Clock(), []

    @dataclass
    class Ports:
        clock: Clock
        lease: Any = None

    ports = Ports(clock)
    old, new = FakePlanner("old", passes, ports), FakePlanner("new", passes, ports)
    reloads = iter([None, new, None, None, None, None])
    report = disruption_invocation.run_invocation(
        old,  # type: ignore[arg-type]
        remaining_s=lambda: 1000.0 + 60.0 - clock.now(),
        wait=clock.sleep,
        margin_s=15.0,
        reload=lambda: next(reloads),
    )
    assert passes[:3] == ["old", "old", "new"] and set(passes[3:]) == {"new"}
    assert report.passes == len(passes) >= 4
