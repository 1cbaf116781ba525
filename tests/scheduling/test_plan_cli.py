"""`longshore plan` end to end: table and JSON output on the seed manifests and workloads."""

from __future__ import annotations

import json

from click.testing import CliRunner

from longshore.cli.main import main
from tests.conftest import SEED_WORKLOADS, VALID_MANIFESTS


def test_plan_json_schema_and_placements():
    result = CliRunner().invoke(
        main,
        [
            "plan",
            "--config",
            str(VALID_MANIFESTS / "04-weighted-savings-plan.yaml"),
            "--pods",
            str(SEED_WORKLOADS / "nginx-to-scaleout.yaml"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert {"nodeclaims", "existing", "unschedulable", "cost_per_hour"} <= set(document)
    pods = [p for claim in document["nodeclaims"] for p in claim["pods"]]
    assert sorted(pods) == [f"default/nginx-to-scaleout-{i}" for i in range(5)]
    for claim in document["nodeclaims"]:
        assert claim["nodepool"] == "savings-plan-instance" and claim["instance_type"] == "m5.large"
        assert claim["instance_types"][0] == "m5.large"
        assert claim["allocatable"]["cpu"] == "1930m"
    assert document["cost_per_hour"] == round(sum(c["price_per_hour"] for c in document["nodeclaims"]), 6)


def test_plan_table_lists_claims_placements_and_reasons(tmp_path):
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text("""apiVersion: v1
kind: Node
metadata: {name: old-1, labels: {topology.kubernetes.io/zone: us-east-1a, kubernetes.io/arch: amd64}}
status: {allocatable: {cpu: "1", memory: 2Gi, pods: "10"}}
""")
    result = CliRunner().invoke(
        main,
        [
            "plan",
            "-c",
            str(VALID_MANIFESTS / "05-gpu-tainted.yaml"),
            "--pods",
            str(SEED_WORKLOADS / "inflate.yaml"),
            "--replicas",
            "inflate=2",
            "--nodes",
            str(nodes),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "no new nodes" in result.output
    assert "default/inflate-0 -> old-1" in result.output or "default/inflate-1 -> old-1" in result.output
    # moto's offline shapes have no p3 types, so the gpu pool cannot launch anything: the reason says so
    assert (
        "default/inflate-1: pool gpu: no instance type in the catalog has node.kubernetes.io/instance-type"
        in result.output
    )


def test_plan_reports_manifest_errors_with_location(tmp_path):
    bad = tmp_path / "pods.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - name: c\n      resources: {requests: {memory: lots}}\n"
    )
    result = CliRunner().invoke(
        main, ["plan", "-c", str(VALID_MANIFESTS / "01-requirements-ttl-empty.yaml"), "--pods", str(bad)]
    )
    assert result.exit_code == 2
    assert "pods.yaml:7" in result.output and "spec.containers[0].resources.requests.memory" in result.output
