"""The API emulator of the scale benchmark, in its own process (so the client's CPU and memory are its own).

Seeds `pods` realistic pods bound 30 to a node (bench.scale_objects), prints the emulator's URL, then answers
commands on stdin, one a line: `bytes` (response bytes sent so far), `add N` (N new unschedulable pods),
`touch N` (N bound pods get a new label: the churn of a live cluster), `quit`.
"""

from __future__ import annotations

import sys

from bench.scale_objects import node, pod
from longshore_sim.kubeapi import KubeApiEmulator


def node_name(j: int) -> str:
    return str(node(j)["metadata"]["name"])


def serve(pods: int, per_node: int) -> None:
    nodes = -(-pods // per_node)
    with KubeApiEmulator(history=50_000) as emulator:
        store = emulator.store
        for j in range(nodes):
            store.create("nodes", node(j), None, keep_status=True)
        names = [node_name(j) for j in range(nodes)]
        for i in range(pods):
            store.create("pods", pod(i, names[i // per_node]), "default", keep_status=True)
        print(emulator.url, flush=True)
        added, touches = pods, 0
        for line in sys.stdin:
            command, _, arg = line.strip().partition(" ")
            if command == "bytes":
                print(emulator.bytes_sent, flush=True)
            elif command == "add":
                for i in range(added, added + int(arg)):
                    store.create("pods", pod(i, None), "default", keep_status=True)
                added += int(arg)
                print("ok", flush=True)
            elif command == "touch":
                touches += 1  # a new value each time: a repeated patch would change nothing and send no event
                for i in range(int(arg)):
                    name = pod(i, None)["metadata"]["name"]
                    store.patch("pods", name, {"metadata": {"labels": {"touched": str(touches)}}}, "default")
                print("ok", flush=True)
            elif command == "quit":
                return


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 30)
