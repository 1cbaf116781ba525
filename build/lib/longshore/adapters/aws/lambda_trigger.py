"""`ports.triggers.Trigger` as an asynchronous Lambda invoke of the provisioner or the planner function.

Theory of operation: `Invoke` with `InvocationType="Event"` queues the run and returns at once (HTTP 202),
so the caller (the interruption handler, the admission webhook) never waits for the function. The payload
is a small JSON object `{"source": "longshore.trigger", "reason": ...}` that the function can log; it
carries no state, because the function reads the cluster itself. A non-2xx status is raised as `TriggerError` so that the SQS
message that asked for it is retried (triggering again is harmless).
"""

from __future__ import annotations

import json
from typing import Any, Final

TRIGGER_SOURCE: Final = "longshore.trigger"


class TriggerError(RuntimeError):
    """Lambda did not accept the asynchronous invocation."""


class LambdaTrigger:
    def __init__(self, client: Any, function_name: str) -> None:
        self._client = client
        self._function_name = function_name

    def trigger(self, reason: str) -> None:
        payload = json.dumps({"source": TRIGGER_SOURCE, "reason": reason}).encode()
        response = self._client.invoke(
            FunctionName=self._function_name, InvocationType="Event", Payload=payload
        )
        status = int(response.get("StatusCode", 0))
        if not 200 <= status < 300:
            raise TriggerError(
                f"Lambda {self._function_name} refused the asynchronous invoke (status {status})"
            )


LambdaProvisionerTrigger = LambdaTrigger
