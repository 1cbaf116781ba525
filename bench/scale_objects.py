"""Realistic pods and nodes for the scale benchmark: the size and shape EKS returns them in.

A pod is about 10 KB of JSON: managedFields for three managers, a dozen labels, annotations with a
last-applied configuration, two containers with env, probes, volume mounts and resources, projected and
configMap volumes, and a full status with container statuses. A node is about 12 KB, most of it
`status.images`. Values vary by index so no two objects share strings.
"""

from __future__ import annotations

import json
from typing import Any

_ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
_TS = "2026-11-23T10:00:00Z"


def _managed_fields(i: int) -> list[dict[str, Any]]:
    def entry(manager: str, operation: str, sub: str | None, keys: list[str]) -> dict[str, Any]:
        fields: dict[str, Any] = {f"f:{k}": {".": {}, f"f:{k}-{i % 7}": {}} for k in keys}
        out: dict[str, Any] = {
            "manager": manager,
            "operation": operation,
            "apiVersion": "v1",
            "time": _TS,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:spec": fields},
        }
        if sub:
            out["subresource"] = sub
        return out

    return [
        entry(
            "kube-controller-manager", "Update", None, ["containers", "volumes", "affinity", "tolerations"]
        ),
        entry("kubelet", "Update", "status", ["conditions", "containerStatuses", "podIPs", "hostIP"]),
        entry("kube-scheduler", "Update", "status", ["conditions"]),
    ]


def _container(i: int, name: str, cpu: str, memory: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": f"123456789012.dkr.ecr.us-east-1.amazonaws.com/team-{i % 40}/{name}:v1.{i % 97}.3",
        "command": ["/bin/server"],
        "args": ["--port=8080", f"--shard={i}", "--log-level=info", "--metrics-addr=:9090"],
        "ports": [
            {"name": "http", "containerPort": 8080, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
        ],
        "env": [{"name": f"SETTING_{k}", "value": f"value-{i}-{k}-" + "x" * 24} for k in range(14)]
        + [
            {
                "name": "POD_NAME",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
            },
            {"name": "AWS_REGION", "value": "us-east-1"},
        ],
        "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}},
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/config", "readOnly": True},
            {"name": f"kube-api-access-{i % 100000:05d}", "mountPath": "/var/run/secrets/kubernetes.io/sa"},
        ],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "initialDelaySeconds": 10,
            "timeoutSeconds": 1,
            "periodSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "readinessProbe": {
            "httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
            "timeoutSeconds": 1,
            "periodSeconds": 5,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True},
    }


