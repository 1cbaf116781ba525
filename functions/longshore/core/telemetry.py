"""Metric names and dimensions: the one list that the code emits and the dashboard and alarms read.

Theory of operation: handlers emit metrics through Powertools in the `NAMESPACE` namespace using only the
names below; the CDK stack builds its dashboard and alarms from the same constants, and a test checks that
every name the stack reads is one the code can emit. Add a name here before emitting it.
"""

from __future__ import annotations

NAMESPACE = "Longshore"

# Provisioning
PENDING_PODS = "PendingPods"
PODS_PENDING_OVER_10_MIN = "PodsPendingOver10Min"
DECISION_LATENCY_MS = "DecisionLatencyMs"
CLAIMS_CREATED = "NodeClaimsCreated"  # dims: NodePool, InstanceType, CapacityType
LAUNCH_FAILURES = "LaunchFailures"  # dims: Reason
CLUSTER_COST_PER_HOUR = "ClusterCostPerHour"
NODEPOOL_COST_PER_HOUR = "NodePoolCostPerHour"  # dims: NodePool
NODES = "Nodes"  # dims: NodePool, CapacityType (registered nodes; `core.fleet_metrics`)
NODECLAIMS = "NodeClaims"  # dims: NodePool (NodeClaims with an instance, launching ones included)
NODES_REGISTERED = "NodesRegistered"
NODES_INITIALIZED = "NodesInitialized"
LAUNCH_TIMEOUTS = "LaunchTimeouts"
REGISTRATION_TIMEOUTS = "RegistrationTimeouts"
ORPHANS_TERMINATED = "OrphanInstancesTerminated"
BUFFER_PODS_UNPLACED = "CapacityBufferPodsUnplaced"  # CapacityBuffers' virtual pods a pass placed nowhere
ORPHANS_MASS_DETECTED = "OrphansMassDetected"  # more unclaimed instances than one pass may collect: none were

# Interruption
MESSAGES_RECEIVED = "InterruptionMessagesReceived"  # dims: Kind
INTERRUPTION_ACTIONS = "InterruptionActions"  # dims: Action
MESSAGES_MALFORMED = "InterruptionMessagesMalformed"
MESSAGES_IGNORED = "InterruptionMessagesIgnored"  # dims: Reason (foreign, unknown-kind, no-op-state)
QUEUE_LATENCY_MS = "InterruptionQueueLatencyMs"
REPLACEMENT_LEAD_TIME_S = "ReplacementLeadTimeSeconds"

# Disruption
DISRUPTION_DECISIONS = "DisruptionDecisions"  # dims: Reason
NODES_DISRUPTED = "NodesDisrupted"  # dims: Reason
DRAIN_DURATION_S = "DrainDurationSeconds"
EVICTIONS_BLOCKED_BY_PDB = "EvictionsBlockedByPDB"
SAVINGS_PER_HOUR = "ConsolidationSavingsPerHour"
NODE_REPAIR_BLOCKED = (
    "NodeRepairBlocked"  # dims: NodePool; unhealthy nodes of a pool too sick to repair (alarmed)
)
REPLACEMENTS_LAUNCHED = "ReplacementsLaunched"  # dims: Reason (the disruption's reason)
REPLACEMENTS_UNAVAILABLE = "ReplacementsUnavailable"  # dims: Reason (the disruption's reason)

# Shadow mode (`adapters.shadow`): what Longshore would have done
SHADOW_WOULD_LAUNCH = "ShadowWouldLaunch"  # dims: NodePool
SHADOW_WOULD_LAUNCH_COST = "ShadowWouldLaunchCostPerHour"  # dims: NodePool
SHADOW_WOULD_DISRUPT = "ShadowWouldDisrupt"  # dims: Reason

# Dimension names
DIM_NODEPOOL = "NodePool"
DIM_INSTANCE_TYPE = "InstanceType"
DIM_CAPACITY_TYPE = "CapacityType"
DIM_REASON = "Reason"
DIM_KIND = "Kind"
DIM_ACTION = "Action"

KARPENTER_EQUIVALENTS: dict[str, tuple[str, str, str]] = {
    # Karpenter metric (kubernetes-sigs/karpenter website/content/en/docs/reference/metrics.md,
    # aws/karpenter-provider-aws website/content/en/docs/reference/metrics.md)
    # -> (the Longshore CloudWatch metric, the statistic that reads it like Karpenter's, how to read it).
    # One to one: no Longshore metric answers two Karpenter ones (tests/infra/test_metric_mapping.py).
    "karpenter_nodepools_cost_total": (NODEPOOL_COST_PER_HOUR, "Maximum", "$/h by NodePool; a gauge in both"),
    "karpenter_nodepools_usage": (
        NODECLAIMS,
        "Maximum",
        'resource_type="nodes" only: NodeClaims by NodePool',
    ),
    "karpenter_cluster_state_node_count": (
        NODES,
        "Maximum",
        "by NodePool, CapacityType; sum them for the total",
    ),
    "karpenter_nodes_created_total": (NODES_REGISTERED, "Sum", "Sum; no NodePool dimension"),
    "karpenter_nodeclaims_created_total": (
        CLAIMS_CREATED,
        "Sum",
        "Sum by NodePool, InstanceType, CapacityType",
    ),
    "karpenter_nodeclaims_disrupted_total": (NODES_DISRUPTED, "Sum", "Sum by Reason"),
    "karpenter_voluntary_disruption_decisions_total": (DISRUPTION_DECISIONS, "Sum", "Sum by Reason"),
    "karpenter_scheduler_unschedulable_pods_count": (PENDING_PODS, "Maximum", "Maximum"),
    "karpenter_pods_scheduling_decision_duration_seconds": (
        DECISION_LATENCY_MS,
        "Average",
        "milliseconds, not seconds",
    ),
    "karpenter_pods_eviction_requests_total": (EVICTIONS_BLOCKED_BY_PDB, "Sum", "refusals only (429), Sum"),
    "karpenter_nodes_termination_duration_seconds": (DRAIN_DURATION_S, "Average", "drain only, seconds"),
    "karpenter_interruption_received_messages_total": (MESSAGES_RECEIVED, "Sum", "Sum by Kind"),
    "karpenter_interruption_message_queue_duration_seconds": (
        QUEUE_LATENCY_MS,
        "Average",
        "milliseconds, not seconds",
    ),
    "karpenter_cloudprovider_instance_launch_failures_total": (LAUNCH_FAILURES, "Sum", "Sum by Reason"),
}
"""The Karpenter metrics a migrating team's dashboards and alerts read, and the Longshore metric that answers
the same question (the dashboard shows this table and one graph titled with each Karpenter name;
`docs/metrics.md` explains each)."""

ALL_METRICS = frozenset(
    value
    for key, value in dict(globals()).items()
    if key.isupper() and not key.startswith(("DIM_", "NAMESPACE", "ALL_", "KARPENTER_"))
)
