"""The API server of the scale benchmark, in its own process (so the client's CPU and memory are its own).

Serves `pods` realistic pods bound 30 to a node, generated from their index as pages are served
(`bench.scale_virtual`: memory for a page, not for the cluster), prints its URL, then answers commands on
stdin, one a line: `bytes` (response bytes sent so far), `add N` (N new unschedulable pods), `touch N` (N
bound pods get a new label: the churn of a live cluster), `drop` (the added pods are deleted), `refused`
(requests the server does not serve, as JSON), `quit`.
"""

from __future__ import annotations

import json
import sys

from bench.scale_virtual import VirtualCluster, serve_in_background


def serve(pods: int, per_node: int) -> None:
    cluster = VirtualCluster(pods, per_node)
    url, server = serve_in_background(cluster)
    print(url, flush=True)
    touches = 0
    try:
        for line in sys.stdin:
            command, _, arg = line.strip().partition(" ")
            if command == "bytes":
                print(cluster.bytes_sent, flush=True)
            elif command == "add":
                cluster.add(int(arg))
                print("ok", flush=True)
            elif command == "touch":
                touches += 1  # a new value each time: a repeated patch would change nothing and send no event
                cluster.touch(int(arg), str(touches))
                print("ok", flush=True)
            elif command == "drop":
                print(cluster.drop(), flush=True)
            elif command == "refused":
                print(json.dumps(cluster.refused[-20:]), flush=True)
            elif command == "quit":
                return
    finally:
        server.shutdown()


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 30)
