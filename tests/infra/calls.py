"""The AWS API calls each Lambda function's code can make, read from the code (no AWS, no synth).

Theory of operation: a function's reachable code is its handler module plus the `longshore.*` modules it
imports (at module level or inside functions), transitively, with one exception: `wiring.runtime.Runtime`
builds every adapter lazily, so importing it says nothing. For the runtime, only the members the handler
actually uses (`wiring.<member>`) count, plus the members those use (`self.<member>`), plus the modules
those members import. In that reachable code:

- the boto3 clients a function creates are the constant service names passed to `.client("svc")` /
  `.lazy_client("svc")`;
- the operations it calls are the attributes used on receivers named after a service or `*client*`
  (`ec2.describe_instances`, `self._client.invoke`) and the names handed to `get_paginator`; Powertools'
  `parameters.SSMProvider` counts as `ssm:GetParameter`;
- an operation becomes an IAM action through botocore's service models, looked up only in the services the
  function has a client for.

This over-approximates at module granularity (a module's calls count if any of its code is reachable),
which is the safe side: a new boto3 call anywhere a function can reach shows up as a new action.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import botocore  # type: ignore[import-untyped]
import botocore.session  # type: ignore[import-untyped]

PACKAGE = Path(__file__).resolve().parents[2] / "functions" / "longshore"
RUNTIME_MODULE = "longshore.wiring.runtime"
WIRING_NAMES = {"wiring"}
CLIENT_RECEIVERS = {
    "ec2", "ssm", "eks", "sqs", "sfn", "states", "stepfunctions", "lambda", "lambda_", "dynamodb", "ddb",
    "pricing", "parameters", "iam", "sts", "secrets", "secretsmanager", "invoke",
}  # fmt: skip
IAM_NAME = {"lambda:Invoke": "lambda:InvokeFunction"}
NOT_IAM = {"sts:GetCallerIdentity"}  # the EKS token is a presigned GetCallerIdentity: no permission needed
POWERTOOLS_SSM = "SSMProvider"


def module_path(module: str) -> Path | None:
    relative = Path(*module.split(".")[1:])
    for candidate in (PACKAGE / relative.with_suffix(".py"), PACKAGE / relative / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _tree(module: str) -> ast.Module | None:
    path = module_path(module)
    return ast.parse(path.read_text(), str(path)) if path else None


Unit = tuple[str, str]  # (module, "" for the whole module or the name of one of its top-level classes)


def _imports(node: ast.AST, module: str) -> set[Unit]:
    """What `node` imports from `longshore.*`: a class imported by name is a unit of its own (its methods are
    all that can run); anything else (a module, a function, a constant) pulls in its whole module."""
    found: set[Unit] = set()
    package = module.rsplit(".", 1)[0]
    for child in ast.walk(node):
        if isinstance(child, ast.Import):
            found |= {
                (a.name, "") for a in child.names if a.name.startswith("longshore") and module_path(a.name)
            }
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - child.level + 1], base]).strip(".")
            if not base.startswith("longshore") or not module_path(base):
                continue
            for alias in child.names:
                if module_path(f"{base}.{alias.name}"):
                    found.add((f"{base}.{alias.name}", ""))
                elif alias.name in _classes(base):
                    found.add((base, alias.name))
                else:
                    found.add((base, ""))
    return found


@cache
def _classes(module: str) -> dict[str, ast.ClassDef]:
    tree = _tree(module)
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)} if tree else {}


def _unit_nodes(unit: Unit) -> list[ast.AST]:
    """A whole module, or one class plus the module-level functions and classes it names (transitively)."""
    module, name = unit
    tree = _tree(module)
    if tree is None:
        return []
    if not name:
        return [tree]
    top = {
        n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    chosen, todo = {name}, [name]
    while todo:
        for child in ast.walk(top[todo.pop()]):
            if isinstance(child, ast.Name) and child.id in top and child.id not in chosen:
                chosen.add(child.id)
                todo.append(child.id)
    return [top[n] for n in sorted(chosen)]


def _runtime_members() -> dict[str, ast.FunctionDef]:
    (runtime,) = [c for n, c in _classes(RUNTIME_MODULE).items() if n == "Runtime"]
    return {n.name: n for n in runtime.body if isinstance(n, ast.FunctionDef)}


def _attributes_on(node: ast.AST, names: set[str]) -> set[str]:
    return {
        child.attr
        for child in ast.walk(node)
        if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name) and child.value.id in names
    }


def reachable(handler: str) -> list[ast.AST]:
    """The code a handler module can run: module and class bodies, and the runtime members it uses."""
    members = _runtime_members()
    seen: set[Unit] = set()
    nodes: list[ast.AST] = []
    used: set[str] = set()
    todo: list[Unit] = [(handler, "")]
    while todo:
        unit = todo.pop()
        if unit in seen or unit[0] == RUNTIME_MODULE:
            continue
        seen.add(unit)
        tree = _tree(unit[0])
        if tree is None:
            continue
        unit_nodes = _unit_nodes(unit)
        nodes += unit_nodes
        top_level_imports = ast.Module(
            body=[n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        )
        todo += _imports(top_level_imports, unit[0])
        for node in unit_nodes:
            todo += _imports(node, unit[0])
            used |= _attributes_on(node, WIRING_NAMES) & members.keys()
        for name in _close_members(used, members):
            if ("@runtime", name) not in seen:
                seen.add(("@runtime", name))
                nodes.append(members[name])
                todo += _imports(members[name], RUNTIME_MODULE)
    return nodes


def _close_members(used: set[str], members: dict[str, ast.FunctionDef]) -> set[str]:
    closed, todo = set(used), list(used)
    while todo:
        for more in _attributes_on(members[todo.pop()], {"self"}) & members.keys():
            if more not in closed:
                closed.add(more)
                todo.append(more)
    return closed


def _services(nodes: Iterable[ast.AST]) -> set[str]:
    found: set[str] = set()
    for node in nodes:
        for child in ast.walk(node):
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in ("client", "lazy_client")
                and child.args
                and isinstance(child.args[0], ast.Constant)
                and isinstance(child.args[0].value, str)
            ):
                found.add(child.args[0].value)
    return found


def _receiver(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr.strip("_").lower()
    if isinstance(node, ast.Name):
        return node.id.strip("_").lower()
    return ""


def _operations(nodes: Iterable[ast.AST]) -> set[str]:
    found: set[str] = set()
    for node in nodes:
        for child in ast.walk(node):
            if isinstance(child, ast.Attribute):
                receiver = _receiver(child.value)
                if receiver in CLIENT_RECEIVERS or "client" in receiver:
                    found.add(child.attr)
                if child.attr == POWERTOOLS_SSM:
                    found.add("get_parameter")
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr == "get_paginator"
                and child.args
                and isinstance(child.args[0], ast.Constant)
            ):
                found.add(str(child.args[0].value))
    return found


@cache
def _operation_index(service: str) -> dict[str, str]:
    """snake_case client method -> IAM action, for one boto3 service."""
    model = botocore.session.get_session().get_service_model(service)
    prefix = model.metadata.get("signingName") or model.endpoint_prefix
    return {
        botocore.xform_name(operation): IAM_NAME.get(f"{prefix}:{operation}", f"{prefix}:{operation}")
        for operation in model.operation_names
    }


def actions_called(handler: str) -> frozenset[str]:
    """The IAM actions of every AWS call the handler module's reachable code can make."""
    nodes = reachable(handler)
    services = _services(nodes)
    operations = _operations(nodes)
    actions = {
        index[operation]
        for service in services
        for index in [_operation_index(service)]
        for operation in operations
        if operation in index
    }
    return frozenset(actions - NOT_IAM)
