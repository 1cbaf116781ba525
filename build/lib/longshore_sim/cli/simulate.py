"""`longshore simulate SCENARIO [--report DIR]`: run a scenario on the simulated cluster and write a report.

SCENARIO is a scenario file or the name of a shipped one (`longshore simulate nginx-to-scaleout`).

Theory of operation: the command loads the scenario (every mistake names file, field and value), runs it with
`sim.runner.ScenarioRunner` while a one-line live status (virtual time, nodes, pending and running pods, $/h,
fleet requests) is redrawn at most a few times a second, then prints the summary table and writes
`DIR/summary.json` and `DIR/timeline.png` (default `reports/<scenario name>/`). With `--check`, the exit status
is 1 when one of the scenario's `expect` checks failed. `render_summary` is shared with `longshore demo`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from longshore.config import ConfigErrors
from longshore_sim.runner import Progress, run_scenario
from longshore_sim.scenario import Scenario, ScenarioError, load_scenario

DEFAULT_REPORTS = Path("reports")


def console() -> Console:
    return Console(highlight=False, soft_wrap=False)


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{days}d " if days else "") + f"{hours:02d}:{minutes:02d}:{secs:02d}"


def progress_line(p: Progress) -> Text:
    return Text.assemble(
        ("simulating ", "bold"),
        f"{_clock(p.virtual_s)} / {_clock(p.duration_s)} virtual  ",
        (f"{p.nodes} nodes", "cyan"),
        "  ",
        (f"{p.pending} pending", "yellow" if p.pending else "dim"),
        "  ",
        (f"{p.running} running", "green"),
        f"  ${p.cost_per_hour:.4f}/h  {p.fleet_requests} fleet requests  {p.invocations} invocations  ",
        (f"{p.wall_s:.1f}s wall", "dim"),
    )


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, list):
        return (
            ", ".join(str(v) for v in value[:5]) + (f" (+{len(value) - 5})" if len(value) > 5 else "")
            or "none"
        )
    return str(value)


def summary_table(summary: dict[str, Any]) -> Table:
    table = Table(title=f"Scenario {summary['scenario']}", show_header=True, header_style="bold")
    table.add_column("measure")
    table.add_column("value", overflow="fold")
    pods = summary["pods"]
    rows = [
        ("virtual time", _clock(summary["virtual_seconds"])),
        ("wall time", f"{summary['wall_seconds']:.1f} s"),
        ("pods seen", _fmt(pods["total_seen"])),
        (
            "pending -> running p50 / p95",
            f"{_fmt(pods['pending_to_running_p50_s'])} s / {_fmt(pods['pending_to_running_p95_s'])} s",
        ),
        ("pods that never ran", _fmt(pods["never_ran"]) if pods["never_ran"] else "none"),
        ("first fleet request after pending", f"{_fmt(summary['first_fleet_request_after_pending_s'])} s"),
        ("fleet requests", _fmt(summary["fleet_requests"])),
        ("nodes launched / terminated", f"{summary['nodes_launched']} / {summary['nodes_terminated']}"),
        ("duplicate launches", _fmt(summary["duplicate_launches"])),
        ("cost per hour, final", f"${summary['cost_per_hour_final']:.4f}"),
        (
            "LP bound per hour (best)",
            "-"
            if summary["lp_bound_per_hour_final"] is None
            else f"${summary['lp_bound_per_hour_final']:.4f}",
        ),
        ("cost / bound", _fmt(summary.get("cost_ratio_final"))),
        ("violations", _fmt(summary["violations"]) if summary["violations"] else "none"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    for name, check in (summary.get("checks") or {}).items():
        mark = "[green]ok[/green]" if check["ok"] else "[red]FAILED[/red]"
        table.add_row(f"check {name}", f"{mark} (expected {check['expected']}, got {_fmt(check['actual'])})")
    return table


_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class _ExtrasFormatter(logging.Formatter):
    """`level logger: message key=value ...`, with the structured fields the services log as `extra`."""

    def format(self, record: logging.LogRecord) -> str:
        extras = " ".join(f"{k}={v}" for k, v in record.__dict__.items() if k not in _STANDARD)
        return f"{record.levelname:7s} {record.name}: {record.getMessage()}" + (
            f"  {extras}" if extras else ""
        )


@contextmanager
def provisioner_log(path: Path) -> Iterator[None]:
    """Send the system under test's log lines to `path` instead of the terminal."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(_ExtrasFormatter())
    root = logging.getLogger("longshore")
    previous = (root.level, root.propagate)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous[0])
        root.propagate = previous[1]
        handler.close()


def run_and_report(scenario: Scenario, report_dir: Path, out: Console) -> dict[str, Any]:
    """Run with a live progress line, print the summary table, write the report; returns the summary."""
    last = [0.0]
    with (
        provisioner_log(report_dir / "provisioner.log"),
        Live(
            Text("starting the simulated world (moto, the API emulator, the catalog)..."),
            console=out,
            refresh_per_second=8,
            transient=True,
        ) as live,
    ):

        def show(progress: Progress) -> None:
            now = time.perf_counter()
            if now - last[0] >= 0.12:
                last[0] = now
                live.update(progress_line(progress))

        result, _ = run_scenario(scenario, report_dir, progress=show)
    out.print(summary_table(result.summary))
    out.print(
        f"report: {report_dir / 'summary.json'} and {report_dir / 'timeline.png'} "
        f"(provisioner log: {report_dir / 'provisioner.log'})"
    )
    return result.summary


@click.command()
@click.argument("scenario_file", type=click.Path(path_type=Path), metavar="SCENARIO")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to write summary.json and timeline.png (default: reports/<scenario name>/).",
)
@click.option(
    "--check", is_flag=True, help="Exit with status 1 when one of the scenario's expect checks fails."
)
def command(scenario_file: Path, report_dir: Path | None, check: bool) -> None:
    """Run SCENARIO_FILE on the simulated cluster (moto + the Kubernetes API emulator, virtual time)."""
    try:
        scenario = load_scenario(scenario_file)
    except ScenarioError as error:
        raise click.ClickException(str(error)) from None
    out = console()
    try:
        summary = run_and_report(scenario, report_dir or DEFAULT_REPORTS / scenario.name, out)
    except ConfigErrors as errors:
        raise click.ClickException(
            f"{scenario_file}: the cluster configuration is invalid:\n{errors}"
        ) from None
    except ScenarioError as error:
        raise click.ClickException(str(error)) from None
    if check and not all(c["ok"] for c in summary.get("checks", {}).values()):
        raise click.exceptions.Exit(1)
