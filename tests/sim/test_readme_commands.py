"""Every README command that needs a cluster, run as written against `longshore sandbox` (issue #15).

The commands are read from README.md itself, so a README edit that breaks one breaks this test:
- the bash block that starts with `longshore sandbox &`: each line runs in order, through bash, in a scratch
  folder (the sandbox itself in the background, `export` sets the environment of the lines after it, the kubectl
  lines as typed; `kubectl get ... -w` watches until interrupted, so it is stopped once a `web` pod shows
  Running in its output);
- every line of a bash block that starts with `longshore explain|rotate|status|plan|event`;
- every table row whose first cell is such a command's synopsis: `[...]` is optional, `(a | b)` a choice; the
  test runs every expansion when there are at most 4, else a covering set (every choice and every optional
  both ways, at least once);
- every inline `longshore explain|rotate|status|plan|event ARGS...` span in the prose (with arguments).

Only placeholders are substituted (`PLACEHOLDERS` below: the cluster file, the kubeconfig and its context, a
node, a pod, a label selector, an event file, a claims file, and the example node names `ip-10-0-*.ec2.internal`).
Paths are relative to the repository root: the scratch folder links `clusters/` and `tests/` to the repository's.
An expansion is not run when it needs AWS, which the sandbox keeps in-process (moto): `--table` (DynamoDB),
`rotate` without `--dry-run` (Step Functions); nor the `plan --pods` form, which reads files, not a cluster.
Each command must exit 0 and print the line its `EXPECT` pattern describes.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
KUBECTL = shutil.which("kubectl")
LONGSHORE = Path(sys.executable).parent / "longshore"
RUN = ("explain", "rotate", "status", "plan", "event")
CONTEXT = "longshore-sandbox"  # the context `longshore sandbox` writes into its kubeconfig
EXAMPLE_NODE = re.compile(r"^ip-10-0-[0-9]+-[0-9]+\.ec2\.internal$")

pytestmark = [  # one xdist group with tests/sim/test_sandbox.py: never two wall-paced sandboxes at once
    pytest.mark.xdist_group("sandbox"),
    pytest.mark.slow,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed"),
    pytest.mark.skipif(not LONGSHORE.exists(), reason="the longshore command is not installed"),
]

# A run passes when its exit status is 0 and one output line matches (JSON output: the parsed check).
EXPECT: dict[str, str] = {
    "explain": r"^(node|pod) \S+: [a-z-]+$",
    "rotate": r"^(dry run: nothing started|no node matches; nothing to rotate)$",
    "status": r"^cluster demo: \$[0-9.]+/h now$",
    "plan": r"^(no new nodes|[0-9]+ new node\(s\), \$[0-9.]+ per hour)$",
    "event": r"^  action: interrupt: ",
}
JSON_EXPECT: dict[str, Callable[[Any], bool]] = {
    "explain": lambda d: d["kind"] in ("node", "pod") and bool(d["verdict"]),
    "status": lambda d: d["cluster"] == "demo" and "launch" in d,
    "plan": lambda d: isinstance(d["nodeclaims"], list),
    "event": lambda d: d[0]["action"] == "interrupt",
}


# -- reading the README ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    where: str  # README.md:LINE and how it was read
    tokens: tuple[str, ...]

    @property
    def verb(self) -> str:
        return self.tokens[1]


def _blocks(lines: list[str]) -> Iterator[tuple[int, list[str]]]:
    """(first line number, lines) of each fenced bash block."""
    start: int | None = None
    body: list[str] = []
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if start is None and stripped == "```bash":
            start, body = number + 1, []
        elif start is not None and stripped == "```":
            yield start, body
            start = None
        elif start is not None:
            body.append(line)


def _strip_comment(line: str) -> str:
    return re.sub(r"\s+#.*$", "", line.strip())


def _parse(tokens: list[str]) -> list[tuple[list[str], frozenset[tuple[int, int]]]]:
    """Every expansion of a synopsis, with the (group, choice) pairs it took; see the module docstring."""
    position = 0
    groups = 0

    def sequence() -> list[tuple[list[str], frozenset[tuple[int, int]]]]:
        nonlocal position
        results: list[tuple[list[str], frozenset[tuple[int, int]]]] = [([], frozenset())]
        while position < len(tokens) and tokens[position] not in ("|", ")", "]"):
            token = tokens[position]
            position += 1
            if token in ("(", "["):
                options = alternatives(optional=token == "[")
                position += 1  # the closing bracket
            else:
                options = [([token], frozenset())]
            results = [(a + b, ca | cb) for a, ca in results for b, cb in options]
        return results

    def alternatives(optional: bool) -> list[tuple[list[str], frozenset[tuple[int, int]]]]:
        nonlocal position, groups
        group = groups
        groups += 1
        choices = [sequence()]
        while position < len(tokens) and tokens[position] == "|":
            position += 1
            choices.append(sequence())
        if optional:
            choices.insert(0, [([], frozenset())])
        return [(t, c | {(group, index)}) for index, choice in enumerate(choices) for t, c in choice]

    return sequence()


def _runnable(tokens: list[str]) -> bool:
    """Whether the sandbox can run it (see the module docstring for what is left out, and why)."""
    if "--table" in tokens:
        return False
    if tokens[1] == "rotate" and "--dry-run" not in tokens:
        return False
    return not (tokens[1] == "plan" and "--pods" in tokens)


def _covering(synopsis: str) -> list[list[str]]:
    spaced = re.sub(r"([()\[\]])", r" \1 ", synopsis.replace("\\|", "|"))
    expansions = [(t, c) for t, c in _parse(spaced.split()) if _runnable(t)]
    if len(expansions) <= 4:  # few enough to run every one
        return [t for t, _ in expansions]
    wanted = set().union(*(c for _, c in expansions)) if expansions else set()
    chosen: list[list[str]] = []
    while wanted:
        tokens, covered = max(expansions, key=lambda e: len(e[1] & wanted))
        chosen.append(tokens)
        wanted -= covered
    return chosen or [t for t, _ in expansions[:1]]


def readme_commands() -> tuple[list[str], list[Command]]:
    """The sandbox block's lines, and every `longshore` command this test runs against the sandbox."""
    lines = README.read_text().splitlines()
    sandbox: list[str] = []
    commands: list[Command] = []
    fenced: set[int] = set()
    for start, body in _blocks(lines):
        fenced.update(range(start - 1, start + len(body) + 1))
        code = [_strip_comment(line) for line in body]
        if code and code[0].startswith("longshore sandbox"):
            sandbox = [line for line in code if line]
            continue
        for offset, line in enumerate(code):
            words = shlex.split(line) if line.startswith("longshore ") else []
            if len(words) > 1 and words[0] == "longshore" and words[1] in RUN and _runnable(words):
                commands.append(Command(f"README.md:{start + offset} (block)", tuple(words)))
    for number, line in enumerate(lines, 1):
        if number in fenced:
            continue
        row = re.match(r"^\| `(longshore (\w+) [^`]*)` \|", line)
        if row and row.group(2) in RUN:
            for index, tokens in enumerate(_covering(row.group(1))):
                commands.append(Command(f"README.md:{number} (table, expansion {index + 1})", tuple(tokens)))
            continue
        for span in re.findall(r"`(longshore (?:" + "|".join(RUN) + r") [^`]+)`", line):
            if line.startswith(f"| `{span}`"):
                continue
            commands.append(Command(f"README.md:{number} (prose)", tuple(shlex.split(span))))
    return sandbox, commands


