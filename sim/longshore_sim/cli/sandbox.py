"""`longshore sandbox [--kubeconfig PATH] [--speed X]`: a local cluster to point kubectl at, until Ctrl-C.

Theory of operation: `longshore_sim.sandbox.SandboxRunner` starts the simulated world (moto, the API emulator,
the functions on their schedules and the admission webhook, the workflows) from a scenario (`sandbox` by
default: the example cluster `clusters/demo.yaml`, nothing running), writes a kubeconfig for the emulator and
paces virtual time to the wall clock times `--speed`. Then `kubectl apply` a Deployment and watch nodes appear.
"""

from __future__ import annotations

import threading
from pathlib import Path

import click

from longshore_sim.sandbox import SandboxRunner
from longshore_sim.scenario import ScenarioError, load_scenario

DEFAULT_KUBECONFIG = Path("longshore-sandbox.kubeconfig")


@click.command(name="sandbox")
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path),
    default=DEFAULT_KUBECONFIG,
    show_default=True,
    help="Where to write the kubeconfig for the sandbox.",
)
@click.option("--speed", type=float, default=1.0, show_default=True, help="Virtual seconds per wall second.")
@click.option(
    "--scenario", "scenario_name", default="sandbox", show_default=True, help="Scenario to start from."
)
def command(kubeconfig: Path, speed: float, scenario_name: str) -> None:
    """Run the simulated cluster in the foreground for kubectl (Ctrl-C stops it)."""
    if speed <= 0:
        raise click.BadParameter(f"must be positive, got {speed}", param_hint="--speed")
    try:
        scenario = load_scenario(scenario_name)
    except ScenarioError as error:
        raise click.ClickException(str(error)) from None
    stop = threading.Event()

    def ready(world: object) -> None:
        click.echo(f"sandbox ready: export KUBECONFIG={kubeconfig.resolve()}")
        click.echo("  kubectl get nodepools,nodeclaims,nodes; kubectl apply -f your-deployment.yaml")
        click.echo(f"virtual time runs at {speed:g}x the wall clock; Ctrl-C stops the sandbox")

    runner = SandboxRunner(scenario, kubeconfig=kubeconfig, speed=speed, stop=stop, on_ready=ready)
    try:
        runner.run()
    except KeyboardInterrupt:
        stop.set()
    click.echo("sandbox stopped")