def _status(i: int, node: str | None) -> dict[str, Any]:
    if node is None:
        return {
            "phase": "Pending",
            "qosClass": "Burstable",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/5000 nodes are available: 5000 Insufficient cpu.",
                    "lastProbeTime": None,
                    "lastTransitionTime": _TS,
                }
            ],
        }
    conditions = [
        {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": _TS}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
    ]
    statuses = [
        {
            "name": name,
            "state": {"running": {"startedAt": _TS}},
            "lastState": {},
            "ready": True,
            "restartCount": i % 3,
            "image": f"123456789012.dkr.ecr.us-east-1.amazonaws.com/team-{i % 40}/{name}:v1.{i % 97}.3",
            "imageID": f"123456789012.dkr.ecr.us-east-1.amazonaws.com/team@sha256:{i:064x}",
            "containerID": f"containerd://{i:064x}",
            "started": True,
        }
        for name in ("app", "sidecar")
    ]
    return {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": f"10.{i % 250}.{i // 250 % 250}.1",
        "podIP": f"10.{i % 250}.{i // 250 % 250}.{i % 200 + 2}",
        "podIPs": [{"ip": f"10.{i % 250}.{i // 250 % 250}.{i % 200 + 2}"}],
        "startTime": _TS,
        "containerStatuses": statuses,
        "qosClass": "Burstable",
    }


def pod(i: int, node: str | None, *, namespace: str = "default") -> dict[str, Any]:
    """Pod number `i`, bound to `node` (Running) or pending and unschedulable (`node` None)."""
    app = f"svc-{i % 300}"
    labels = {
        "app": app,
        "app.kubernetes.io/name": app,
        "app.kubernetes.io/instance": f"{app}-prod",
        "app.kubernetes.io/version": f"1.{i % 97}.3",
        "app.kubernetes.io/component": "api",
        "app.kubernetes.io/part-of": f"product-{i % 12}",
        "app.kubernetes.io/managed-by": "Helm",
        "team": f"team-{i % 40}",
        "cost-center": f"cc-{i % 25}",
        "environment": "production",
        "pod-template-hash": f"{i % 9973:08x}",
        "tier": "backend",
    }
    last_applied = json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"labels": labels}})
    spec: dict[str, Any] = {
        # 520m a pod, 30 a node: 15.6 of a node's 15.89 vCPU, so the cluster is full and a new pod needs a node
        "containers": [_container(i, "app", "470m", "512Mi"), _container(i, "sidecar", "50m", "64Mi")],
        "volumes": [
            {"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}},
            {
                "name": f"kube-api-access-{i % 100000:05d}",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                                ]
                            }
                        },
                    ],
                },
            },
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": app,
        "serviceAccount": app,
        "securityContext": {"fsGroup": 2000},
        "schedulerName": "default-scheduler",
        "priority": 0,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ],
    }
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{app}-{i:07d}",
            "generateName": f"{app}-",
            "namespace": namespace,
            "labels": labels,
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": last_applied,
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{app}-{i % 9973:08x}",
                    "uid": f"00000000-0000-4000-8000-{i % 300:012d}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": _managed_fields(i),
            "creationTimestamp": _TS,
        },
        "spec": spec,
        "status": _status(i, node),
    }


def node(j: int) -> dict[str, Any]:
    """Node number `j`: an m5.4xlarge-sized managed node with 50 cached images."""
    name = f"ip-10-{j // 250 % 250}-{j % 250}-1.ec2.internal"
    zone = _ZONES[j % 3]
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "m5.4xlarge",
        "topology.kubernetes.io/zone": zone,
        "topology.kubernetes.io/region": "us-east-1",
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": "on-demand",
        "karpenter.sh/initialized": "true",
        "karpenter.sh/registered": "true",
        "karpenter.k8s.aws/ec2nodeclass": "default",
        "eks.amazonaws.com/nodegroup-image": "ami-0123456789abcdef0",
    }
    images = [
        {
            "names": [
                f"123456789012.dkr.ecr.us-east-1.amazonaws.com/team-{k}/app@sha256:{j * 100 + k:064x}",
                f"123456789012.dkr.ecr.us-east-1.amazonaws.com/team-{k}/app:v1.{k}.3",
            ],
            "sizeBytes": 10_000_000 + k,
        }
        for k in range(50)
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "alpha.kubernetes.io/provided-node-ip": "10.0.0.1",
            },
            "managedFields": _managed_fields(j),
            "creationTimestamp": _TS,
        },
        "spec": {"providerID": f"aws:///{zone}/i-{j:017x}"},
        "status": {
            "capacity": {"cpu": "16", "memory": "64000Mi", "pods": "234", "ephemeral-storage": "80Gi"},
            "allocatable": {"cpu": "15890m", "memory": "62000Mi", "pods": "234", "ephemeral-storage": "76Gi"},
            "conditions": [
                {
                    "type": t,
                    "status": "True" if t == "Ready" else "False",
                    "reason": f"Kubelet{t}",
                    "message": f"kubelet reports {t}",
                    "lastHeartbeatTime": _TS,
                    "lastTransitionTime": _TS,
                }
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"10.{j // 250 % 250}.{j % 250}.1"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": f"{j:032x}",
                "systemUUID": f"{j:032x}",
                "bootID": f"{j:032x}",
                "kernelVersion": "6.1.0",
                "osImage": "Amazon Linux 2023",
                "containerRuntimeVersion": "containerd://1.7.0",
                "kubeletVersion": "v1.31.0",
                "kubeProxyVersion": "v1.31.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": images,
        },
    }
