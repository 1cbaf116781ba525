"""Adapters: implement the ports against AWS (boto3) and Kubernetes (the kubernetes client)."""
