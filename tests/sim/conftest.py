"""Fixtures for the emulator and simulated-cluster tests: an emulator on a virtual clock and real API clients."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from longshore_sim.clock import VirtualClock
from longshore_sim.kubeapi import KubeApiEmulator


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def emulator(clock: VirtualClock) -> Iterator[KubeApiEmulator]:
    with KubeApiEmulator(clock=clock) as running:
        yield running


@pytest.fixture
def api(emulator: KubeApiEmulator) -> Iterator[Any]:
    api_client = emulator.api_client()
    yield api_client
    api_client.close()


@pytest.fixture
def core(api: Any) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def apps(api: Any) -> client.AppsV1Api:
    return client.AppsV1Api(api)


@pytest.fixture
def policy(api: Any) -> client.PolicyV1Api:
    return client.PolicyV1Api(api)
