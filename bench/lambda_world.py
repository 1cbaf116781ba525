"""The world `bench.lambda_durations` times the handlers in: a 50-node cluster seeded in moto and the API emulator.

Rules of the seeded world (what makes the figures comparable run to run):

- Every instance is an on-demand m5.2xlarge of the `general` pool on the `default` node class, launched from
  the AMI `al2023@latest` resolves to (so nothing is drifted), spread round-robin over the seeded zones, and
  tagged, claimed (state `initialized`) and registered as a Ready Node exactly as Longshore would have left it
  two days ago: the provisioner finds nothing pending and the planner nothing new.
- Every node carries the same pods: 17 ReplicaSet pods of 250m / 1 GiB (25 apps, round-robin) and one pod of
  each of 3 DaemonSets, all Running; 5 of the apps have a PDB of maxUnavailable 1.
- The AWS extras are what the handlers call beyond `bench.coldstart.seed_world`: a disruption state machine,
  the provisioner and planner functions (moto answers invokes without Docker) and the webhook secret; their
  names and ARNs are returned as the functions' environment.

Nothing here measures anything; it only seeds through moto's and the emulator's ordinary APIs.
"""

from __future__ import annotations

import json
import time
from typing import Any

from bench.coldstart import CLUSTER

NODES = 50
APP_PODS_PER_NODE = 17
DAEMONSETS = ("aws-node", "kube-proxy", "node-exporter")
PDB_APPS = 5
APPS = 25
INSTANCE_TYPE = "m5.2xlarge"
NODEPOOL = "general"
NODE_CLASS = "default"
PROVISIONER_FUNCTION = "longshore-demo-provisioner"
PLANNER_FUNCTION = "longshore-demo-planner"

WEBHOOK_SECRET = "bench-webhook-secret-0123456789abcdef0123456789abcd"  # the URL path the webhook expects


def iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def seed_aws_extras(session: Any, env: dict[str, str]) -> dict[str, str]:
    """A disruption state machine and the provisioner function (what the interruption handler calls)."""
    import io
    import urllib.request
    import zipfile

    # moto answers Lambda invokes without Docker (the provisioner trigger is an async invoke).
    request = urllib.request.Request(
        f"{env['AWS_ENDPOINT_URL']}/moto-api/config",
        data=json.dumps({"lambda": {"use_docker": False}}).encode(),
        method="POST",
    )
    urllib.request.urlopen(request, timeout=10).close()

    role = session.client("iam").create_role(
        RoleName="longshore-bench",
        AssumeRolePolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
             "Principal": {"Service": ["lambda.amazonaws.com", "states.amazonaws.com"]}}]}
        ),
    )["Role"]["Arn"]  # fmt: skip
    sfn = session.client("stepfunctions")
    arn = sfn.create_state_machine(
        name="longshore-demo-disruption",
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
        roleArn=role,
    )["stateMachineArn"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return {}\n")
    for name in (PROVISIONER_FUNCTION, PLANNER_FUNCTION):
        session.client("lambda").create_function(
            FunctionName=name,
            Runtime="python3.11",
            Role=role,
            Handler="index.handler",
            Code={"ZipFile": buffer.getvalue()},
        )
    secret = session.client("secretsmanager").create_secret(
        Name="longshore-webhook", SecretString=WEBHOOK_SECRET
    )
    return {
        "LONGSHORE_DISRUPTION_STATE_MACHINE_ARN": arn,
        "LONGSHORE_PROVISIONER_FUNCTION_NAME": PROVISIONER_FUNCTION,
        "LONGSHORE_PLANNER_FUNCTION_NAME": PLANNER_FUNCTION,
        "LONGSHORE_WEBHOOK_SECRET_ARN": secret["ARN"],
    }


def seed_nodes(session: Any, env: dict[str, str], store: Any) -> list[dict[str, str]]:
    """50 instances, their claims and Ready Nodes; returns [{instance_id, node, zone}]."""
    from longshore.adapters.aws import tags as tagnames
    from longshore.adapters.aws.amis import ssm_parameter_name
    from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoTable
    from longshore.core.claims import NodeClaim

    ec2 = session.client("ec2")
    zones = sorted({s["AvailabilityZone"] for s in ec2.describe_subnets()["Subnets"]})
    subnets = {s["AvailabilityZone"]: s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]}
    parameter = ssm_parameter_name("AL2023", "1.31", "x86_64")  # what al2023@latest resolves to: no AMI drift
    image = session.client("ssm").get_parameter(Name=parameter)["Parameter"]["Value"]
    claims = DynamoClaimStore(DynamoTable(session.client("dynamodb"), env["LONGSHORE_TABLE_NAME"]))
    now = time.time()
    created = now - 2 * 86_400
    seeded = []
    for index in range(NODES):
        zone = zones[index % len(zones)]
        claim_id = f"{NODEPOOL}-bench{index:03d}"
        tags = tagnames.claim_tags(CLUSTER, NODEPOOL, NODE_CLASS, claim_id, created)
        instance = ec2.run_instances(
            ImageId=image,
            InstanceType=INSTANCE_TYPE,
            MinCount=1,
            MaxCount=1,
            SubnetId=subnets[zone],
            TagSpecifications=[{"ResourceType": "instance", "Tags": tagnames.as_ec2(tags)}],
        )["Instances"][0]
        instance_id = instance["InstanceId"]
        node = instance.get("PrivateDnsName") or f"ip-{index}.ec2.internal"
        provider_id = f"aws:///{zone}/{instance_id}"
        claims.put(
            NodeClaim(
                id=claim_id,
                nodepool=NODEPOOL,
                node_class=NODE_CLASS,
                instance_types=(INSTANCE_TYPE,),
                instance_type=INSTANCE_TYPE,
                zone=zone,
                capacity_type="on-demand",
                price=0.384,
                instance_id=instance_id,
                node_name=node,
                provider_id=provider_id,
                state="initialized",
                launched_at=created,
                registered_at=created + 30,
                initialized_at=created + 40,
                created_at=created,
                image_id=image,
            )
        )
        stamp = iso(created)
        store.create(
            "nodes",
            {
                "metadata": {
                    "name": node,
                    "creationTimestamp": stamp,
                    "labels": {
                        "kubernetes.io/hostname": node,
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64",
                        "node.kubernetes.io/instance-type": INSTANCE_TYPE,
                        "topology.kubernetes.io/zone": zone,
                        "topology.kubernetes.io/region": "us-east-1",
                        "karpenter.sh/capacity-type": "on-demand",
                        "karpenter.sh/nodepool": NODEPOOL,
                        "karpenter.k8s.aws/ec2nodeclass": NODE_CLASS,
                        "karpenter.sh/registered": "true",
                        "karpenter.sh/initialized": "true",
                        "node-type": "workernode",
                    },
                },
                "spec": {"providerID": provider_id},
                "status": {
                    "capacity": {"cpu": "8", "memory": "32386544Ki", "pods": "58"},
                    "allocatable": {"cpu": "7910m", "memory": "31369712Ki", "pods": "58"},
                    "conditions": [
                        {"type": "Ready", "status": "True", "reason": "KubeletReady",
                         "lastHeartbeatTime": stamp, "lastTransitionTime": stamp},
                    ],
                    "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                                 "kubeletVersion": "v1.31.0", "machineID": instance_id},
                },
            },
            keep_status=True,
        )  # fmt: skip
        seeded.append({"instance_id": instance_id, "node": node, "zone": zone, "claim_id": claim_id})
    return seeded


