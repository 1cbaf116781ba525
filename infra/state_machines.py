"""The disruption and rotation state machines, from the one definition the workflow code owns.

Theory of operation: `longshore.workflow.definition` builds the Amazon States Language documents (tests
execute the same documents); this module only deploys them. The definitions receive ARNs as CDK tokens,
which `Stack.to_json_string` turns into `Fn::Join` so CloudFormation fills them in.

The state machines' own role gets exactly the integrations the definitions use: the module walks every
`Task` state (including those nested in Parallel branches and Map iterators) and grants what each
`Resource` needs. A resource it does not know fails the synth with the state's name, so a new integration
cannot ship without its permission being written down here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra import iam as policies

DisruptionDefinition = Callable[[str], dict[str, Any]]
RotationDefinition = Callable[[str, str], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class WorkflowDefinitions:
    """The two definition functions of docs/contracts.md (normally `longshore.workflow.definition`)."""

    disruption: DisruptionDefinition
    rotation: RotationDefinition

    @classmethod
    def from_workflow_package(cls) -> WorkflowDefinitions:
        from longshore.workflow import definition

        return cls(disruption=definition.disruption_definition, rotation=definition.rotation_definition)


class UnknownIntegration(ValueError):
    """A Task resource this module has no permission mapping for."""


def task_states(definition: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every state of type Task, with its path (`Drain`, `RotateEach/Iterator/Disrupt`...)."""
    for name, state in definition.get("States", {}).items():
        where = f"{path}{name}"
        if state.get("Type") == "Task":
            yield where, state
        for index, branch in enumerate(state.get("Branches", ())):
            yield from task_states(branch, f"{where}/Branches[{index}]/")
        for key in ("Iterator", "ItemProcessor"):
            if key in state:
                yield from task_states(state[key], f"{where}/{key}/")


class StateMachines(Construct):
    """Both state machines, with logging (ALL events) and X-Ray tracing."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        definitions: WorkflowDefinitions,
        steps_function: lambda_.IFunction,
        disruption_name: str,
        rotation_name: str,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        stack = cdk.Stack.of(self)
        disruption_arn = policies.state_machine_arn(stack, disruption_name)
        disruption_document = definitions.disruption(steps_function.function_arn)
        rotation_document = definitions.rotation(steps_function.function_arn, disruption_arn)
        self.disruption = self._state_machine(
            "Disruption", disruption_name, disruption_document, steps_function, log_retention, {}
        )
        self.rotation = self._state_machine(
            "Rotation",
            rotation_name,
            rotation_document,
            steps_function,
            log_retention,
            {disruption_arn: disruption_name},
        )
        self.rotation.node.add_dependency(self.disruption)

    def _state_machine(
        self,
        construct_id: str,
        name: str,
        document: dict[str, Any],
        steps_function: lambda_.IFunction,
        log_retention: logs.RetentionDays,
        startable: Mapping[str, str],
    ) -> sfn.StateMachine:
        stack = cdk.Stack.of(self)
        log_group = logs.LogGroup(
            self,
            f"{construct_id}Logs",
            log_group_name=f"/aws/vendedlogs/states/{name}",
            retention=log_retention,
            removal_policy=cdk.RemovalPolicy.DESTROY,
        )
        machine = sfn.StateMachine(
            self,
            construct_id,
            state_machine_name=name,
            state_machine_type=sfn.StateMachineType.STANDARD,
            definition_body=sfn.DefinitionBody.from_string(stack.to_json_string(document)),
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=True),
            tracing_enabled=True,
        )
        for statement in integration_statements(stack, name, document, steps_function, startable):
            machine.add_to_role_policy(statement)
        return machine


SYNC_SUFFIXES = (".sync:2", ".sync")
STEPS_INVOKE = ("arn:aws:states:::lambda:invoke", "arn:aws:states:::lambda:invoke.waitForTaskToken")
START_EXECUTION = "arn:aws:states:::states:startExecution"
SELF = "$$.StateMachine.Id"  # a machine that continues itself in a new execution (a drain chained past 20 h)


def integration_statements(
    stack: cdk.Stack,
    machine_name: str,
    document: Mapping[str, Any],
    steps_function: lambda_.IFunction,
    startable: Mapping[str, str],
) -> list[iam.PolicyStatement]:
    """The permissions the machine's Task states need, one statement per kind of integration.

    `startable` maps the ARNs (tokens) of the state machines this one may start to their names.
    """
    invokes_steps = False
    started: dict[str, str] = {}
    waits_for_sync = False
    starts_itself = False
    for where, state in task_states(document):
        resource = state.get("Resource")
        if resource in STEPS_INVOKE or _is_same_arn(resource, steps_function.function_arn):
            target = _parameter(state, "FunctionName") if resource in STEPS_INVOKE else resource
            if not _is_same_arn(target, steps_function.function_arn):
                raise UnknownIntegration(f"state machine {machine_name}: state {where} invokes {target!r}")
            invokes_steps = True
        elif isinstance(resource, str) and resource.startswith(START_EXECUTION):
            suffix = resource[len(START_EXECUTION) :]
            if suffix == "" and _parameter(state, "StateMachineArn.$") == SELF:
                starts_itself = True
                continue
            target = _parameter(state, "StateMachineArn")
            if suffix not in ("", *SYNC_SUFFIXES) or target not in startable:
                raise UnknownIntegration(
                    f"state machine {machine_name}: state {where} starts {target!r} with {resource!r}; "
                    "only this cluster's own state machines may be started"
                )
            started[target] = startable[target]
            waits_for_sync = waits_for_sync or bool(suffix)
        else:
            raise UnknownIntegration(
                f"state machine {machine_name}: state {where} uses {resource!r}, which infra/state_machines.py "
                "has no permission for; add it there"
            )
    statements: list[iam.PolicyStatement] = []
    if invokes_steps:
        statements.append(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[steps_function.function_arn, f"{steps_function.function_arn}:*"],
            )
        )
    if started:
        statements.append(iam.PolicyStatement(actions=["states:StartExecution"], resources=sorted(started)))
    if starts_itself:
        own = stack.format_arn(
            service="states",
            resource="stateMachine",
            resource_name=machine_name,
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        statements.append(iam.PolicyStatement(actions=["states:StartExecution"], resources=[own]))
    if started and waits_for_sync:
        statements.append(
            iam.PolicyStatement(
                actions=["states:DescribeExecution", "states:StopExecution"],
                resources=[policies.execution_arns(stack, name) for name in sorted(started.values())],
            )
        )
        statements.append(
            iam.PolicyStatement(
                actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"],
                resources=[
                    stack.format_arn(
                        service="events",
                        resource="rule",
                        resource_name="StepFunctionsGetEventsForStepFunctionsExecutionRule",
                    )
                ],
            )
        )
    return statements


def _parameter(state: Mapping[str, Any], key: str) -> Any:
    parameters = state.get("Parameters") or state.get("Arguments") or {}
    return parameters.get(key)


def _is_same_arn(value: object, arn: str) -> bool:
    """`value` is `arn`, or one of its versions/aliases (`arn:...:function:NAME:$LATEST`)."""
    return isinstance(value, str) and (value == arn or value.startswith(f"{arn}:"))
