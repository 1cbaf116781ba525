"""One IAM role per function, granted exactly the actions its code calls (infra/permissions.py), and one EKS
access entry per role, mapped to that function's own Kubernetes group.

Two checks meet at the table `permissions.FUNCTION_ACTIONS`: the code's calls (tests/infra/calls.py) must
equal each entry, and each synthesised role must grant exactly its entry. A new boto3 call anywhere a
function can reach fails the first; a statement that grants more than the entry fails the second.
"""

from __future__ import annotations

import ast
from typing import Any

import pytest
from infra.naming import kubernetes_group
from infra.permissions import EVENT_SOURCE_ACTIONS, FUNCTION_ACTIONS, HANDLER_MODULES, with_implied

from tests.infra import calls
from tests.infra.conftest import Synthesis, resources

pytestmark = [pytest.mark.slow, pytest.mark.cdk]

PLUMBING_PREFIXES = ("logs:", "xray:")
"""Granted by CDK for every function's own log group and tracing, not by the table."""
PLUMBING_SIDS = ("LambdaVpc",)
"""Lambda's network interfaces in the configured subnets (VPC placement only), not a call of the code."""


@pytest.mark.slow
@pytest.mark.parametrize("function", sorted(FUNCTION_ACTIONS))
def test_the_table_lists_exactly_the_actions_the_code_calls(function: str) -> None:
    called = with_implied(calls.actions_called(HANDLER_MODULES[function]))

    assert called - FUNCTION_ACTIONS[function] == set(), f"{function} calls actions its role is not granted"
    assert FUNCTION_ACTIONS[function] - called == set(), f"{function} is granted actions its code never calls"


def _role_of(template: dict[str, Any], module: str) -> str:
    (role,) = {
        p["Role"]["Fn::GetAtt"][0]
        for p in resources(template, "AWS::Lambda::Function").values()
        if p["Handler"] == f"{module}.handler"
    }
    return role


def _granted(template: dict[str, Any], role: str) -> set[str]:
    actions: set[str] = set()
    for props in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role} not in props["Roles"]:
            continue
        for statement in props["PolicyDocument"]["Statement"]:
            if str(statement.get("Sid", "")).startswith(PLUMBING_SIDS):
                continue
            action = statement["Action"]
            actions |= {action} if isinstance(action, str) else set(action)
    return {a for a in actions if not a.startswith(PLUMBING_PREFIXES)}


@pytest.mark.slow
@pytest.mark.parametrize("stack", ["demo", "private"])
@pytest.mark.parametrize("function", sorted(FUNCTION_ACTIONS))
def test_each_role_grants_exactly_its_functions_actions(
    synthesis: Synthesis, stack: str, function: str
) -> None:
    template = getattr(synthesis, stack)

    granted = _granted(template, _role_of(template, HANDLER_MODULES[function]))

    assert granted == FUNCTION_ACTIONS[function] | EVENT_SOURCE_ACTIONS.get(function, frozenset())


@pytest.mark.parametrize("stack", ["demo", "private"])
def test_every_function_has_a_role_of_its_own(synthesis: Synthesis, stack: str) -> None:
    template = getattr(synthesis, stack)
    roles = [_role_of(template, module) for module in HANDLER_MODULES.values()]

    assert len(set(roles)) == len(HANDLER_MODULES)


def test_each_controller_role_has_its_own_access_entry_and_group(synthesis: Synthesis) -> None:
    entries = resources(synthesis.demo, "AWS::EKS::AccessEntry").values()
    mapped = {e["PrincipalArn"]["Fn::GetAtt"][0]: e["KubernetesGroups"] for e in entries}
    expected = {
        _role_of(synthesis.demo, HANDLER_MODULES[f]): [kubernetes_group(f)]
        for f in ("provisioner", "planner", "interruption", "steps")
    }

    assert mapped == expected
    assert resources(synthesis.private, "AWS::EKS::AccessEntry") == {}  # accessEntry=false


def test_the_scan_would_see_a_new_call() -> None:
    source = "def f(ec2_client):\n    ec2_client.describe_fleets()\n    ec2_client.get_paginator('describe_volumes')\n"
    operations = calls._operations([ast.parse(source)])

    assert {"describe_fleets", "describe_volumes"} <= operations
    index = calls._operation_index("ec2")
    assert (
        index["describe_fleets"] == "ec2:DescribeFleets"
        and index["describe_volumes"] == "ec2:DescribeVolumes"
    )
