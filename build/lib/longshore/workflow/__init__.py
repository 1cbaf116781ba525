"""The disruption and rotation workflows: the Step Functions definitions and their plain-Python steps."""
