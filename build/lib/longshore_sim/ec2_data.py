"""`python -m longshore_sim.ec2_data`: regenerate the EC2 instance data the product ships as package data.

The product's offline catalog (`longshore catalog`, `plan`, `explain` without `--live`; the tests and the
benchmark) needs EC2's instance shapes and zone offerings without any AWS call and without moto, which is a
simulation dependency. This module copies them out of the installed moto (which ships them as captured from
EC2's DescribeInstanceTypes / DescribeInstanceTypeOfferings) into `longshore/data/ec2/`, with zone ids from
moto's DescribeAvailabilityZones, and records the provenance (moto version and a SHA-256 per file) in
`PROVENANCE.json`. `tests/adapters/test_ec2_data.py` fails when the shipped files differ from the pinned
moto's, so a moto upgrade cannot leave stale data behind unnoticed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import longshore

TARGET = Path(longshore.__file__).resolve().parent / "data" / "ec2"


def _moto_file(*parts: str) -> bytes:
    with resources.files("moto").joinpath("ec2", "resources", *parts).open("rb") as handle:
        return gzip.decompress(handle.read())


def _regions() -> list[str]:
    folder = resources.files("moto").joinpath(
        "ec2", "resources", "instance_type_offerings", "availability-zone"
    )
    return sorted(
        entry.name.removesuffix(".json.gz") for entry in folder.iterdir() if entry.name.endswith(".gz")
    )


def _zone_ids(regions: list[str]) -> dict[str, dict[str, str]]:
    os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
    import boto3
    from moto import mock_aws

    zones: dict[str, dict[str, str]] = {}
    with mock_aws():
        for region in regions:
            answer = boto3.client("ec2", region_name=region).describe_availability_zones()
            zones[region] = {z["ZoneName"]: z["ZoneId"] for z in answer["AvailabilityZones"]}
    return zones


def expected_files() -> dict[str, bytes]:
    """Every shipped file (relative path -> uncompressed bytes), as the installed moto gives them now."""
    regions = _regions()
    files = {"instance_types.json": _moto_file("instance_types.json.gz")}
    for region in regions:
        files[f"offerings/{region}.json"] = _moto_file(
            "instance_type_offerings", "availability-zone", f"{region}.json.gz"
        )
    files["zones.json"] = json.dumps(_zone_ids(regions), sort_keys=True, indent=1).encode()
    return files


def provenance(files: dict[str, bytes]) -> dict[str, Any]:
    return {
        "source": "moto (ec2/resources), captured by moto from EC2 DescribeInstanceTypes/Offerings",
        "moto_version": metadata.version("moto"),
        "generator": "python -m longshore_sim.ec2_data",
        "sha256": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())},
    }


def write(target: Path = TARGET) -> int:
    files = expected_files()
    for name, data in files.items():
        path = target / f"{name}.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(data, mtime=0))
    (target / "PROVENANCE.json").write_text(json.dumps(provenance(files), indent=1, sort_keys=True) + "\n")
    return len(files)


if __name__ == "__main__":
    count = write(Path(sys.argv[1]) if len(sys.argv) > 1 else TARGET)
    print(f"wrote {count} files under {TARGET}")