SANDBOX_BLOCK, COMMANDS = readme_commands()


def test_the_readme_has_the_commands_this_test_runs() -> None:
    # the extraction found what the README documents: a change that hides a command from it fails here
    assert (
        SANDBOX_BLOCK and SANDBOX_BLOCK[0].startswith("longshore sandbox") and SANDBOX_BLOCK[0].endswith("&")
    )
    assert any(line.startswith("export KUBECONFIG=") for line in SANDBOX_BLOCK)
    assert sum(line.startswith("kubectl ") for line in SANDBOX_BLOCK) >= 3
    assert {c.verb for c in COMMANDS} == set(RUN)
    assert any("--kubeconfig" in c.tokens for c in COMMANDS if c.verb == "status")
    assert any("--kubeconfig" in c.tokens for c in COMMANDS if c.verb == "plan")
    assert any("--cluster" in c.tokens for c in COMMANDS if c.verb == "event")
    assert any("--what-if-removed" in c.tokens for c in COMMANDS if c.verb == "explain")
    assert {t for c in COMMANDS if c.verb == "rotate" for t in c.tokens} >= {
        "--node",
        "--selector",
        "--drifted",
        "--older-than",
    }


# -- the sandbox, started by the README's own lines ----------------------------------------------------------


@dataclass
class Sandbox:
    workdir: Path
    env: dict[str, str]
    node: str = ""
    pod: str = ""
    claims: Path | None = None

    def kubectl(self, *args: str) -> str:
        done = subprocess.run(
            [KUBECTL or "kubectl", *args], env=self.env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done.stdout

    def bash(self, line: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", line],
            cwd=self.workdir,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _wait(what: str, check: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(1)
    raise AssertionError(f"not within {seconds:.0f} s: {what}")


def _watch_until_running(box: Sandbox, line: str) -> str:
    """A `kubectl get ... -w` line: watch until a web pod shows Running, then stop it (as Ctrl-C would)."""
    watch = subprocess.Popen(
        ["bash", "-c", line],
        cwd=box.workdir,
        env=box.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    seen: list[str] = []
    timer = threading.Timer(120, os.killpg, (watch.pid, signal.SIGINT))  # a watch that never shows it
    timer.start()
    try:
        assert watch.stdout is not None
        for output in watch.stdout:
            seen.append(output)
            if re.match(r"^(pod/)?web-\S+\s+1/1\s+Running", output):
                break
    finally:
        timer.cancel()
        if watch.poll() is None:
            os.killpg(watch.pid, signal.SIGINT)
        watch.wait(10)
    return "".join(seen)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    workdir = tmp_path_factory.mktemp("readme")
    for linked in ("clusters", "tests"):
        (workdir / linked).symlink_to(ROOT / linked)
    env = {**os.environ, "HOME": str(workdir), "PATH": f"{LONGSHORE.parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("KUBECONFIG", None)
    box = Sandbox(workdir, env)
    background: subprocess.Popen[str] | None = None
    log = workdir / "sandbox.log"
    try:
        for line in SANDBOX_BLOCK:
            if line.endswith("&"):  # `longshore sandbox &`: started here, stopped at the end with Ctrl-C
                background = subprocess.Popen(
                    ["bash", "-c", f"exec {line[:-1].strip()}"],
                    cwd=workdir,
                    env=env,
                    stdout=log.open("w"),
                    stderr=subprocess.STDOUT,
                    text=True,
                    start_new_session=True,
                )
                _wait("the sandbox says it is ready", lambda: "sandbox ready" in log.read_text(), 90)
            elif line.startswith("export "):
                name = line.split()[1].split("=", 1)[0]
                done = box.bash(f'{line}; printf %s "${name}"')
                assert done.returncode == 0, done.stderr
                env[name] = done.stdout
            elif line.split()[-1] == "-w":
                assert "Running" in _watch_until_running(box, line), f"{line}: no web pod Running"
            else:
                done = box.bash(line)
                assert done.returncode == 0, f"{line}: {done.stderr}"
                assert done.stdout.strip(), f"{line}: printed nothing"
        assert "KUBECONFIG" in env and Path(env["KUBECONFIG"]).is_file()
        _wait(
            "the README's three web pods run, each node with its NodeClaim",
            lambda: (
                box.kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].status.phase}").split()
                == ["Running"] * 3
                and 0
                < len(box.kubectl("get", "nodes", "-o", "name").split())
                == len(box.kubectl("get", "nodeclaims", "-o", "name").split())
            ),
            90,
        )
        box.node = box.kubectl("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}")
        box.pod = "default/" + box.kubectl(
            "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}"
        )
        box.claims = _claims_file(box)
        yield box
    finally:
        if background is not None:
            os.killpg(background.pid, signal.SIGINT)
            try:
                background.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(background.pid, signal.SIGKILL)
                background.wait(10)


def _claims_file(box: Sandbox) -> Path:
    """The placeholder F: the sandbox's NodeClaims as the claim store keeps them."""
    from longshore.adapters.aws.dynamodb import claim_to_doc
    from longshore.core.karpenter_objects import claim_from_nodeclaim

    objects = json.loads(box.kubectl("get", "nodeclaims", "-o", "json"))["items"]
    claims = [c for c in map(claim_from_nodeclaim, objects) if c is not None]
    assert claims
    path = box.workdir / "claims.json"
    path.write_text(json.dumps([json.loads(claim_to_doc(c)) for c in claims]))
    return path


def _substitute(tokens: tuple[str, ...], box: Sandbox) -> list[str]:
    """The placeholders, and nothing else (see the module docstring)."""
    assert box.claims is not None
    placeholders = {
        "C": "clusters/demo.yaml",
        "K": box.env["KUBECONFIG"],
        "X": CONTEXT,
        "NODE": box.node,
        "N": box.node,
        "POD": box.pod,
        "L": "karpenter.sh/nodepool=general",
        "FILE": "tests/events/spot-interruption-warning.json",
        "F": str(box.claims),
    }
    out = [str(LONGSHORE)]
    for token in tokens[1:]:
        bare = token.removesuffix("...")
        out.append(box.node if EXAMPLE_NODE.match(bare) else placeholders.get(bare, bare))
    return out


@pytest.mark.parametrize("command", COMMANDS, ids=[f"{c.where} {' '.join(c.tokens)}" for c in COMMANDS])
def test_a_readme_command_works_against_the_sandbox(sandbox: Sandbox, command: Command) -> None:
    argv = _substitute(command.tokens, sandbox)
    done = subprocess.run(
        argv, cwd=sandbox.workdir, env=sandbox.env, capture_output=True, text=True, timeout=90
    )
    shown = f"{command.where}: {' '.join(argv)}\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, shown
    if "--json" in command.tokens:
        assert JSON_EXPECT[command.verb](json.loads(done.stdout)), shown
    else:
        assert any(re.search(EXPECT[command.verb], line) for line in done.stdout.splitlines()), shown
