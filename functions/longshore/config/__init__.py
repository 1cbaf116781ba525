"""Configuration at the edge: YAML cluster configs and Karpenter manifests, validated and normalised."""
