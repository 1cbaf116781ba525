"""`longshore demo` (what `make demo` runs): the seed scenario, end to end, on the simulated cluster.

Theory of operation: the demo is `longshore simulate seed-inflate` (the scenario ships inside `longshore_sim`) with nothing to configure:
the seed's `inflate` deployment scaled 0 -> 5 on the seed's requirements provisioner, with AWS emulated by moto
in-process and Kubernetes by the project's API emulator on 127.0.0.1, on virtual time. It shows the live
progress line, the summary table (first fleet request after the pods became unschedulable, pending-to-running
latency, cost against the fluid LP bound, violations) and where `summary.json` and `timeline.png` were
written (`reports/seed-inflate/` unless `--report` says otherwise). The exit status is 1 if one of the
scenario's expectations failed, so `make demo` doubles as a smoke test.
"""

from __future__ import annotations

from pathlib import Path

import click

from longshore_sim.cli.simulate import DEFAULT_REPORTS, console, run_and_report
from longshore_sim.scenario import BUNDLED, ScenarioError, load_scenario

SEED_SCENARIO = BUNDLED / "seed-inflate.yaml"


@click.command()
@click.option(
    "--scenario",
    "scenario_file",
    type=click.Path(path_type=Path),
    default=SEED_SCENARIO,
    show_default=True,
    help="The scenario to run.",
)
@click.option(
    "--report",
    "report_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to write the report (default: reports/<scenario name>/).",
)
def command(scenario_file: Path, report_dir: Path | None) -> None:
    """Run the seed scenario (inflate 0 -> 5) on the simulated cluster and print where the report went."""
    try:
        scenario = load_scenario(scenario_file)
    except ScenarioError as error:
        raise click.ClickException(str(error)) from None
    out = console()
    out.print(f"[bold]Longshore demo[/bold]: {scenario.name}: {scenario.description}")
    out.print("AWS is moto (in-process), Kubernetes is the API emulator on 127.0.0.1, time is virtual.")
    target = report_dir or DEFAULT_REPORTS / scenario.name
    summary = run_and_report(scenario, target, out)
    failed = [name for name, check in summary.get("checks", {}).items() if not check["ok"]]
    if failed:
        out.print(f"[red]demo: expectation(s) not met[/red]: {', '.join(failed)}")
        raise click.exceptions.Exit(1)
    out.print(f"[green]demo passed[/green]: open {target.resolve() / 'timeline.png'}")