def seed_workloads(store: Any, nodes: list[dict[str, str]]) -> None:
    """DaemonSets, ReplicaSet pods (17 per node) and PDBs: ~20 pods per node."""
    running = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    for name in DAEMONSETS:
        store.create(
            "daemonsets",
            {
                "metadata": {"name": name, "namespace": "kube-system"},
                "spec": {
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {"containers": [{"name": name, "image": f"{name}:1",
                                                 "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}],
                                 "tolerations": [{"operator": "Exists"}]},
                    },
                },
            },
            "kube-system",
        )  # fmt: skip
    for budget in range(PDB_APPS):
        store.create(
            "poddisruptionbudgets",
            {
                "metadata": {"name": f"app-{budget}", "namespace": "default"},
                "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": f"app-{budget}"}}},
            },
            "default",
        )
    counter = 0
    for node in nodes:
        for name in DAEMONSETS:
            store.create(
                "pods",
                {
                    "metadata": {"name": f"{name}-{node['instance_id']}", "namespace": "kube-system",
                                 "labels": {"app": name},
                                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": name,
                                                      "uid": f"ds-{name}", "controller": True}]},
                    "spec": {"nodeName": node["node"], "tolerations": [{"operator": "Exists"}],
                             "containers": [{"name": name, "image": f"{name}:1",
                                             "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}]},
                    "status": running,
                },
                "kube-system",
                keep_status=True,
            )  # fmt: skip
        for _ in range(APP_PODS_PER_NODE):
            app = f"app-{counter % APPS}"
            counter += 1
            store.create(
                "pods",
                {
                    "metadata": {"name": f"{app}-{counter:05d}", "namespace": "default", "labels": {"app": app},
                                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                      "name": f"{app}-rs", "uid": f"rs-{app}", "controller": True}]},
                    "spec": {"nodeName": node["node"],
                             "containers": [{"name": "app", "image": "app:1",
                                             "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}]},
                    "status": running,
                },
                "default",
                keep_status=True,
            )  # fmt: skip
