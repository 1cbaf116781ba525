"""`make bench`: the packing engine against the fluid LP lower bound and a Karpenter-style greedy baseline."""
