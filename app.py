"""The CDK app: `cdk synth|deploy -c cluster=NAME` deploys Longshore for the cluster in clusters/NAME.yaml.

Theory of operation: the config is loaded and validated by the same loader as `longshore validate`, so an
invalid config stops the synth with exactly the messages `longshore validate` prints (and exit status 1).
Deployment settings come from context (see infra/settings.py and docs/deploy.md). cdk-nag's AwsSolutions
checks run on the whole app; an unacknowledged finding fails the synth. No AWS call is made.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from infra.cluster import DeploymentError
from infra.config_source import CLUSTERS_DIR, ClusterNotFound, load_cluster_source
from infra.interruption import InterruptionQueueError
from infra.settings import DeploymentSettings, SettingsError
from infra.stack import LongshoreStack

from infra import nag
from longshore.config import ConfigErrors


def main() -> int:
    app = cdk.App()
    cluster = app.node.try_get_context("cluster")
    if not isinstance(cluster, str) or not cluster:
        print(
            "longshore: pass the cluster to deploy: cdk synth -c cluster=NAME (reads clusters/NAME.yaml)",
            file=sys.stderr,
        )
        return 2
    try:
        settings = DeploymentSettings.from_context(app.node.try_get_context)
        clusters_dir = app.node.try_get_context("clustersDir")
        source = load_cluster_source(
            cluster,
            Path(clusters_dir) if clusters_dir else CLUSTERS_DIR,
            region=app.node.try_get_context("region"),
        )
        LongshoreStack(app, source, settings)
    except (ConfigErrors, ClusterNotFound, SettingsError, DeploymentError, InterruptionQueueError) as error:
        print(f"longshore: cannot synthesise cluster {cluster!r}:\n{error}", file=sys.stderr)
        return 1
    nag.check(app)
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
