"""`longshore sandbox`: the simulated world in the foreground, paced to the wall clock, for kubectl.

Rules:
- The world is the simulation's (moto, the API emulator, the functions on their schedules and triggers, the
  workflows), started from a scenario (`scenarios/sandbox.yaml` by default: the example cluster, nothing
  running). A kubeconfig for the emulator is written before anything else happens, so `kubectl` works at once.
- Virtual time never runs ahead of the wall clock times `speed` (1 = real time; 10 = a minute in 6 s). It advances
  in slices of at most `SLICE_S` virtual seconds, so what kubectl changes is reconciled within a slice: a new
  Deployment gets its pods, which the admission webhook reports to the provisioner at once.
- It runs until `stop` is set (Ctrl-C in the command) and then shuts the world down; nothing is left running.
- Everything the scenario runner checks still holds: the rule checker watches the whole session.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from longshore_sim.runner import ScenarioRunner, SimulationResult
from longshore_sim.scenario import Scenario

SLICE_S = 1.0


class SandboxStopped(Exception):
    """The sandbox was asked to stop."""


def write_kubeconfig(path: Path, url: str, context: str = "longshore-sandbox") -> Path:
    """A kubeconfig for the emulator (it accepts any token, as the sandbox has no real users)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: {context}\n  cluster:\n    server: {url}\n"
        f"users:\n- name: {context}\n  user:\n    token: sandbox\n"
        f"contexts:\n- name: {context}\n  context:\n    cluster: {context}\n    user: {context}\n"
        f"current-context: {context}\n"
    )
    return path


class SandboxRunner(ScenarioRunner):
    """The scenario runner, paced to the wall clock and stoppable (see the module rules)."""

    def __init__(
        self,
        scenario: Scenario,
        *,
        kubeconfig: Path,
        speed: float = 1.0,
        stop: threading.Event | None = None,
        on_ready: Callable[[Any], None] | None = None,
        **options: Any,
    ) -> None:
        options.setdefault("karpenter_objects", True)  # NodeClaims for kubectl, as the functions write them
        super().__init__(scenario, **options)
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.kubeconfig = kubeconfig
        self.speed = speed
        self.stop = stop or threading.Event()
        self.on_ready = on_ready
        self._wall0 = 0.0
        self._virtual0 = 0.0

    def run(self) -> SimulationResult:
        try:
            return super().run()
        except SandboxStopped:
            return SimulationResult({"stopped": True}, [])

    def _drive(self) -> None:
        write_kubeconfig(self.kubeconfig, self.world.cluster.emulator.url)
        self._wall0, self._virtual0 = time.monotonic(), self.world.clock.now()
        if self.on_ready is not None:
            self.on_ready(self.world)
        super()._drive()

    def _sleep_unless_triggered(self, target: float) -> None:
        clock = self.world.clock
        while True:
            if self.stop.is_set():
                raise SandboxStopped()
            now = clock.now()
            if now >= target:
                return
            step_to = min(target, now + SLICE_S)
            delay = self._wall0 + (step_to - self._virtual0) / self.speed - time.monotonic()
            if delay > 0 and self.stop.wait(delay):
                raise SandboxStopped()
            super()._sleep_unless_triggered(step_to)
            if clock.now() < step_to:  # a trigger cut the slice short: the caller runs a pass now
                return
