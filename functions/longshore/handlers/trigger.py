"""The trigger Lambda: the cluster's admission webhook behind a function URL, waking the provisioner and planner.

Each request goes through `wiring.trigger.serve`: 403 without the per-cluster secret in the path, 400 for
what is not an AdmissionReview, otherwise at most one wake per target per burst, and always "allowed". The
function is small on purpose: no kubernetes client, no cluster config, no Tracer (see
`wiring.observability.logged_entry_point`).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from longshore.wiring.observability import logged_entry_point
from longshore.wiring.trigger import CONTAINER, serve


@logged_entry_point
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Lambda entry point: `longshore.handlers.trigger.handler` (function URL, auth NONE, secret path)."""
    return serve(event, CONTAINER.get())
