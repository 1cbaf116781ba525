"""`longshore adopt`: take over the nodes of a cluster Karpenter ran, without replacing one.

Theory of operation (the steps and the way back are in `docs/migration.md`): the command refuses while a
Karpenter controller Deployment still has replicas (two controllers must never act on one node; `--force`
skips the check when the controller runs elsewhere), reads the NodeClaims, the NodePools and EC2NodeClasses
(merged with `--config` as the functions merge them), the claim table and the instances, and prints what it
would adopt and what it skips, with the reason. Without `--dry-run` it then carries the plan out through
`services.adoption.Adopter`: tag, record, label; no node is drained, tainted or replaced. Running it again
adopts nothing twice. Exit status: 0; 1 when a Karpenter controller is running; 2 for bad options or config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from longshore.cli.explain import cluster_options, kube_api_client, load_catalog_for
from longshore.cli.options import config_options

RUNNING_CONTROLLER_EXIT_CODE = 1


def running_karpenter_controllers(api: Any) -> list[str]:
    """Karpenter controller Deployments with replicas, as `namespace/name`."""
    from kubernetes import client

    found = client.AppsV1Api(api).list_deployment_for_all_namespaces(
        label_selector="app.kubernetes.io/name=karpenter"
    )
    named = client.AppsV1Api(api).list_deployment_for_all_namespaces(field_selector="metadata.name=karpenter")
    running = []
    for deployment in (*found.items, *named.items):
        key = f"{deployment.metadata.namespace}/{deployment.metadata.name}"
        if (deployment.spec.replicas or 0) > 0 and key not in running:
            running.append(key)
    return running


@click.command(name="adopt")
@config_options
@cluster_options
@click.option("--table", required=True, help="The DynamoDB claim table of the deployed stack.")
@click.option("--dry-run", is_flag=True, help="Show what would be adopted and change nothing.")
@click.option(
    "--force", is_flag=True, help="Adopt even though a Karpenter controller Deployment has replicas."
)
@click.option("--live", is_flag=True, help="Price from AWS instead of the shipped table.")
@click.option("--json", "as_json", is_flag=True, help="Print {adopted, skipped} as JSON.")
def command(
    config_paths: tuple[Path, ...],
    region: str,
    cluster_name: str,
    kubeconfig: Path | None,
    kube_context: str | None,
    server: str | None,
    token: str | None,
    table: str,
    dry_run: bool,
    force: bool,
    live: bool,
    as_json: bool,
) -> None:
    """Adopt the NodeClaims, instances and nodes of a cluster Karpenter ran (Karpenter scaled to zero)."""
    import boto3  # type: ignore[import-untyped]

    from longshore.adapters.aws.dynamodb import DynamoClaimStore, DynamoTable
    from longshore.adapters.aws.instances import Ec2Instances, Ec2InstanceTags
    from longshore.adapters.kube.karpenter import KubeKarpenterObjects
    from longshore.cli.status import live_config
    from longshore.services.adoption import Adopter

    api = kube_api_client(kubeconfig, kube_context, server, token)
    running = running_karpenter_controllers(api)
    if running and not force:
        click.secho(
            f"a Karpenter controller is running ({', '.join(running)}): scale it to zero first "
            "(kubectl scale deployment -n NAMESPACE karpenter --replicas=0), or pass --force",
            fg="red",
            err=True,
        )
        raise click.exceptions.Exit(RUNNING_CONTROLLER_EXIT_CODE)
    objects = KubeKarpenterObjects(api)
    config, _ = live_config(config_paths, region, cluster_name, objects)
    ec2 = boto3.client("ec2", region_name=config.region)
    instances = Ec2Instances(ec2, config.name)
    adopter = Adopter(
        objects=objects,
        store=DynamoClaimStore(DynamoTable(boto3.client("dynamodb", region_name=config.region), table)),
        instances=instances,
        tags=Ec2InstanceTags(ec2),
        config=config,
        catalog=lambda: load_catalog_for(config, live),
    )
    plan = adopter.plan()
    adopted = [a.claim.id for a in plan.adopt] if dry_run else list(adopter.apply(plan).adopted)
    if as_json:
        click.echo(
            json.dumps({"dry_run": dry_run, "adopted": adopted, "skipped": [list(s) for s in plan.skipped]})
        )
        return
    verb = "would adopt" if dry_run else "adopted"
    click.secho(f"{verb} {len(adopted)} node claim(s)", bold=True)
    for adoption in plan.adopt:
        claim = adoption.claim
        click.echo(
            f"  {claim.id}: {claim.instance_type} {claim.capacity_type} {claim.zone}, node {claim.node_name}, "
            f"instance {claim.instance_id}"
        )
    for name, reason in plan.skipped:
        click.echo(f"  skipped {name}: {reason}")
