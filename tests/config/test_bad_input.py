"""Each kind of bad input is rejected with an error naming file, document, field, value, line."""

from __future__ import annotations

from pathlib import Path

import pytest

from longshore.config import ConfigError, ConfigErrors, load_cluster, load_cluster_text

NODE_CLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiSelectorTerms:
    - alias: al2023@latest
  role: NodeRole
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: demo}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: demo}
"""


def nodepool(spec_extra: str = "", requirements: str = "", template_extra: str = "") -> str:
    return f"""apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements:
        - key: kubernetes.io/arch
          operator: In
          values: ["amd64"]
{requirements}{template_extra}{spec_extra}---{NODE_CLASS}"""


def provisioner(spec: str) -> str:
    return f"""apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata:
  name: default
spec:
  providerRef:
    name: default
{spec}---
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata:
  name: default
spec:
  subnetSelector: {{karpenter.sh/discovery: demo}}
  securityGroupSelector: {{karpenter.sh/discovery: demo}}
"""


def errors_of(text: str, source: str = "pools.yaml") -> tuple[ConfigError, ...]:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster_text(text, source)
    return caught.value.errors


def only_error(text: str) -> ConfigError:
    errors = errors_of(text)
    assert len(errors) == 1, "\n".join(map(str, errors))
    return errors[0]


def test_the_helpers_build_valid_documents() -> None:
    assert load_cluster_text(nodepool(), "x.yaml").pool("general").node_class == "default"
    assert load_cluster_text(provisioner(""), "x.yaml").pool("default").node_class == "default"


def test_error_string_names_file_line_document_field_and_message() -> None:
    error = only_error(provisioner("  label:\n    node-type: workernode\n"))
    assert (
        str(error)
        == "pools.yaml:8: Provisioner/default: spec.label: unknown field 'label' (did you mean 'labels'?)"
    )
    assert (error.file, error.line, error.document, error.path) == (
        "pools.yaml",
        8,
        "Provisioner/default",
        "spec.label",
    )
    assert error.value == {"node-type": "workernode"}


# --- file-level problems ------------------------------------------------------------------------------------


def test_invalid_yaml() -> None:
    error = only_error("apiVersion: karpenter.sh/v1\nkind: [NodePool\n")
    assert error.message.startswith("invalid YAML") and error.line == 3


def test_non_mapping_document() -> None:
    error = only_error("- apiVersion: karpenter.sh/v1\n- kind: NodePool\n")
    assert "a document must be a mapping" in error.message and "got a list" in error.message


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing but a comment\n")
    with pytest.raises(ConfigErrors) as caught:
        load_cluster([empty])
    assert [(e.file, e.message) for e in caught.value.errors] == [
        (str(empty), "the file is empty: it holds no YAML documents")
    ]


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigErrors) as caught:
        load_cluster([tmp_path / "nope.yaml"])
    assert caught.value.errors[0].message == "file not found"


def test_duplicate_yaml_key() -> None:
    error = only_error(provisioner("  weight: 5\n  weight: 6\n"))
    assert (error.message, error.line, error.document) == (
        "duplicate key 'weight' in the same mapping",
        9,
        "Provisioner/default",
    )


def test_unknown_kind_with_suggestion() -> None:
    error = only_error("apiVersion: karpenter.sh/v1\nkind: NodePol\nmetadata: {name: x}\n")
    assert error.path == "kind" and error.value == "NodePol"
    assert "unknown kind 'NodePol' (did you mean 'NodePool'?)" in error.message


def test_unknown_api_version() -> None:
    error = only_error("apiVersion: karpenter.sh/v2\nkind: NodePool\nmetadata: {name: x}\n")
    assert error.path == "apiVersion" and error.value == "karpenter.sh/v2"
    assert "use karpenter.sh/v1beta1 or karpenter.sh/v1" in error.message


def test_missing_kind() -> None:
    assert "no kind" in only_error("apiVersion: karpenter.sh/v1\nmetadata: {name: x}\n").message


def test_duplicate_pool_names_across_files(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(nodepool())
    second.write_text(nodepool().split("---")[0])
    with pytest.raises(ConfigErrors) as caught:
        load_cluster([first, second])
    (error,) = caught.value.errors
    assert (error.file, error.path, error.value) == (str(second), "metadata.name", "general")
    assert f"duplicate pool name 'general': NodePool/general at {first}:1" in error.message


def test_provisioner_and_nodepool_share_one_namespace_of_pool_names() -> None:
    text = nodepool() + "---\n" + provisioner("").replace("name: default\nspec", "name: general\nspec", 1)
    messages = [e.message for e in errors_of(text)]
    assert any("duplicate pool name 'general'" in m for m in messages)


# --- field rules --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("weight", [0, 101, -3])
def test_weight_outside_1_to_100(weight: int) -> None:
    for text, path in (
        (provisioner(f"  weight: {weight}\n"), "spec.weight"),
        (nodepool(spec_extra=f"  weight: {weight}\n"), "spec.weight"),
    ):
        error = only_error(text)
        assert (error.path, error.value) == (path, weight)
        assert error.message == f"weight {weight} is outside 1-100"


@pytest.mark.parametrize("operator", ["Gt", "Lt", "Gte", "Lte"])
@pytest.mark.parametrize("values", ['["-1"]', '["four"]', '["1", "2"]', "[]", '["1.5"]'])
def test_numeric_operators_need_one_non_negative_integer(operator: str, values: str) -> None:
    requirement = f"        - key: karpenter.k8s.aws/instance-cpu\n          operator: {operator}\n          values: {values}\n"
    error = only_error(nodepool(requirements=requirement))
    assert error.path == "spec.template.spec.requirements[1].values"
    assert f"operator {operator} needs exactly one value that is a non-negative integer" in error.message
    assert error.line == 15


def test_numeric_value_must_be_a_string_as_in_kubernetes() -> None:
    requirement = (
        "        - key: karpenter.k8s.aws/instance-cpu\n          operator: Gt\n          values: [4]\n"
    )
    error = only_error(nodepool(requirements=requirement))
    assert error.path == "spec.template.spec.requirements[1].values[0]"
    assert error.message == 'expected a string, got 4 (YAML reads 4 as an integer; quote it: "4")'


def test_unsupported_operator() -> None:
    requirement = "        - key: kubernetes.io/os\n          operator: Equals\n          values: [linux]\n"
    error = only_error(nodepool(requirements=requirement))
    assert error.path == "spec.template.spec.requirements[1].operator" and error.value == "Equals"
    assert "operator 'Equals' is not supported" in error.message and "Gte, Lte" in error.message


def test_gte_needs_v1() -> None:
    error = only_error(
        provisioner(
            "  requirements:\n    - {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['4']}\n"
        )
    )
    assert error.path == "spec.requirements[0].operator"
    assert "Gte and Lte need karpenter.sh/v1" in error.message


def test_in_without_values() -> None:
    requirement = "        - key: kubernetes.io/os\n          operator: In\n          values: []\n"
    error = only_error(nodepool(requirements=requirement))
    assert error.path == "spec.template.spec.requirements[1].values"
    assert error.message == "operator In needs at least one value (key 'kubernetes.io/os')"


def test_min_values_larger_than_values() -> None:
    requirement = (
        "        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large], minValues: 2}\n"
    )
    error = only_error(nodepool(requirements=requirement))
    assert error.path == "spec.template.spec.requirements[1].minValues"


@pytest.mark.parametrize(
    ("key", "domain"),
    [
        ("karpenter.sh/capacity-spread", "karpenter.sh"),
        ("karpenter.k8s.aws/team", "karpenter.k8s.aws"),
        ("x.karpenter.sh/y", "karpenter.sh"),
    ],
)
def test_restricted_label_domain_in_requirements_and_labels(key: str, domain: str) -> None:
    requirement = f"        - {{key: {key}, operator: Exists}}\n"
    error = only_error(nodepool(requirements=requirement))
    assert error.path == "spec.template.spec.requirements[1].key" and error.value == key
    assert f"restricted domain '{domain}'" in error.message
    labels = provisioner(f"  labels:\n    {key}: x\n")
    error = only_error(labels)
    assert error.path == f"spec.labels.{key}" and f"restricted domain '{domain}'" in error.message


def test_hostname_and_nodepool_labels_are_restricted() -> None:
    for key in ("kubernetes.io/hostname", "karpenter.sh/nodepool"):
        error = only_error(nodepool(requirements=f"        - {{key: {key}, operator: Exists}}\n"))
        assert "restricted" in error.message and error.value == key


def test_well_known_and_exempt_labels_are_allowed() -> None:
    requirements = (
        "        - {key: node.kubernetes.io/instance-type, operator: Exists}\n"
        "        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}\n"
        "        - {key: karpenter.k8s.aws/instance-family, operator: NotIn, values: [t2]}\n"
    )
    assert len(load_cluster_text(nodepool(requirements=requirements), "x").pool("general").requirements) == 4


@pytest.mark.parametrize("nodes", ['"101%"', '"ten"', '"-1"', '"10.5%"', "5"])
def test_budget_nodes_must_be_a_count_or_a_percentage_up_to_100(nodes: str) -> None:
    error = only_error(nodepool(spec_extra=f"  disruption:\n    budgets:\n      - nodes: {nodes}\n"))
    assert error.path == "spec.disruption.budgets[0].nodes"
    assert "nodes" in error.message


def test_budget_schedule_must_be_cron() -> None:
    budget = '  disruption:\n    budgets:\n      - {nodes: "0", schedule: "0 25 * * *", duration: 1h}\n'
    error = only_error(nodepool(spec_extra=budget))
    assert error.path == "spec.disruption.budgets[0].schedule" and error.value == "0 25 * * *"
    assert "is not a valid cron expression" in error.message and "25" in error.message


def test_budget_schedule_needs_a_duration() -> None:
    budget = '  disruption:\n    budgets:\n      - {nodes: "0", schedule: "@daily"}\n'
    error = only_error(nodepool(spec_extra=budget))
    assert error.path == "spec.disruption.budgets[0].duration"
    assert "a budget with a schedule also needs a duration" in error.message


def test_taint_effect() -> None:
    error = only_error(provisioner("  taints:\n    - {key: gpu, effect: NoSchedul}\n"))
    assert error.path == "spec.taints[0].effect" and error.value == "NoSchedul"
    assert error.message == (
        "taint effect 'NoSchedul' is not one of NoSchedule, PreferNoSchedule, NoExecute (did you mean 'NoSchedule'?)"
    )


def test_role_and_instance_profile_together() -> None:
    text = nodepool().replace("  role: NodeRole\n", "  role: NodeRole\n  instanceProfile: NodeProfile\n")
    error = only_error(text)
    assert (error.document, error.path, error.value) == (
        "EC2NodeClass/default",
        "spec.instanceProfile",
        "NodeProfile",
    )
    assert "role and instanceProfile cannot both be set" in error.message


def test_alias_combined_with_other_terms() -> None:
    text = nodepool().replace(
        "    - alias: al2023@latest\n", "    - alias: al2023@latest\n    - id: ami-123\n"
    )
    error = only_error(text)
    assert error.path == "spec.amiSelectorTerms[0].alias" and error.value == "al2023@latest"
    assert "alias AMI selector term cannot be combined with other amiSelectorTerms" in error.message


def test_alias_combined_with_other_fields_of_its_term() -> None:
    text = nodepool().replace(
        "    - alias: al2023@latest\n", "    - alias: al2023@latest\n      name: my-ami\n"
    )
    error = only_error(text)
    assert error.path == "spec.amiSelectorTerms[0].alias" and "cannot be combined" in error.message


def test_consolidation_with_ttl_seconds_after_empty() -> None:
    error = only_error(provisioner("  consolidation: {enabled: true}\n  ttlSecondsAfterEmpty: 30\n"))
    assert (error.path, error.value) == ("spec.ttlSecondsAfterEmpty", 30)
    assert "consolidation.enabled and ttlSecondsAfterEmpty cannot be used together" in error.message


def test_moved_field_gets_a_hint() -> None:
    error = only_error(nodepool(template_extra="      kubelet: {maxPods: 10}\n"))
    assert error.message == (
        "unknown field 'kubelet' (in karpenter.sh/v1 the kubelet settings moved to EC2NodeClass spec.kubelet)"
    )


def test_wrong_types_say_what_was_expected() -> None:
    error = only_error(provisioner("  weight: heavy\n"))
    assert error.message == "expected an integer, got 'heavy'"


# --- references and reporting -------------------------------------------------------------------------------


def test_references_resolve_across_files(tmp_path: Path) -> None:
    pools, classes = tmp_path / "pools.yaml", tmp_path / "classes.yaml"
    pools.write_text(nodepool().split("---")[0])
    classes.write_text(NODE_CLASS)
    assert (
        load_cluster([pools, classes]).node_class_of(load_cluster([pools, classes]).pool("general")).role
        == "NodeRole"
    )
    with pytest.raises(ConfigErrors) as caught:
        load_cluster([pools])
    (error,) = caught.value.errors
    assert error.path == "spec.template.spec.nodeClassRef.name" and error.value == "default"
    assert "nodeClassRef names EC2NodeClass 'default', which is not defined" in error.message


def test_reference_to_the_wrong_kind_of_class() -> None:
    text = provisioner("").split("---")[0] + "---" + NODE_CLASS
    error = only_error(text)
    assert "which is a EC2NodeClass" in error.message and "refers to a AWSNodeTemplate" in error.message


def test_all_errors_are_reported_at_once_across_files_and_nothing_loads(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text(provisioner("  weight: 500\n  label: {a: b}\n"))
    second.write_text(nodepool(spec_extra="  weight: 0\n").replace("NoSchedule", "x"))
    with pytest.raises(ConfigErrors) as caught:
        load_cluster([first, second])
    found = {(e.file, e.path) for e in caught.value.errors}
    assert found == {
        (str(first), "spec.weight"),
        (str(first), "spec.label"),
        (str(second), "spec.weight"),
        (str(second), "metadata.name"),  # EC2NodeClass/default clashes with AWSNodeTemplate/default
    }
    assert str(caught.value).startswith("4 configuration errors:\n")


def test_several_rule_violations_of_one_object_are_all_reported() -> None:
    text = (
        nodepool()
        .replace("  role: NodeRole\n", "  role: NodeRole\n  instanceProfile: P\n")
        .replace("  subnetSelectorTerms:\n    - tags: {karpenter.sh/discovery: demo}\n", "")
    )
    paths = {e.path for e in errors_of(text)}
    assert paths == {"spec.subnetSelectorTerms", "spec.instanceProfile"}
