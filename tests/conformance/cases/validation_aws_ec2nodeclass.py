"""EC2NodeClass validation, after aws/karpenter-provider-aws `pkg/apis/v1/ec2nodeclass_validation_cel_test.go`
(v1.14.1). One case per `It`/`Entry`; inputs an `It` loops over are separate cases (`title [input]`).
Update-only tests (immutability on update) have no counterpart: Longshore loads whole documents.
"""

from __future__ import annotations

from itertools import permutations

from tests.conformance.model import AWS, Source
from tests.conformance.validation import DELETE, accept, reject

SRC = Source(AWS, "pkg/apis/v1/ec2nodeclass_validation_cel_test.go")
NC = "nodeclass"
S = "spec"
FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025")
AMI_ID = [{"id": "ami-0123456789abcdef"}]
K = f"{S}.kubelet"
M = f"{S}.metadataOptions"
B = f"{S}.blockDeviceMappings"
N = f"{S}.networkInterfaces"
C = f"{S}.connectionTracking"
SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
ALL_SIGNALS = dict(zip(SIGNALS, ("5%", "10%", "15%", "5%", "5%", "5%"), strict=True))
ALL_GRACE = dict(zip(SIGNALS, ("1m", "1m30s", "5m", "1h", "24h", "1m"), strict=True))


def _bdm(device: str, size: str, root: bool | None = None) -> dict[str, object]:
    mapping: dict[str, object] = {"deviceName": device, "ebs": {"volumeSize": size}}
    if root is not None:
        mapping["rootVolume"] = root
    return mapping


def _ni(card: int, device: int, kind: str) -> dict[str, object]:
    return {"networkCardIndex": card, "deviceIndex": device, "interfaceType": kind}


TAGS = {"foo": "bar"}


def ok(it: str, changes: dict[str, object], **marks: object) -> object:
    return accept(SRC, it, changes, target=NC, **marks)


def bad(it: str, changes: dict[str, object], field: str, value: object = None, **marks: object) -> object:
    if value is None:
        return reject(SRC, it, changes, field, target=NC, **marks)
    return reject(SRC, it, changes, field, value, target=NC, **marks)


def _terms(name: str, title: str, extra: dict[str, object]) -> list[object]:
    """The shared selector-term cases of subnets, security groups, AMIs and capacity reservations."""
    path = f"{S}.{name}"
    return [
        bad(f"{title}: should fail when a {title} selector term has no values", {path: [{}]}, path),
        bad(
            f"{title}: should fail when a {title} selector term has no tag map values",
            {path: [{"tags": {}}]},
            path,
        ),
        bad(
            f"{title}: should fail when a {title} selector term has a tag map key that is empty",
            {path: [{"tags": {"": "bar"}}]},
            path,
        ),
        bad(
            f"{title}: should fail when a {title} selector term has a tag map value that is empty",
            {path: [{"tags": {"foo": ""}}]},
            path,
        ),
        bad(
            f"{title}: should fail when the last {title} selector is invalid",
            {path: [{"tags": TAGS}, {"tags": {"": "x"}}]},
            f"{path}[1]",
        ),
        bad(
            f"{title}: should fail when specifying id with tags",
            {path: [{**extra, "tags": TAGS}]},
            f"{path}[0]",
        ),
    ]


