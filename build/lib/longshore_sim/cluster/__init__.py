"""A simulated EKS cluster on a virtual clock: scheduler, kubelets for moto's EC2 instances, workload controllers.

Modules: `bootstrap` (user data -> node settings), `capacity` (node capacity and allocatable), `matching`
(pod/node predicates), `scheduler`, `kubelet`, `workloads` (Deployment, ReplicaSet, DaemonSet, pod GC) and
`cluster` (`SimulatedCluster`, which ties them to the API emulator and the clock). See docs/emulator.md.
"""

from longshore_sim.cluster.bootstrap import NodeBootstrap
from longshore_sim.cluster.cluster import Sample, SimulatedCluster
from longshore_sim.cluster.kubelet import KubeletSettings

__all__ = ["KubeletSettings", "NodeBootstrap", "Sample", "SimulatedCluster"]
