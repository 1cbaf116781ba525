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
NODES = "Nodes"  # dims: NodePool, CapacityType
NODES_REGISTERED = "NodesRegistered"
NODES_INITIALIZED = "NodesInitialized"
LAUNCH_TIMEOUTS = "LaunchTimeouts"
REGISTRATION_TIMEOUTS = "RegistrationTimeouts"
ORPHANS_TERMINATED = "OrphanInstancesTerminated"
ORPHANS_MASS_DETECTED = "OrphansMassDetected"  # more unclaimed instances than one pass may collect

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
REPLACEMENTS_LAUNCHED = "ReplacementsLaunched"  # dims: Reason (the disruption's reason)
REPLACEMENTS_UNAVAILABLE = "ReplacementsUnavailable"  # dims: Reason (the disruption's reason)

# Dimension names
DIM_NODEPOOL = "NodePool"
DIM_INSTANCE_TYPE = "InstanceType"
DIM_CAPACITY_TYPE = "CapacityType"
DIM_REASON = "Reason"
DIM_KIND = "Kind"
DIM_ACTION = "Action"

ALL_METRICS = frozenset(
    value
    for key, value in dict(globals()).items()
    if key.isupper() and not key.startswith(("DIM_", "NAMESPACE", "ALL_"))
)
