"""Services: the use cases (provision, plan disruption, handle interruption), written against ports only."""
