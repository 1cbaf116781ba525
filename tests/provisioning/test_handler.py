"""The provisioner Lambda handler, wired by `build_runtime` exactly as in production, against moto and the emulator.

The cluster config is read from the SSM parameter through Powertools parameters, cluster access comes from
`eks:DescribeCluster` and a presigned STS token, and the only difference from AWS is the Kubernetes endpoint
(the emulator's loopback URL instead of the EKS one) and a virtual clock behind the Lambda context.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from longshore.adapters.memory_metrics import MemoryMetricsSink
from longshore.config.settings import RuntimeSettings
from longshore.core import telemetry
from longshore.handlers import provisioner as lambda_handler
from longshore.wiring.provisioner import CONTAINER, build_runtime
from longshore_sim.world import SimulatedWorld
from tests.provisioning.conftest import CLUSTER, PARAMETER, publish_seed_config, running

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")


class VirtualContext:
    """A Lambda context whose remaining time runs on the simulation's clock."""

    function_name = "longshore-provisioner"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:longshore-provisioner"
    aws_request_id = "request-1"

    def __init__(self, world: SimulatedWorld, timeout_s: float) -> None:
        self._world = world
        self._deadline = world.clock.now() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return int((self._deadline - self._world.clock.now()) * 1000)


@pytest.fixture
def wired(make_world: Callable[..., SimulatedWorld]) -> Iterator[tuple[SimulatedWorld, MemoryMetricsSink]]:
    world = make_world()
    publish_seed_config(world)
    settings = RuntimeSettings.from_env(
        {
            "LONGSHORE_CLUSTER_NAME": CLUSTER,
            "AWS_REGION": "us-east-1",
            "LONGSHORE_CONFIG_PARAMETER": PARAMETER,
            "LONGSHORE_TABLE_NAME": world.seeded.table_name,
        }
    )
    sink = MemoryMetricsSink()
    world.cluster.watch_ec2_client(world.session)  # the simulated kubelets learn of the handler's launches
    runtime = build_runtime(
        settings, session=world.session, kube_endpoint=world.cluster.emulator.url, clock=world.time, sink=sink
    )
    CONTAINER.install(runtime)
    yield world, sink
    CONTAINER.install(None)


@pytest.mark.slow
def test_the_handler_provisions_pending_pods_and_stops_once_its_nodes_are_initialized(
    wired: tuple[SimulatedWorld, MemoryMetricsSink],
) -> None:
    world, sink = wired
    world.cluster.scale("inflate", 3)
    world.sleep(0)
    started = world.clock.now()

    answer = lambda_handler.handler({"source": "aws.events"}, VirtualContext(world, 120))  # type: ignore[arg-type]

    assert answer["stopped"] == "quiet" and answer["launched"] and not answer["failed"]
    assert len(running(world)) == 3, "it stayed until the pods it launched for were running"
    assert 30 <= world.clock.now() - started < 120 - 15, "and no longer: a quiet pass ends the invocation"
    assert world.lease.acquire("provisioner", "next-run", world.clock.now(), 60), "the lease was released"
    assert sink.total(telemetry.CLAIMS_CREATED) == len(answer["launched"])
    assert sink.named(telemetry.DECISION_LATENCY_MS)


@pytest.mark.slow
def test_the_runtime_reads_the_cluster_config_from_ssm(
    wired: tuple[SimulatedWorld, MemoryMetricsSink],
) -> None:
    runtime = CONTAINER.get()
    assert [p.name for p in runtime.config.node_pools] == ["default"]
    assert "kind: Provisioner" in runtime.config_text or "NodePool" in runtime.config_text
