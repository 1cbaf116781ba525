"""The provisioner Lambda's cold start: import plus init, in fresh processes, with compiled bytecode.

Theory of operation: a Lambda cold start runs the handler module's imports, then our init (the first call of
`wiring.provisioner.CONTAINER.get()`: RuntimeSettings from the environment, the cluster config from SSM through
Powertools parameters, `eks:DescribeCluster`, the node classes' subnets, boto3 clients, the kubernetes client
with its CoreV1/AppsV1/PolicyV1 APIs, the DynamoDB stores and the fleet launcher). This script measures
exactly that, in a fresh interpreter per sample, after `compileall` (a deployment ships .pyc):

- the parent process starts a moto server on 127.0.0.1, seeds the cluster's AWS side (`sim.aws.seed_cluster`)
  and puts the example cluster config (`clusters/demo.yaml`, bundled) in the SSM parameter;
- each child points boto3 at that server (`AWS_ENDPOINT_URL`), sets the function's environment, and times
  `import longshore.handlers.provisioner` and `runtime()` with `time.perf_counter()`; the AWS calls of the
  init go over loopback to moto, standing in for the few ms they take inside a VPC.

`--kubernetes-path DIR` puts another kubernetes client first on `sys.path` (e.g. 37.x, prepared with
`pip install --target DIR kubernetes==37.0.1`), to compare versions. The figure printed is the median of
`--runs` samples (and the best); the target is <= 1 s.

    .venv/bin/python -m bench.coldstart [--runs 7] [--kubernetes-path DIR]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CLUSTER = "demo"
PARAMETER = "/longshore/demo/config"

CHILD = r"""
import json, time
t0 = time.perf_counter()
import longshore.handlers.provisioner as handler
from longshore.wiring.provisioner import CONTAINER
t1 = time.perf_counter()
runtime = CONTAINER.get()
t2 = time.perf_counter()
import kubernetes
print(json.dumps({"import_s": t1 - t0, "init_s": t2 - t1, "total_s": t2 - t0,
                  "kubernetes": kubernetes.__version__, "pools": len(runtime.config.node_pools)}))
"""


def _seed(endpoint: str) -> dict[str, str]:
    import boto3

    from longshore.config import bundle_cluster
    from longshore_sim.aws import seed_cluster

    session = boto3.session.Session(region_name="us-east-1")
    original = os.environ.get("AWS_ENDPOINT_URL")
    os.environ["AWS_ENDPOINT_URL"] = endpoint
    try:
        seeded = seed_cluster(session, CLUSTER, kubernetes_version="1.31")
        session.client("ssm").put_parameter(
            Name=PARAMETER,
            Value=bundle_cluster([REPO / "clusters" / "demo.yaml"]),
            Type="String",
            Tier="Advanced",
        )
    finally:
        if original is None:
            os.environ.pop("AWS_ENDPOINT_URL", None)
        else:
            os.environ["AWS_ENDPOINT_URL"] = original
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "LONGSHORE_CLUSTER_NAME": CLUSTER,
        "LONGSHORE_CONFIG_PARAMETER": PARAMETER,
        "LONGSHORE_TABLE_NAME": seeded.table_name,
        "POWERTOOLS_SERVICE_NAME": "longshore",
        "POWERTOOLS_METRICS_NAMESPACE": "Longshore",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }


def seed_world(endpoint: str) -> dict[str, str]:
    """Seed the demo cluster's AWS side in the moto server at `endpoint`; returns the function's environment."""
    return _seed(endpoint)


def start_moto_server() -> tuple[Any, str]:
    """A moto server on 127.0.0.1 (ephemeral port), started; returns it and its endpoint URL."""
    import logging

    from moto.server import ThreadedMotoServer

    os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(key, "testing")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


def measure(runs: int = 7, kubernetes_path: str | None = None) -> dict[str, object]:
    compileall.compile_dir(str(REPO / "functions" / "longshore"), quiet=1)
    if kubernetes_path:
        compileall.compile_dir(kubernetes_path, quiet=1)
    server, endpoint = start_moto_server()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LONGSHORE_"))}
        env.update(_seed(endpoint))
        paths = [str(REPO / "functions")]
        if kubernetes_path:
            paths.insert(0, kubernetes_path)
        env["PYTHONPATH"] = os.pathsep.join(paths)
        samples = []
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True, cwd="/"
            )
            samples.append(json.loads(out.stdout.strip().splitlines()[-1]))
    finally:
        server.stop()
    result: dict[str, object] = {"kubernetes": samples[0]["kubernetes"], "runs": runs}
    for key in ("import_s", "init_s", "total_s"):
        values = [float(s[key]) for s in samples]
        result[key] = {"median": round(statistics.median(values), 3), "best": round(min(values), 3)}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--kubernetes-path", default=None, help="a directory holding another kubernetes client"
    )
    args = parser.parse_args(argv)
    result = measure(args.runs, args.kubernetes_path)
    total = result["total_s"]
    assert isinstance(total, dict)
    print(json.dumps(result, indent=2))
    print(
        f"provisioner cold start (import + init), kubernetes {result['kubernetes']}: "
        f"{total['median']:.2f} s median, {total['best']:.2f} s best of {args.runs} (target <= 1 s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
