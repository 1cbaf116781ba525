"""The `kubernetes` client (pinned 36.0.3) behind the `ports.kube` ports: `KubeCluster` and its retry policy."""
