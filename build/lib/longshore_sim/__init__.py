"""The local simulation: a Kubernetes API emulator, a simulated cluster on moto, and scenarios."""
