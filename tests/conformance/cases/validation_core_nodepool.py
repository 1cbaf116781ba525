"""NodePool validation, after kubernetes-sigs/karpenter `pkg/apis/v1/nodepool_validation_cel_test.go` (v1.14).

Each upstream `It`/`Entry` is one case; where an `It` loops over several inputs, each input is its own case
(`title [input]`). Creating an object that the API server accepts but `RuntimeValidate` rejects counts as a
rejection: Longshore validates everything before it runs.
"""

from __future__ import annotations

from tests.conformance.model import CORE, Source
from tests.conformance.validation import DELETE, accept, reject

SRC = Source(CORE, "pkg/apis/v1/nodepool_validation_cel_test.go")
T = "spec.template.spec"
D = "spec.disruption"
LONG = "a" * 250


def _budget(**fields: object) -> dict[str, object]:
    return {"nodes": "10", **fields}


def _req(key: str, op: str, *values: str, **more: object) -> dict[str, object]:
    item: dict[str, object] = {"key": key, "operator": op}
    if values:
        item["values"] = list(values)
    item.update(more)
    return item


ZONE = "topology.kubernetes.io/zone"
WINDOW = {"schedule": "* * * * *", "duration": "20m"}

CASES = [
    # --- Disruption ---------------------------------------------------------------------------------------
    accept(SRC, "should succeed on a disabled expireAfter", {f"{T}.expireAfter": "Never"}),
    accept(SRC, "should succeed on a disabled consolidateAfter", {f"{D}.consolidateAfter": "Never"}),
    accept(
        SRC,
        "should succeed when setting consolidateAfter with consolidationPolicy=WhenEmpty",
        {f"{D}.consolidationPolicy": "WhenEmpty", f"{D}.consolidateAfter": "30s"},
    ),
    accept(
        SRC,
        "should succeed when setting consolidateAfter with consolidationPolicy=WhenUnderutilized",
        {f"{D}.consolidationPolicy": "WhenEmptyOrUnderutilized", f"{D}.consolidateAfter": "30s"},
    ),
    accept(
        SRC,
        "should succeed when setting consolidateAfter to 'Never' with consolidationPolicy=WhenUnderutilized",
        {f"{D}.consolidationPolicy": "WhenEmptyOrUnderutilized", f"{D}.consolidateAfter": "Never"},
    ),
    accept(
        SRC,
        "should succeed when setting consolidateAfter to 'Never' with consolidationPolicy=WhenEmpty",
        {f"{D}.consolidationPolicy": "WhenEmpty", f"{D}.consolidateAfter": "Never"},
    ),
    accept(
        SRC,
        "should default consolidateAfter to '0s' when omitted on a dynamic NodePool",
        {f"{D}.consolidationPolicy": "WhenEmpty"},
    ),
    *(
        accept(
            SRC,
            f"should succeed on a valid consolidationPolicy [{policy}]",
            {f"{D}.consolidationPolicy": policy},
        )
        for policy in ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
    ),
    *(
        reject(
            SRC,
            f"should fail on an invalid consolidationPolicy [{label}]",
            {f"{D}.consolidationPolicy": policy},
            f"{D}.consolidationPolicy",
            policy,
        )
        for label, policy in (
            ("quoted 1", "1"),
            ("level 4", "4"),
            ("lowercase balanced", "balanced"),
            ("lowercase whenempty", "whenempty"),
            ("WhenUnderutilized", "WhenUnderutilized"),
            ("arbitrary string", "foo"),
        )
    ),
    reject(
        SRC,
        "should fail when creating a budget with an invalid cron",
        {f"{D}.budgets": [_budget(schedule="*", duration="20m")]},
        f"{D}.budgets[0].schedule",
        "*",
    ),
    reject(
        SRC,
        "should fail when creating a schedule with less than 5 entries",
        {f"{D}.budgets": [_budget(schedule="* * * * ", duration="20m")]},
        f"{D}.budgets[0].schedule",
    ),
    reject(
        SRC,
        "should fail when creating a budget with a negative duration",
        {f"{D}.budgets": [_budget(schedule="* * * * *", duration="-20m")]},
        f"{D}.budgets[0].duration",
        "-20m",
    ),
    reject(
        SRC,
        "should fail when creating a budget with a seconds duration",
        {f"{D}.budgets": [_budget(schedule="* * * * *", duration="30s")]},
        f"{D}.budgets[0].duration",
        "30s",
    ),
    reject(
        SRC,
        "should fail when creating a budget with a negative value int",
        {f"{D}.budgets": [{"nodes": "-10"}]},
        f"{D}.budgets[0].nodes",
        "-10",
    ),
    reject(
        SRC,
        "should fail when creating a budget with a negative value percent",
        {f"{D}.budgets": [{"nodes": "-10%"}]},
        f"{D}.budgets[0].nodes",
        "-10%",
    ),
    reject(
        SRC,
        "should fail when creating a budget with a value percent with more than 3 digits",
        {f"{D}.budgets": [{"nodes": "1000%"}]},
        f"{D}.budgets[0].nodes",
        "1000%",
    ),
    reject(
        SRC,
        "should fail when creating a budget with a cron but no duration",
        {f"{D}.budgets": [_budget(schedule="* * * * *")]},
        f"{D}.budgets[0].duration",
    ),
    reject(
        SRC,
        "should fail when creating a budget with a duration but no cron",
        {f"{D}.budgets": [_budget(duration="20m")]},
        f"{D}.budgets[0].schedule",
    ),
    accept(
        SRC,
        "should succeed when creating a budget with both duration and cron",
        {f"{D}.budgets": [_budget(**WINDOW)]},
    ),
    accept(
        SRC,
        "should succeed when creating a budget with hours and minutes in duration",
        {f"{D}.budgets": [_budget(schedule="* * * * *", duration="2h20m")]},
    ),
    accept(
        SRC,
        "should succeed when creating a budget with neither duration nor cron",
        {f"{D}.budgets": [_budget()]},
    ),
    accept(
        SRC,
        "should succeed when creating a budget with special cased crons",
        {f"{D}.budgets": [_budget(schedule="@annually", duration="20m")]},
    ),
    reject(
        SRC,
        "should fail when creating two budgets where one has an invalid crontab",
        {f"{D}.budgets": [_budget(**WINDOW), _budget(schedule="*", duration="20m")]},
        f"{D}.budgets[1].schedule",
        "*",
    ),
    reject(
        SRC,
        "should fail when creating multiple budgets where one doesn't have both schedule and duration",
        {f"{D}.budgets": [_budget(duration="20m"), _budget(**WINDOW), _budget()]},
        f"{D}.budgets[0].schedule",
    ),
    *(
        accept(
            SRC,
            f"should succeed when creating a budget with valid reasons [{reason}]",
            {f"{D}.budgets": [_budget(**WINDOW, reasons=[reason])]},
        )
        for reason in ("Drifted", "Underutilized", "Empty")
    ),
    *(
        reject(
            SRC,
            f"should fail when creating a budget with invalid reasons [{reason or 'empty'}]",
            {f"{D}.budgets": [_budget(**WINDOW, reasons=[reason])]},
            f"{D}.budgets[0].reasons",
            reason,
        )
        for reason in ("invalid", "expired", "")
    ),
    accept(
        SRC,
        "should allow setting multiple reasons",
        {f"{D}.budgets": [_budget(**WINDOW, reasons=["Drifted", "Empty"])]},
    ),
    # --- Taints ---------------------------------------------------------------------------------------------
    accept(
        SRC,
        "should succeed for valid taints",
        {
            f"{T}.taints": [
                {"key": "a", "value": "b", "effect": "NoSchedule"},
                {"key": "c", "value": "d", "effect": "NoExecute"},
                {"key": "e", "value": "f", "effect": "PreferNoSchedule"},
                {"key": "key-only", "effect": "NoExecute"},
            ]
        },
    ),
    *(
        reject(
            SRC,
            f"should fail for invalid taint keys [{key}]",
            {f"{T}.taints": [{"key": key, "effect": "NoSchedule"}]},
            f"{T}.taints[0].key",
            key,
        )
        for key in ("test.com.com}", "Test.com/test", "test/test/test", "test/", "/test")
    ),
    reject(
        SRC,
        "should fail at runtime for taint keys that are too long",
        {f"{T}.taints": [{"key": f"test.com.test/test-{LONG}", "effect": "NoSchedule"}]},
        f"{T}.taints[0].key",
    ),
    reject(
        SRC,
        "should fail for missing taint key",
        {f"{T}.taints": [{"effect": "NoSchedule"}]},
        f"{T}.taints[0]",
    ),
    reject(
        SRC,
        "should fail for invalid taint value",
        {f"{T}.taints": [{"key": "invalid-value", "effect": "NoSchedule", "value": "???"}]},
        f"{T}.taints[0].value",
        "???",
    ),
    reject(
        SRC,
        "should fail for invalid taint effect",
        {f"{T}.taints": [{"key": "invalid-effect", "effect": "???"}]},
        f"{T}.taints[0].effect",
        "???",
    ),
    accept(
        SRC,
        "should not fail for same key with different effects",
        {f"{T}.taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"}]},
    ),
    # --- Requirements ---------------------------------------------------------------------------------------
    accept(
        SRC,
        "should succeed for valid requirement keys",
        {
            f"{T}.requirements": [
                _req("Test", "Exists"),
                _req("test.com/Test", "Exists"),
                _req("test.com.com/test", "Exists"),
                _req("key-only", "Exists"),
            ]
        },
    ),
    *(
        reject(
            SRC,
            f"should fail for invalid requirement keys [{key}]",
            {f"{T}.requirements": [_req(key, "Exists")]},
            f"{T}.requirements[0].key",
            key,
        )
        for key in ("test.com.com}", "Test.com/test", "test/test/test", "test/", "/test")
    ),
    reject(
        SRC,
        "should fail at runtime for requirement keys that are too long",
        {f"{T}.requirements": [_req(f"test.com.test/test-{LONG}", "Exists")]},
        f"{T}.requirements[0].key",
    ),
    reject(
        SRC,
        "should fail for the karpenter.sh/nodepool label",
        {f"{T}.requirements": [_req("karpenter.sh/nodepool", "In", "team-a")]},
        f"{T}.requirements[0].key",
        "karpenter.sh/nodepool",
    ),
    accept(
        SRC,
        "should allow supported ops",
        {
            f"{T}.requirements": [
                _req(ZONE, "In", "test"),
                _req(ZONE, "Gt", "1"),
                _req(ZONE, "Lt", "1"),
                _req(ZONE, "NotIn"),
                _req(ZONE, "Exists"),
            ]
        },
    ),
    reject(
        SRC,
        "should fail for unsupported ops",
        {f"{T}.requirements": [_req(ZONE, "unknown", "test")]},
        f"{T}.requirements[0].operator",
        "unknown",
    ),
    reject(
        SRC,
        "should fail for restricted domains [karpenter.sh]",
        {f"{T}.requirements": [_req("karpenter.sh/test", "In", "test")]},
        f"{T}.requirements[0].key",
        "karpenter.sh/test",
    ),
    reject(
        SRC,
        "should fail for restricted labels [kubernetes.io/hostname]",
        {f"{T}.requirements": [_req("kubernetes.io/hostname", "In", "test")]},
        f"{T}.requirements[0].key",
        "kubernetes.io/hostname",
    ),
    *(
        accept(
            SRC,
            f"should allow kubernetes domains [{domain}]",
            {f"{T}.requirements": [_req(f"{domain}/test", "In", "test")]},
        )
        for domain in ("kubernetes.io", "k8s.io")
    ),
    *(
        accept(
            SRC,
            f"should allow kubernetes subdomains exceptions [subdomain.{domain}]",
            {f"{T}.requirements": [_req(f"subdomain.{domain}/test", "In", "test")]},
        )
        for domain in ("kubernetes.io", "k8s.io")
    ),
    *(
        accept(
            SRC,
            f"should allow well known label exceptions [{key}]",
            {f"{T}.requirements": [_req(key, "In", "test")]},
        )
        for key in (
            ZONE,
            "topology.kubernetes.io/region",
            "node.kubernetes.io/instance-type",
            "kubernetes.io/arch",
            "kubernetes.io/os",
            "node.kubernetes.io/windows-build",
        )
    ),
    accept(
        SRC,
        "should allow non-empty set after removing overlapped value",
        {f"{T}.requirements": [_req(ZONE, "In", "test", "foo"), _req(ZONE, "NotIn", "test", "bar")]},
    ),
    accept(SRC, "should allow empty requirements", {f"{T}.requirements": []}),
    *(
        reject(
            SRC,
            f"should fail with invalid {name} values [{op} {values}]",
            {f"{T}.requirements": [_req(ZONE, op, *values)]},
            f"{T}.requirements[0].values",
        )
        for name, ops in (("GT or LT", ("Gt", "Lt")), ("GTE or LTE", ("Gte", "Lte")))
        for op in ops
        for values in ((), ("1", "2"), ("a",), ("-1",))
    ),
    reject(
        SRC,
        "should error when minValues is negative",
        {f"{T}.requirements": [_req("node.kubernetes.io/instance-type", "In", "m5.large", minValues=-1)]},
        f"{T}.requirements[0].minValues",
        -1,
    ),
    reject(
        SRC,
        "should error when minValues is zero",
        {f"{T}.requirements": [_req("node.kubernetes.io/instance-type", "In", "m5.large", minValues=0)]},
        f"{T}.requirements[0].minValues",
        0,
    ),
    reject(
        SRC,
        "should error when minValues is more than 50",
        {f"{T}.requirements": [_req("node.kubernetes.io/instance-type", "Exists", minValues=51)]},
        f"{T}.requirements[0].minValues",
        51,
    ),
    accept(
        SRC,
        "should allow more than 50 values if minValues is not specified.",
        {
            f"{T}.requirements": [
                _req("node.kubernetes.io/instance-type", "In", *(f"instance{i}" for i in range(90)))
            ]
        },
    ),
    reject(
        SRC,
        "should error when minValues is greater than the number of unique values specified within In operator",
        {f"{T}.requirements": [_req("node.kubernetes.io/instance-type", "In", "m5.large", minValues=2)]},
        f"{T}.requirements[0].minValues",
        2,
    ),
    # --- Labels ---------------------------------------------------------------------------------------------
    accept(SRC, "should allow unrecognized labels", {"spec.template.metadata.labels": {"foo": "bar"}}),
    reject(
        SRC,
        "should fail for the karpenter.sh/nodepool label (labels)",
        {"spec.template.metadata.labels": {"karpenter.sh/nodepool": "team-a"}},
        "spec.template.metadata.labels",
        "karpenter.sh/nodepool",
    ),
    reject(
        SRC,
        "should fail for invalid label keys",
        {"spec.template.metadata.labels": {"spaces are not allowed": "x"}},
        "spec.template.metadata.labels",
        "spaces are not allowed",
    ),
    reject(
        SRC,
        "should fail at runtime for label keys that are too long",
        {"spec.template.metadata.labels": {f"test.com.test/test-{LONG}": "x"}},
        "spec.template.metadata.labels",
    ),
    reject(
        SRC,
        "should fail for invalid label values",
        {"spec.template.metadata.labels": {"team": "/ is not allowed"}},
        "spec.template.metadata.labels",
        "/ is not allowed",
    ),
    reject(
        SRC,
        "should fail for restricted label domains [karpenter.sh]",
        {"spec.template.metadata.labels": {"karpenter.sh/unknown": "x"}},
        "spec.template.metadata.labels",
        "karpenter.sh/unknown",
    ),
    accept(
        SRC,
        "should allow labels kOps require",
        {
            "spec.template.metadata.labels": {
                "kops.k8s.io/instancegroup": "karpenter-nodes",
                "kops.k8s.io/gpu": "1",
            }
        },
    ),
    *(
        accept(SRC, f"{title} [{key}]", {"spec.template.metadata.labels": {key: "test-value"}})
        for title, pattern in (
            ("should allow labels in kubernetes domains", "{}"),
            ("should allow labels prefixed with the kubernetes domain", "{}/key"),
            ("should allow subdomain labels in restricted domains exceptions list", "subdomain.{}"),
            ("should allow subdomain labels prefixed with the kubernetes domain", "subdomain.{}/key"),
        )
        for key in (pattern.format("kubernetes.io"), pattern.format("k8s.io"))
    ),
    # --- TerminationGracePeriod -------------------------------------------------------------------------------
    *(
        accept(
            SRC,
            f"should succeed on a valid terminationGracePeriod [{value}]",
            {f"{T}.terminationGracePeriod": value},
        )
        for value in ("30s", "1h30m5s")
    ),
    *(
        reject(
            SRC,
            f"should fail on an invalid terminationGracePeriod [{value}]",
            {f"{T}.terminationGracePeriod": value},
            f"{T}.terminationGracePeriod",
            value,
        )
        for value in ("-1s", "1hr", "Never", "FooNever")
    ),
    # --- NodeClassRef ---------------------------------------------------------------------------------------
    reject(
        SRC, "should fail if group is unset", {f"{T}.nodeClassRef.group": ""}, f"{T}.nodeClassRef.group", ""
    ),
    reject(SRC, "should fail if kind is unset", {f"{T}.nodeClassRef.kind": ""}, f"{T}.nodeClassRef.kind", ""),
    reject(SRC, "should fail if name is unset", {f"{T}.nodeClassRef.name": ""}, f"{T}.nodeClassRef.name", ""),
    # --- Replicas (static NodePools) -----------------------------------------------------------------------
    *(
        accept(SRC, f"should succeed when replicas is set to {title}", {"spec.replicas": count})
        for title, count in (("a positive value", 5), ("zero", 0), ("a large value", 1000))
    ),
    reject(
        SRC,
        "should fail when replicas is set to a negative value",
        {"spec.replicas": -100},
        "spec.replicas",
        -100,
    ),
    *(
        reject(
            SRC,
            f"should fail for incompatible fields [limits.{resource}]",
            {"spec.replicas": 10, "spec.limits": {resource: amount}},
            f"spec.limits.{resource}",
            resource,
        )
        for resource, amount in (
            ("cpu", "1000"),
            ("memory", "2000Gi"),
            ("pods", "10"),
            ("ephemeral-storage", "10Gi"),
        )
    ),
    reject(
        SRC,
        "should fail for incompatible fields [weight]",
        {"spec.replicas": 10, "spec.weight": 25},
        "spec.weight",
        25,
    ),
    accept(
        SRC,
        "should succeed for compatible fields [limits.nodes]",
        {"spec.replicas": 10, "spec.limits": {"nodes": "100"}},
    ),
    accept(
        SRC,
        "should succeed for compatible fields [disruption with multiple budgets]",
        {
            "spec.replicas": 10,
            "spec.disruption": {
                "consolidationPolicy": "WhenEmptyOrUnderutilized",
                "consolidateAfter": "5m",
                "budgets": [
                    {
                        "nodes": "20%",
                        "schedule": "0 9 * * mon-fri",
                        "duration": "8h",
                        "reasons": ["Drifted", "Empty"],
                    },
                    {
                        "nodes": "30%",
                        "schedule": "0 22 * * sat,sun",
                        "duration": "4h",
                        "reasons": ["Underutilized"],
                    },
                    {"nodes": "5"},
                ],
            },
        },
    ),
    accept(
        SRC,
        "should succeed for compatible fields [template labels, annotations, taints, startup taints]",
        {
            "spec.replicas": 10,
            "spec.template.metadata": {
                "labels": {"environment": "production"},
                "annotations": {"example.com/last-updated": "2024-01-01"},
            },
            f"{T}.taints": [{"key": "gpu-workload", "value": "enabled", "effect": "NoSchedule"}],
            f"{T}.startupTaints": [
                {"key": "example.com/initializing", "value": "true", "effect": "NoSchedule"}
            ],
        },
    ),
    accept(
        SRC,
        "should succeed for compatible fields [requirements]",
        {
            "spec.replicas": 10,
            f"{T}.requirements": [
                _req(
                    "node.kubernetes.io/instance-type", "In", "m5.large", "m5.xlarge", "c5.large", minValues=3
                ),
                _req("karpenter.sh/capacity-type", "In", "on-demand", "spot"),
                _req("karpenter.k8s.aws/instance-memory", "Gt", "8192"),
            ],
        },
    ),
    accept(
        SRC,
        "should succeed for compatible fields [expireAfter, terminationGracePeriod]",
        {"spec.replicas": 10, f"{T}.expireAfter": "72h", f"{T}.terminationGracePeriod": "300s"},
    ),
    accept(
        SRC,
        "should succeed when consolidateAfter is omitted on a static NodePool",
        {"spec.replicas": 3, f"{D}.consolidateAfter": DELETE},
    ),
]
