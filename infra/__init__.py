"""Longshore's CDK infrastructure: one stack (or one construct) per EKS cluster.

Use `LongshoreStack` through app.py (`cdk deploy -c cluster=NAME`), or place `LongshoreCluster` in your own
CDK app. Module map: cluster.py wires the construct; functions.py, interruption.py, state_machines.py and
observability.py build its parts; iam.py holds the permissions, bundling.py the Lambda asset, naming.py the
physical names, settings.py the context values, config_source.py the config loading, nag.py the
acknowledged cdk-nag findings.
"""
