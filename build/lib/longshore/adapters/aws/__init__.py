"""AWS adapters (boto3): cluster access, networking, AMIs, user data, launch templates, fleets, instances, the store.

Theory of operation: every adapter takes its boto3 clients through its constructor (never creates them), so the
same code runs against AWS, against moto in-process, and against a ThreadedMotoServer, and so the simulation
can attach its fault injectors (`longshore_sim.aws`) to the very clients production code uses. Modules, one
concern each:

- `eks`              endpoint, CA and IAM bearer token; a configured kubernetes ApiClient
- `network`          subnets and security groups from selector terms; the subnet per zone
- `amis`             image ids from SSM public parameters or DescribeImages
- `userdata`         AL2 / AL2023 / Bottlerocket user data, rendered and read back
- `launch_templates` content-addressed launch templates and their garbage collection
- `fleet`            the Launcher: idempotent CreateFleet with capacity fallback
- `instances`        the instances we own (by tag) and their termination
- `dynamodb`         claim store, unavailable offerings and leases in one table
- `retry`            client retry configuration and bounded backoff on throttling
- `tags`             the tag names we write and read

(`instance_types`, `pricing`, `stepfunctions` and `lambda_trigger` belong to other areas; the node
lifecycle is a service, `longshore.services.lifecycle`, over these adapters.)
"""
