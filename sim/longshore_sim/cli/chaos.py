"""`longshore chaos --seeds N [--seed S] [--report DIR] [--faults K,K] [--jobs J]`: randomised whole-system runs.

Each seed is a random scenario on the simulated cluster (`longshore_sim.chaos`), judged by every rule of the
simulation's checker. One line per failing seed names the seed (`--seed S` replays it); the last line is
`chaos: N seeds, V violations`, and the exit status is 1 when V is not 0.
"""

from __future__ import annotations

from pathlib import Path

import click

from longshore_sim import chaos


@click.command(name="chaos")
@click.option("--seeds", type=int, default=10, show_default=True, help="How many seeds to run (1..N).")
@click.option("--seed", "only", type=int, default=None, help="Run this one seed only (replay a failure).")
@click.option(
    "--report", type=click.Path(path_type=Path), default=None, help="Write failing seeds' scenarios here."
)
@click.option(
    "--faults",
    default=",".join(chaos.FAULT_KINDS),
    show_default=True,
    help="Comma-separated fault kinds to mix in.",
)
@click.option("--jobs", type=int, default=1, show_default=True, help="Seeds run at once (processes).")
def command(seeds: int, only: int | None, report: Path | None, faults: str, jobs: int) -> None:
    """Run randomised whole-system scenarios and report every broken rule."""
    kinds = [k.strip() for k in faults.split(",") if k.strip()]
    unknown = sorted(set(kinds) - set(chaos.FAULT_KINDS))
    if unknown:
        raise click.BadParameter(
            f"unknown fault kind(s) {', '.join(unknown)}; known: {', '.join(chaos.FAULT_KINDS)}"
        )
    chosen = [only] if only is not None else list(range(1, seeds + 1))
    results = chaos.run(chosen, kinds, report, click.echo, jobs=max(1, jobs))
    if any(r.problems for r in results):
        raise click.exceptions.Exit(1)
