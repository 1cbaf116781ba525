"""Issue #12: no Kubernetes call outlives its invocation.

The kube adapters' retries (5 attempts of up to a 30 s read timeout, about 150 s) could outlast the 120 s Lambda
timeout, and the runtime then killed the invocation mid-pass. With the handler's `CallBudget` (the Lambda
context's remaining time less `RESERVE_S`), each attempt's timeouts are cut to the time left, a backoff that
would cross the deadline is not slept, and the call raises `ClusterUnavailableError(out_of_time=True)`; the
loops end the invocation cleanly on it (`stopped: out-of-time`, `unfinished` naming the call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from urllib3.exceptions import ReadTimeoutError

from longshore.adapters.kube.retry import MIN_ATTEMPT_S, RESERVE_S, CallBudget, RetryPolicy, call_with_retries
from longshore.handlers import provisioner as provisioner_handler
from longshore.ports.kube import ClusterUnavailableError
from longshore.services import disruption_invocation
from longshore_sim.kubeapi import Fault
from longshore_sim.world import SimulatedWorld
from tests.provisioning.test_handler import VirtualContext
from tests.provisioning.test_provisioning import scale

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def _timing_out(
    clock: Clock, budget: CallBudget | None, seen: list[tuple[float, float]]
) -> Callable[[], Any]:
    def call() -> Any:
        timeout = budget.timeout((5.0, 30.0)) if budget is not None else (5.0, 30.0)
        seen.append(timeout)
        clock.sleep(timeout[1])  # the answer never comes: the read timeout passes
        raise ReadTimeoutError(None, "/api/v1/pods", "Read timed out.")  # type: ignore[arg-type]

    return call


def test_without_a_budget_the_policy_alone_bounds_a_call_past_a_lambdas_timeout() -> None:
    clock, seen = Clock(), []
    with pytest.raises(ClusterUnavailableError) as raised:
        call_with_retries(_timing_out(clock, None, seen), RetryPolicy(), clock.sleep, "list pods")
    assert not raised.value.out_of_time and len(seen) == 5
    assert clock.now() > 120.0, "what the budget is for: 5 x 30 s outlasts a 120 s invocation"


def test_a_budget_cuts_the_timeouts_and_the_retries_so_the_call_ends_before_the_invocation() -> None:
    clock, seen = Clock(), []
    budget = CallBudget(clock.now)
    budget.ends_in(70.0)  # 65 s for Kubernetes calls
    with pytest.raises(
        ClusterUnavailableError, match=r"list pods: the invocation's time .* ran out after 3"
    ) as e:
        call_with_retries(
            _timing_out(clock, budget, seen), RetryPolicy(), clock.sleep, "list pods", budget=budget
        )
    assert e.value.out_of_time
    assert seen[:2] == [(5.0, 30.0), (5.0, 30.0)] and seen[2][1] < 30.0, "the last attempt gets what is left"
    assert clock.now() <= 70.0 - RESERVE_S, "the call ended before the reserve"


def test_no_attempt_starts_without_time_for_one_and_a_success_inside_the_budget_is_untouched() -> None:
    clock = Clock()
    budget = CallBudget(clock.now)
    budget.ends_in(RESERVE_S + MIN_ATTEMPT_S / 2)
    calls: list[int] = []
    with pytest.raises(ClusterUnavailableError, match="after 0 attempt") as raised:
        call_with_retries(lambda: calls.append(1), RetryPolicy(), clock.sleep, "get node", budget=budget)
    assert raised.value.out_of_time and calls == []
    budget.ends_in(60.0)
    assert call_with_retries(lambda: "ok", RetryPolicy(), clock.sleep, "get node", budget=budget) == "ok"
    budget.ends_in(None)
    assert budget.timeout((5.0, 30.0)) == (5.0, 30.0)


@pytest.mark.slow
def test_the_provisioner_handler_ends_cleanly_within_its_timeout_when_every_pod_list_times_out(
    make_world: Callable[..., SimulatedWorld], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The production handler on the simulated world: the API server never answers a pod list (the chaos
    `k8s-timeout` fault, on virtual time). Before #12 the pass's retries took about 153 s of a 120 s
    invocation (the Lambda would have been killed); now the handler returns in time and says why."""
    world = make_world()
    world.time_out_kube_api()
    world.cluster.emulator.faults.add(Fault(resource="pods", verb="list", timeout=True))
    monkeypatch.setattr(provisioner_handler, "CONTAINER", world.provisioners)
    scale(world, 3)
    started = world.clock.now()
    answer = provisioner_handler.handler({"source": "aws.events"}, VirtualContext(world, 120))  # type: ignore[arg-type]
    elapsed = world.clock.now() - started
    assert elapsed <= 120.0 - RESERVE_S + MIN_ATTEMPT_S, elapsed
    assert answer["stopped"] == "out-of-time" and "list pending pods" in answer["unfinished"], answer
    assert world.lease.acquire("provisioner", "next-run", world.clock.now(), 60), "the lease was released"


class _Ports:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.lease = None


class _OutOfTimePlanner:
    staged = ()

    def __init__(self) -> None:
        self.ports = _Ports(Clock())

    def run_pass(self) -> Any:
        raise ClusterUnavailableError("list pods: the invocation's time ran out", out_of_time=True)


def test_the_planner_loop_ends_cleanly_on_a_call_out_of_time_and_other_failures_still_raise() -> None:
    clock = Clock()
    report = disruption_invocation.run_invocation(
        _OutOfTimePlanner(),  # type: ignore[arg-type]
        remaining_s=lambda: 100.0,
        wait=clock.sleep,
    )
    assert report.stopped == "out-of-time" and report.passes == 0
    assert report.to_dict()["unfinished"] == "list pods: the invocation's time ran out"

    class Failing(_OutOfTimePlanner):
        def run_pass(self) -> Any:
            raise ClusterUnavailableError("list pods: the API server kept failing")

    with pytest.raises(ClusterUnavailableError):
        disruption_invocation.run_invocation(Failing(), remaining_s=lambda: 100.0, wait=clock.sleep)  # type: ignore[arg-type]
