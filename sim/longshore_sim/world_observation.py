"""The simulation's own observation of its world: instances read from moto's EC2 backend in process, their
prices from the catalog, and the launch and termination observers hooked on the functions' EC2 client (a part
of `world.SimulatedWorld`).

Rules: this is the simulation looking, not the product's I/O: reading moto's backend costs no botocore request
and gives the same answer as DescribeInstances with the same filters (`live_instances` is that call, for
comparison). An instance type or offering the catalog does not hold has no price (`None`; 0 for a live
instance).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from longshore.core.catalog import Catalog
from longshore.core.model import ClusterConfig
from longshore_sim.clock import VirtualClock


class WorldObservation:
    """Instances, prices and EC2 call observers of `SimulatedWorld`."""

    config: ClusterConfig
    clock: VirtualClock
    catalog: Catalog
    ec2_reader: Any
    fleet_request_times: list[float]
    launch_observers: list[Callable[[dict[str, Any]], None]]
    terminate_observers: list[Callable[[list[str]], None]]

    def _ec2_backend(self) -> Any:
        from moto.ec2.models import ec2_backends

        from longshore_sim.aws import ACCOUNT_ID

        return ec2_backends[ACCOUNT_ID][self.config.region]

    def live_instance_ids(self, tag: str = "longshore.io/cluster", value: str | None = None) -> list[str]:
        """Ids of the pending and running instances tagged `tag=value` (default: the cluster's), read from
        moto's EC2 backend in process: the simulation's own observation (the runner's quiet-world check and
        launch observer), not the product's I/O, so it costs no botocore request and no response
        serialisation. Same answer as DescribeInstances with those filters (`live_instances`)."""
        backend = self._ec2_backend()
        tags = backend.tags
        wanted = self.config.name if value is None else value
        return [
            instance.id
            for reservation in backend.reservations.values()
            for instance in reservation.instances
            if instance.state in ("pending", "running") and tags.get(instance.id, {}).get(tag) == wanted
        ]

    def observed_instance(self, instance_id: str) -> dict[str, Any]:
        """What the runner's launch observer reads of an instance (id, type, lifecycle, zone, tags), in
        DescribeInstances' shape, from moto's EC2 backend in process (see `live_instance_ids`)."""
        backend = self._ec2_backend()
        instance = backend.get_instance(instance_id)
        found: dict[str, Any] = {
            "InstanceId": instance.id,
            "InstanceType": instance.instance_type,
            "Placement": {"AvailabilityZone": instance.placement.zone},
            "Tags": [{"Key": k, "Value": v} for k, v in backend.tags.get(instance.id, {}).items()],
        }
        if instance.lifecycle:
            found["InstanceLifecycle"] = instance.lifecycle
        return found

    def live_instances(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        paginator = self.ec2_reader.get_paginator("describe_instances")
        for page in paginator.paginate(
            Filters=[
                {"Name": "tag:longshore.io/cluster", "Values": [self.config.name]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        ):
            for reservation in page["Reservations"]:
                found.extend(reservation["Instances"])
        return found

    def price_of_instance(self, instance: dict[str, Any]) -> float:
        capacity_type = "spot" if instance.get("InstanceLifecycle") == "spot" else "on-demand"
        zone = str((instance.get("Placement") or {}).get("AvailabilityZone", ""))
        return self._price_of(str(instance.get("InstanceType")), zone, capacity_type) or 0.0

    def _price_of(self, instance_type: str, zone: str, capacity_type: str) -> float | None:
        found = self.catalog.get(instance_type)
        if found is None:
            return None
        return next(
            (o.price for o in found.offerings if o.zone == zone and o.capacity_type == capacity_type), None
        )

    def _on_fleet_request(self, **_: Any) -> None:
        self.fleet_request_times.append(self.clock.now())

    def _on_fleet_answer(self, parsed: dict[str, Any], **_: Any) -> None:
        for observer in self.launch_observers:
            observer(parsed)

    def _on_terminate(self, parsed: dict[str, Any], **_: Any) -> None:
        ids = [str(i["InstanceId"]) for i in parsed.get("TerminatingInstances") or []]
        for observer in self.terminate_observers:
            observer(ids)


def launched_instance_ids(parsed: dict[str, Any]) -> Iterable[str]:
    """Instance ids in a CreateFleet answer."""
    for entry in parsed.get("Instances") or []:
        yield from (str(i) for i in entry.get("InstanceIds") or [])
