"""routectl: keeps a cloud's pod-network routes in step with a Kubernetes cluster's Nodes."""

__version__ = "0.1.0"
