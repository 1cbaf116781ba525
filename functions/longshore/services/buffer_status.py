"""After each provisioner pass: every CapacityBuffer's state, where its owner can see it.

Rules:
- A buffer that is an object in the cluster gets its `status` written back (`core.buffer_status`), through the
  status subresource, only when it differs from what the object shows (so a quiet cluster costs no write);
  an object Longshore cannot use gets `ReadyForProvisioning: False` with the error that names the field and
  the value. A failed write is logged and left for the next pass.
- A buffer from the config file has no object to hold a status: its one-line state (`describe`) is logged
  when it changes (per container; a cold start logs it once more), and `longshore status` prints it.
- Every pass that has buffers emits `CapacityBufferPodsUnplaced`: the virtual pods of all buffers that the
  pass placed nowhere (0 when every buffer is held).
- Only the provisioner writes: the disruption planner reads buffers but reports nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from longshore.core import telemetry
from longshore.core.buffer_status import Placement, buffer_status, describe, invalid_status
from longshore.core.scheduling import Plan
from longshore.ports.metrics import MetricsSink
from longshore.services.buffer_pods import BufferPass

log = logging.getLogger(__name__)


@runtime_checkable
class BufferStatusWriter(Protocol):
    def write_buffer_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        """Replace a CapacityBuffer's `status` (status subresource); a buffer that is gone is ignored."""
        ...


class BufferReporter:
    def __init__(self, writer: BufferStatusWriter | None, metrics: MetricsSink) -> None:
        self._writer = writer
        self._metrics = metrics
        self._logged: dict[str, str] = {}  # config-file buffer -> the last line logged

    def report(self, buffers: BufferPass, plan: Plan | None, now: float) -> int:
        """Publish every buffer's state after a pass (`plan` None: nothing was planned); returns the number
        of statuses written."""
        if not buffers.resolved and not buffers.invalid:
            return 0
        placements = Placement.of(plan, buffers.resolved)
        written = 0
        for item in buffers.resolved:
            placement = placements[item.buffer.key]
            if item.buffer.origin:
                line = describe(item, placement)
                if self._logged.get(item.buffer.key) != line:
                    self._logged[item.buffer.key] = line
                    log.info("CapacityBuffer (config file): %s", line, extra={"buffer": item.buffer.key})
                continue
            obj = buffers.objects.get(item.buffer.key)
            written += self._write(item.buffer.key, obj, buffer_status(item, placement, obj, now))
        for error in buffers.invalid:
            obj = buffers.objects.get(error.buffer)
            written += self._write(error.buffer, obj, invalid_status(str(error), obj, now))
        unplaced = sum(p.unplaced for p in placements.values())
        self._metrics.emit(telemetry.BUFFER_PODS_UNPLACED, float(unplaced))
        return written

    def _write(self, key: str, obj: Mapping[str, Any] | None, status: Mapping[str, Any]) -> int:
        if self._writer is None or obj is None or obj.get("status") == status:
            return 0
        namespace, _, name = key.partition("/")
        try:
            self._writer.write_buffer_status(namespace, name, status)
        except Exception as error:
            log.warning("CapacityBuffer status not written", extra={"buffer": key, "error": str(error)})
            return 0
        return 1