CASES = [
    ok("should succeed if just specifying role", {}),
    ok(
        "should succeed if just specifying instance profile",
        {f"{S}.role": DELETE, f"{S}.instanceProfile": "ip"},
    ),
    bad(
        "should fail if specifying both instance profile and role",
        {f"{S}.instanceProfile": "ip"},
        f"{S}.instanceProfile",
        "ip",
    ),
    bad("should fail if not specifying one of instance profile and role", {f"{S}.role": DELETE}, f"{S}.role"),
    ok("UserData: should succeed if user data is empty", {f"{S}.userData": ""}),
    *(
        ok(
            f"should succeed with valid families [{family}]",
            {f"{S}.amiSelectorTerms": AMI_ID, f"{S}.amiFamily": family},
        )
        for family in (*FAMILIES, "Custom")
    ),
    bad(
        "should fail with the ubuntu family",
        {f"{S}.amiSelectorTerms": AMI_ID, f"{S}.amiFamily": "Ubuntu"},
        f"{S}.amiFamily",
        "Ubuntu",
    ),
    *(
        ok(
            f"should succeed when the amiFamily matches amiSelectorTerms[].alias [{family}]",
            {f"{S}.amiSelectorTerms": [{"alias": f"{family.lower()}@latest"}], f"{S}.amiFamily": family},
        )
        for family in FAMILIES
    ),
    *(
        ok(
            f"should succeed when the amiFamily is custom with amiSelectorTerms[].alias [{family.lower()}@latest]",
            {f"{S}.amiSelectorTerms": [{"alias": f"{family.lower()}@latest"}], f"{S}.amiFamily": "Custom"},
        )
        for family in FAMILIES
    ),
    *(
        bad(
            f"should fail when then amiFamily does not match amiSelectorTerms[].alias [{family} with {other.lower()}@latest]",
            {f"{S}.amiSelectorTerms": [{"alias": f"{other.lower()}@latest"}], f"{S}.amiFamily": family},
            f"{S}.amiFamily",
            family,
        )
        for family, other in permutations(("AL2", "AL2023", "Bottlerocket"), 2)
    ),
    bad(
        "should fail when neither amiFamily nor an alias are specified",
        {f"{S}.amiSelectorTerms": [{"id": "ami-01234567890abcdef"}]},
        f"{S}.amiFamily",
    ),
    # --- Tags -----------------------------------------------------------------------------------------------
    ok("should succeed when tags are empty", {f"{S}.tags": {}}),
    ok(
        "should succeed if tags aren't in restricted tag keys",
        {f"{S}.tags": {"karpenter.sh/custom-key": "value", "kubernetes.io/role/key": "value"}},
    ),
    *(
        bad(
            f"should fail if tags contain a restricted domain key [{key}]",
            {f"{S}.tags": {key: "value"}},
            f"{S}.tags",
            key,
        )
        for key in (
            "karpenter.sh/nodepool",
            "kubernetes.io/cluster/test",
            "eks:eks-cluster-name",
            "karpenter.k8s.aws/ec2nodeclass",
            "karpenter.sh/nodeclaim",
        )
    ),
    # --- SubnetSelectorTerms ----------------------------------------------------------------------------------
    ok(
        "should succeed with a valid subnet selector on tags",
        {f"{S}.subnetSelectorTerms": [{"tags": {"test": "x"}}]},
    ),
    ok(
        "should succeed with a valid subnet selector on id",
        {f"{S}.subnetSelectorTerms": [{"id": "subnet-12345749"}]},
    ),
    bad(
        "should fail when subnet selector terms is set to nil",
        {f"{S}.subnetSelectorTerms": DELETE},
        f"{S}.subnetSelectorTerms",
    ),
    bad(
        "should fail when no subnet selector terms exist",
        {f"{S}.subnetSelectorTerms": []},
        f"{S}.subnetSelectorTerms",
    ),
    *_terms("subnetSelectorTerms", "subnet", {"id": "subnet-12345749"}),
    # --- SecurityGroupSelectorTerms ---------------------------------------------------------------------------
    ok(
        "should succeed with a valid security group selector on tags",
        {f"{S}.securityGroupSelectorTerms": [{"tags": TAGS}]},
    ),
    ok(
        "should succeed with a valid security group selector on id",
        {f"{S}.securityGroupSelectorTerms": [{"id": "sg-12345749"}]},
    ),
    ok(
        "should succeed with a valid security group selector on name",
        {f"{S}.securityGroupSelectorTerms": [{"name": "testname"}]},
    ),
    bad(
        "should fail when security group selector terms is set to nil",
        {f"{S}.securityGroupSelectorTerms": DELETE},
        f"{S}.securityGroupSelectorTerms",
    ),
    bad(
        "should fail when no security group selector terms exist",
        {f"{S}.securityGroupSelectorTerms": []},
        f"{S}.securityGroupSelectorTerms",
    ),
    *_terms("securityGroupSelectorTerms", "security group", {"id": "sg-12345749"}),
    bad(
        "should fail when specifying id with name",
        {f"{S}.securityGroupSelectorTerms": [{"id": "sg-12345749", "name": "my-sg"}]},
        f"{S}.securityGroupSelectorTerms[0]",
    ),
    bad(
        "should fail when specifying name with tags",
        {f"{S}.securityGroupSelectorTerms": [{"name": "my-sg", "tags": TAGS}]},
        f"{S}.securityGroupSelectorTerms[0].name",
        "my-sg",
    ),
    # --- CapacityReservationSelectorTerms ---------------------------------------------------------------------
    ok(
        "should succeed with a valid capacity reservation selector on tags",
        {f"{S}.capacityReservationSelectorTerms": [{"tags": TAGS}]},
    ),
    ok(
        "should succeed with a valid capacity reservation selector on id",
        {f"{S}.capacityReservationSelectorTerms": [{"id": "cr-12345749"}]},
    ),
    ok(
        "should succeed for a valid ownerID",
        {f"{S}.capacityReservationSelectorTerms": [{"ownerID": "012345678901", "tags": TAGS}]},
    ),
    bad(
        "should fail with a capacity reservation selector on a malformed id",
        {f"{S}.capacityReservationSelectorTerms": [{"id": "r-12345749"}]},
        f"{S}.capacityReservationSelectorTerms[0].id",
        "r-12345749",
    ),
    ok(
        "should succeed when capacity group selector terms is set to nil",
        {f"{S}.capacityReservationSelectorTerms": DELETE},
    ),
    *_terms("capacityReservationSelectorTerms", "capacity reservation", {"id": "cr-12345749"})[:5],
    bad(
        "should fail when specifying id with tags in a single term",
        {f"{S}.capacityReservationSelectorTerms": [{"id": "cr-12345749", "tags": TAGS}]},
        f"{S}.capacityReservationSelectorTerms[0]",
    ),
    bad(
        "should fail when specifying id with ownerID in a single term",
        {f"{S}.capacityReservationSelectorTerms": [{"id": "cr-12345749", "ownerID": "012345678901"}]},
        f"{S}.capacityReservationSelectorTerms[0]",
    ),
    bad(
        "should fail when the ownerID is malformed",
        {f"{S}.capacityReservationSelectorTerms": [{"ownerID": "01234567890", "tags": TAGS}]},
        f"{S}.capacityReservationSelectorTerms[0].ownerID",
        "01234567890",
    ),
    bad(
        "should fail when the ownerID is set by itself",
        {f"{S}.capacityReservationSelectorTerms": [{"ownerID": "012345678901"}]},
        f"{S}.capacityReservationSelectorTerms[0]",
    ),
    *(
        ok(
            f"should succeed with a valid instanceMatchCriteria '{criteria}'",
            {f"{S}.capacityReservationSelectorTerms": [{"instanceMatchCriteria": criteria}]},
        )
        for criteria in ("open", "targeted")
    ),
    ok(
        "should succeed with instanceMatchCriteria combined with tags",
        {f"{S}.capacityReservationSelectorTerms": [{"instanceMatchCriteria": "open", "tags": TAGS}]},
    ),
    ok(
        "should succeed with instanceMatchCriteria combined with ownerID and tags",
        {
            f"{S}.capacityReservationSelectorTerms": [
                {"instanceMatchCriteria": "targeted", "ownerID": "012345678901", "tags": TAGS}
            ]
        },
    ),
    bad(
        "should fail with invalid instanceMatchCriteria value",
        {f"{S}.capacityReservationSelectorTerms": [{"instanceMatchCriteria": "invalid"}]},
        f"{S}.capacityReservationSelectorTerms[0].instanceMatchCriteria",
        "invalid",
    ),
    bad(
        "should fail when specifying id with instanceMatchCriteria",
        {f"{S}.capacityReservationSelectorTerms": [{"id": "cr-12345749", "instanceMatchCriteria": "open"}]},
        f"{S}.capacityReservationSelectorTerms[0]",
    ),
    # --- AMISelectorTerms -------------------------------------------------------------------------------------
    ok(
        "should succeed with a valid ami selector on alias",
        {f"{S}.amiSelectorTerms": [{"alias": "al2023@latest"}]},
    ),
    *(
        ok(
            f"should succeed with a valid ami selector on {name}",
            {f"{S}.amiSelectorTerms": [term], f"{S}.amiFamily": "AL2023"},
        )
        for name, term in (
            ("tags", {"tags": TAGS}),
            ("id", {"id": "ami-12345749"}),
            ("name", {"name": "testname"}),
            ("name and owner", {"name": "testname", "owner": "testowner"}),
        )
    ),
    ok(
        "should succeed when an ami selector term has an owner key with tags",
        {f"{S}.amiSelectorTerms": [{"owner": "testowner", "tags": TAGS}], f"{S}.amiFamily": "AL2023"},
    ),
    *_terms("amiSelectorTerms", "ami", {"id": "ami-12345749"})[:5],
    *(
        bad(
            f"should fail when specifying id with other fields [{name}]",
            {f"{S}.amiSelectorTerms": [{"id": "ami-1234749", **term}], f"{S}.amiFamily": "AL2023"},
            f"{S}.amiSelectorTerms[0]",
        )
        for name, term in (
            ("tags", {"tags": TAGS}),
            ("name", {"name": "my-custom-ami"}),
            ("owner", {"owner": "123456789"}),
        )
    ),
    *(
        bad(
            f"should fail when specifying alias with other fields [{name}]",
            {f"{S}.amiSelectorTerms": [{"alias": "al2023@latest", **term}]},
            f"{S}.amiSelectorTerms[0]",
        )
        for name, term in (
            ("id", {"id": "ami-1234749"}),
            ("tags", {"tags": TAGS}),
            ("name", {"name": "my-custom-ami"}),
            ("owner", {"owner": "123456789"}),
        )
    ),
    bad(
        "should fail when specifying alias with other terms",
        {f"{S}.amiSelectorTerms": [{"alias": "al2023@latest"}, {"tags": TAGS}]},
        f"{S}.amiSelectorTerms[0].alias",
        "al2023@latest",
    ),
    *(
        ok(f"should succeed for valid aliases [{alias}]", {f"{S}.amiSelectorTerms": [{"alias": alias}]})
        for alias in (
            "al2@latest",
            "al2@v20240625",
            "al2023@latest",
            "al2023@v20240625",
            "bottlerocket@latest",
            "bottlerocket@1.10.0",
            "windows2019@latest",
            "windows2022@latest",
            "windows2025@latest",
        )
    ),
    *(
        bad(
            f"should fail for incorrectly formatted aliases [{alias}]",
            {f"{S}.amiSelectorTerms": [{"alias": alias}]},
            f"{S}.amiSelectorTerms[0].alias",
            alias,
        )
        for alias in ("@latest", "al2023", "al2023@", "al2023-latest")
    ),
    bad(
        "should fail for an alias with an invalid family",
        {f"{S}.amiSelectorTerms": [{"alias": "ubuntu@latest"}]},
        f"{S}.amiSelectorTerms[0].alias",
        "ubuntu",
    ),
    *(
        bad(
            f"should fail when specifying non-latest versions with Windows aliases [{alias}]",
            {f"{S}.amiSelectorTerms": [{"alias": alias}]},
            f"{S}.amiSelectorTerms[0].alias",
            alias,
        )
        for alias in ("windows2019@v1.0.0", "windows2022@v1.0.0", "windows2025@v1.0.0")
    ),
    # --- Kubelet --------------------------------------------------------------------------------------------
    *(
        bad(
            f"should fail on {field} with invalid keys",
            {f"{K}.{field}": {"pods": "2"}},
            f"{K}.{field}",
            "pods",
        )
        for field in ("kubeReserved", "systemReserved")
    ),
    *(
        ok(f"should succeed on {field} with valid keys", {K: {field: ALL_SIGNALS, **grace}})
        for field, grace in (
            ("evictionHard", {}),
            ("evictionSoft", {"evictionSoftGracePeriod": ALL_GRACE}),
        )
    ),
    ok(
        "should succeed on evictionSoftGracePeriod with valid keys",
        {K: {"evictionSoft": ALL_SIGNALS, "evictionSoftGracePeriod": ALL_GRACE}},
    ),
    *(
        bad(
            f"should fail on {title} in {field}",
            {
                K: {
                    field: {signal: threshold},
                    **({"evictionSoftGracePeriod": {signal: "1m"}} if field == "evictionSoft" else {}),
                }
            },
            f"{K}.{field}",
            threshold if signal != "memory" else signal,
        )
        for field in ("evictionHard", "evictionSoft")
        for title, signal, threshold in (
            ("invalid keys", "memory", "5%"),
            ("invalid formatted percentage value", "memory.available", "5%3"),
            ("invalid percentage value (too large)", "memory.available", "110%"),
            ("invalid quantity value", "memory.available", "110GB"),
        )
    ),
    bad(
        "should fail when eviction soft doesn't have matching grace period",
        {K: {"evictionSoft": {"memory.available": "200Mi"}}},
        f"{K}.evictionSoft",
        "memory.available",
    ),
    ok("should succeed on a valid imageGCHighThresholdPercent", {K: {"imageGCHighThresholdPercent": 10}}),
    *(
        bad(
            title,
            {K: {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}},
            f"{K}.imageGCHighThresholdPercent",
            50,
        )
        for title in (
            "should fail when imageGCHighThresholdPercent is less than imageGCLowThresholdPercent",
            "should fail when imageGCLowThresholdPercent is greather than imageGCHighThresheldPercent",
        )
    ),
    bad(
        "should fail on evictionSoftGracePeriod with invalid keys",
        {K: {"evictionSoftGracePeriod": {"memory": "1m"}}},
        f"{K}.evictionSoftGracePeriod",
        "memory",
    ),
    bad(
        "should fail when eviction soft grace period doesn't have matching threshold",
        {K: {"evictionSoftGracePeriod": {"memory.available": "1m"}}},
        f"{K}.evictionSoftGracePeriod",
        "memory.available",
    ),
    # --- MetadataOptions --------------------------------------------------------------------------------------
    ok(
        "MetadataOptions: should succeed for valid inputs",
        {
            M: {
                "httpEndpoint": "disabled",
                "httpProtocolIPv6": "enabled",
                "httpPutResponseHopLimit": 34,
                "httpTokens": "optional",
            }
        },
    ),
    *(
        bad(f"should fail for invalid for {title}", {f"{M}.{field}": value}, f"{M}.{field}", value)
        for title, field, value in (
            ("HTTPEndpoint", "httpEndpoint", "test"),
            ("HTTPProtocolIPv6", "httpProtocolIPv6", "test"),
            ("HTTPPutResponseHopLimit", "httpPutResponseHopLimit", -5),
            ("HTTPTokens", "httpTokens", "test"),
        )
    ),
    # --- BlockDeviceMappings ----------------------------------------------------------------------------------
    ok(
        "should succeed if more than one root volume is specified",
        {B: [_bdm("/dev/xvda", "500G", root=False), _bdm("/dev/xvdb", "50T", root=True)]},
    ),
    ok("should succeed for valid VolumeSize in G", {B: [_bdm("/dev/xvda", "58G")]}),
    ok("should succeed for valid VolumeSize in T", {B: [_bdm("/dev/xvda", "45T")]}),
    bad(
        "should fail if more than one root volume is specified",
        {B: [_bdm("/dev/xvda", "50G", root=True), _bdm("/dev/xvdb", "50G", root=True)]},
        f"{B}[1].rootVolume",
    ),
    bad(
        "should fail VolumeSize is less then 1Gi/1G",
        {B: [_bdm("/dev/xvda", "1m")]},
        f"{B}[0].ebs.volumeSize",
        "1m",
    ),
    bad(
        "should fail VolumeSize is greater then 64T",
        {B: [_bdm("/dev/xvda", "100T")]},
        f"{B}[0].ebs.volumeSize",
        "100T",
    ),
    bad(
        "should fail for VolumeSize that do not parse into quantity values",
        {B: [_bdm("/dev/xvda", "")]},
        f"{B}[0].ebs.volumeSize",
    ),
    bad(
        "should fail if VolumeInitializationRate set but SnapshotID not specified",
        {B: [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": "20Gi", "volumeInitializationRate": 100}}]},
        f"{B}[0].ebs.volumeInitializationRate",
        100,
    ),
    *(
        bad(
            f"should fail if VolumeInitializationRate too {title}",
            {
                B: [
                    {
                        "deviceName": "/dev/xvda",
                        "ebs": {"snapshotID": "snap-1", "volumeInitializationRate": rate},
                    }
                ]
            },
            f"{B}[0].ebs.volumeInitializationRate",
            rate,
        )
        for title, rate in (("low", 99), ("high", 888))
    ),
    # --- NetworkInterfaces ------------------------------------------------------------------------------------
    ok(
        "should succeed with valid multiple network interfaces",
        {N: [_ni(0, 0, "interface"), _ni(0, 1, "efa-only"), _ni(1, 0, "efa-only")]},
    ),
    ok("should succeed when network interfaces is empty", {N: []}),
    bad(
        "should fail with an invalid interface type", {N: [_ni(0, 0, "efa")]}, f"{N}[0].interfaceType", "efa"
    ),
    bad(
        "should fail with a negative NetworkCardIndex",
        {N: [_ni(0, 0, "interface"), _ni(-1, 1, "efa-only")]},
        f"{N}[1].networkCardIndex",
        -1,
    ),
    bad(
        "should fail with a negative DeviceIndex",
        {N: [_ni(0, 0, "interface"), _ni(1, -1, "efa-only")]},
        f"{N}[1].deviceIndex",
        -1,
    ),
    bad(
        "should fail with duplicate Network Interface and Device Index fields",
        {N: [_ni(0, 0, "interface"), _ni(1, 0, "efa-only"), _ni(1, 0, "interface")]},
        f"{N}[2].deviceIndex",
    ),
    bad("should fail with no primary network interface", {N: [_ni(1, 0, "efa-only")]}, N),
    bad("should fail when primary network interface is not ENA", {N: [_ni(0, 0, "efa-only")]}, N),
    bad(
        "should fail when multiple EFA devices on one network card",
        {N: [_ni(0, 0, "interface"), _ni(1, 0, "efa-only"), _ni(1, 1, "efa-only")]},
        f"{N}[2].interfaceType",
        "efa-only",
    ),
    # --- ConnectionTracking -----------------------------------------------------------------------------------
    bad("should fail when connectionTracking is specified with no fields set", {C: {}}, C),
    *(
        ok(f"should succeed with valid {field}", {C: {field: value}})
        for field, value in (("tcpEstablishedTimeout", 3600), ("udpStreamTimeout", 120), ("udpTimeout", 45))
    ),
    ok(
        "should succeed with all valid connection tracking settings",
        {C: {"tcpEstablishedTimeout": 3600, "udpStreamTimeout": 120, "udpTimeout": 45}},
    ),
    *(
        bad(f"should fail when {field} is {title}", {C: {field: value}}, f"{C}.{field}", value)
        for field, title, value in (
            ("tcpEstablishedTimeout", "below minimum (60s)", 59),
            ("tcpEstablishedTimeout", "above maximum (432000s)", 432001),
            ("udpStreamTimeout", "below minimum (60s)", 59),
            ("udpStreamTimeout", "above maximum (180s)", 181),
            ("udpTimeout", "below minimum (30s)", 29),
            ("udpTimeout", "above maximum (60s)", 61),
        )
    ),
    bad(
        "connectionTracking timeouts are whole seconds (CRD type int32), not durations",
        {C: {"tcpEstablishedTimeout": "350s"}},
        f"{C}.tcpEstablishedTimeout",
        "350s",
    ),
    # --- Role / CPUOptions ------------------------------------------------------------------------------------
    bad("should fail if role is not defined", {f"{S}.role": ""}, f"{S}.role", ""),
    ok("should succeed when updating the role", {f"{S}.role": "test-role"}),
    *(
        ok(
            f"should succeed with nestedVirtualization {value}",
            {f"{S}.cpuOptions": {"nestedVirtualization": value}},
        )
        for value in ("enabled", "disabled")
    ),
    bad(
        "should fail with invalid nestedVirtualization value",
        {f"{S}.cpuOptions": {"nestedVirtualization": "invalid"}},
        f"{S}.cpuOptions.nestedVirtualization",
        "invalid",
    ),
    ok("should succeed with empty CPUOptions", {f"{S}.cpuOptions": {}}),
    bad(
        "cpuOptions takes only nestedVirtualization (Karpenter has no coreCount)",
        {f"{S}.cpuOptions": {"coreCount": 2}},
        f"{S}.cpuOptions.coreCount",
    ),
    # --- list sizes the CRD bounds (aws pkg/apis/v1/ec2nodeclass.go MaxItems markers) ---------------------------
    bad(
        "CRD MaxItems: blockDeviceMappings allows at most 50",
        {B: [_bdm(f"/dev/xvd{i}", "1Gi") for i in range(51)]},
        B,
        51,
    ),
    bad(
        "CRD MaxItems: networkInterfaces allows at most 150",
        {N: [_ni(0, 0, "interface"), *(_ni(1 + i // 10, i % 10, "interface") for i in range(150))]},
        N,
        151,
    ),
    bad(
        "CRD MaxItems: capacityReservationSelectorTerms allows at most 30",
        {f"{S}.capacityReservationSelectorTerms": [{"id": f"cr-{i}"} for i in range(31)]},
        f"{S}.capacityReservationSelectorTerms",
        31,
    ),
    bad(
        "CRD MaxItems: subnetSelectorTerms allows at most 30",
        {f"{S}.subnetSelectorTerms": [{"id": f"subnet-{i}"} for i in range(31)]},
        f"{S}.subnetSelectorTerms",
        "31",
    ),
]
