"""What tests and the simulation give a `wiring.runtime.Runtime` instead of what it would make itself.

Rules:

- `Runtime.assembled` takes a `RuntimeParts` besides its `session`, `clock` and `kube_endpoint`; the
  constructor takes one too, with `config_text` or `cluster_objects` when a test pins those. Production
  (`Runtime.from_env()`) injects nothing: every field's default means "make the production one".
- A part replaces exactly what it names and nothing else: `clients` only the clients of the function's own
  region (a client asked for in another region is still made), then the workflow port, the catalog loader
  and the provisioner trigger. Every `build_*` wires the injected parts exactly as it wires the production
  ones.
- `config` is a parsed config used as it is and never re-read: the runtime reads no SSM parameter, lists no
  cluster objects and has no pool verdicts, and `Runtime.refreshed()` is always None.
- `watch_cache=False` sends unfiltered pod and node lists to the API server every time: the watch cache's
  catch-up waits for the server to be quiet in wall time, which a virtual-time simulation cannot afford.
- An injected clock also drives the Kubernetes client's retry waits; without one, `adapters.clock.WallClock`
  and `KubeCluster`'s own wall-clock defaults are used.

Parts are shared, not copied: a runtime made by `refreshed()` keeps the same `RuntimeParts`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from longshore.ports.triggers import ProvisionerTrigger

if TYPE_CHECKING:
    from longshore.core.catalog import Catalog
    from longshore.core.model import ClusterConfig
    from longshore.services.disruption import SurgeWorkflow


@dataclass(frozen=True)
class RuntimeParts:
    """Parts given to a `Runtime` instead of the ones it would make (tests and the simulation)."""

    clients: Mapping[str, Any] = field(default_factory=dict)  # service -> client, in the function's region
    workflows: SurgeWorkflow | None = None  # the disruption and rotation workflows
    catalog: Callable[[], Catalog] | None = None  # the priced catalog (moto has no Pricing API)
    provisioner_trigger: ProvisionerTrigger | None = None  # what the interruption handler wakes
    config: ClusterConfig | None = None  # a parsed config used as it is, never re-read
    watch_cache: bool = True  # False: unfiltered pod and node lists go to the API server every time
