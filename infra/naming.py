"""Physical names of the per-cluster resources, derived from the cluster name alone.

Theory of operation: the functions need each other's names and ARNs in their environment (the steps Lambda
starts the disruption state machine, the rotation state machine invokes the steps Lambda...). Referencing
the resources directly would make CloudFormation see a dependency cycle, so the names are fixed strings
built here and ARNs are formatted from them. Names stay within each service's length limit: a long cluster
name is shortened and suffixed with a short hash so two long names never collide.
"""

from __future__ import annotations

import hashlib

PREFIX = "longshore"

LAMBDA_NAME_LIMIT = 64
STATE_MACHINE_NAME_LIMIT = 80
QUEUE_NAME_LIMIT = 80


def kubernetes_group(role: str) -> str:
    """The Kubernetes group a function's role is mapped to by its access entry; deploy/clusterrole.yaml binds it."""
    return f"{PREFIX}-{role}"


def physical_name(cluster: str, role: str, limit: int) -> str:
    """`longshore-<cluster>-<role>`, shortened with a stable hash when longer than `limit`."""
    name = f"{PREFIX}-{cluster}-{role}"
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(cluster.encode()).hexdigest()[:8]
    room = limit - len(f"{PREFIX}--{digest}-{role}")
    return f"{PREFIX}-{cluster[:room].rstrip('-_')}-{digest}-{role}"


def function_name(cluster: str, role: str) -> str:
    return physical_name(cluster, role, LAMBDA_NAME_LIMIT)


def state_machine_name(cluster: str, role: str) -> str:
    return physical_name(cluster, role, STATE_MACHINE_NAME_LIMIT)


def queue_name(cluster: str, role: str) -> str:
    return physical_name(cluster, role, QUEUE_NAME_LIMIT)


def config_parameter_name(cluster: str) -> str:
    """The SSM parameter that holds the validated cluster config."""
    return f"/{PREFIX}/{cluster}/config"


def service_name(cluster: str) -> str:
    """Powertools service name: the `service` dimension on every metric, so one cluster's metrics stay apart."""
    return f"{PREFIX}-{cluster}"
