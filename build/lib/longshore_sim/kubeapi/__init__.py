"""A Kubernetes API server emulator for the real kubernetes client, served over HTTP on 127.0.0.1.

Modules, one concern each: `resources` (the served types), `selectors`, `patching`, `strategies` (per-kind
API rules), `store` (state, versions, deletion lifecycle), `watchlog` (changes for watches), `disruption`
(PDB status and evictions), `faults`, `discovery`, `server` (HTTP routing and watch streaming) and
`emulator` (`KubeApiEmulator`, the entry point). See docs/emulator.md.
"""

from longshore.adapters.clock import WallClock
from longshore_sim.kubeapi.emulator import KubeApiEmulator
from longshore_sim.kubeapi.errors import ApiError
from longshore_sim.kubeapi.faults import Fault
from longshore_sim.kubeapi.store import ObjectStore

__all__ = ["ApiError", "Fault", "KubeApiEmulator", "ObjectStore", "WallClock"]
