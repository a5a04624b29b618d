#!/usr/bin/python3
"""The egress relay's cost: bytes downloaded through `cellgate egress-relay` versus straight
over loopback, same run.

An upstream on 127.0.0.1 (squid's place) sends SIZE bytes to each client that connects and
closes. (A) direct: the client connects to the upstream. (B) relayed: the client connects to
a listener handed to the relay (a session with wide limits), which connects to the upstream
and writes its PROXY line first (the upstream reads it before it sends). Each is run ROUNDS
times with CONNS clients at once, alternating A and B; prints MB/s (median) and the ratio.
This is a benchmark, not a test: it prints figures and exits non-zero only on errors.

    tests/bench/bench_egress_relay.py [--bin build/cellgate] [--size-mb 100] [--conns 1] [--rounds 5]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import threading
import time

CHUNK = bytes(range(256)) * 256  # 64 KiB


def upstream_serve(listener, size, proxied):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=upstream_send, args=(conn, size, proxied), daemon=True).start()


def upstream_send(conn, size, proxied):
    with conn:
        if proxied():
            line = b""
            while not line.endswith(b"\r\n"):
                b = conn.recv(1)
                if not b:
                    return
                line += b
        left = size
        while left > 0:
            n = conn.send(CHUNK[: min(len(CHUNK), left)])
            left -= n


def client_fetch(port, size, results):
    with socket.create_connection(("127.0.0.1", port)) as s:
        got = 0
        while True:
            data = s.recv(1 << 20)
            if not data:
                break
            got += len(data)
    results.append(got == size)


def run_round(port, size, conns):
    results = []
    threads = [threading.Thread(target=client_fetch, args=(port, size, results)) for _ in range(conns)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    if not all(results) or len(results) != conns:
        raise SystemExit("a transfer came short")
    return size * conns / elapsed / 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "../../build/cellgate"))
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--conns", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    size = args.size_mb * 1024 * 1024

    mode = {"proxied": False}
    upstream = socket.socket()
    upstream.bind(("127.0.0.1", 0))
    upstream.listen(256)
    up_port = upstream.getsockname()[1]
    threading.Thread(target=upstream_serve, args=(upstream, size, lambda: mode["proxied"]), daemon=True).start()

    server_end, relay_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    relay = subprocess.Popen(
        [os.path.abspath(args.bin), "egress-relay", "--control-fd", str(relay_end.fileno()),
         "--upstream-port", str(up_port)],
        pass_fds=[relay_end.fileno()])
    relay_end.close()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    relay_port = listener.getsockname()[1]
    add = {"op": "add", "session": "0123456789ab", "src": "127.64.0.1", "max_conns": 1024,
           "max_up": 1 << 50, "max_down": 1 << 50, "per_minute": 1000000}
    socket.send_fds(server_end, [json.dumps(add).encode()], [listener.fileno()])
    listener.close()

    direct, relayed = [], []
    for _ in range(args.rounds):
        mode["proxied"] = False
        direct.append(run_round(up_port, size, args.conns))
        mode["proxied"] = True
        relayed.append(run_round(relay_port, size, args.conns))
    server_end.close()
    relay.wait(timeout=10)
    d, r = statistics.median(direct), statistics.median(relayed)
    print(f"{args.conns} x {args.size_mb} MB, {args.rounds} rounds, median: "
          f"direct {d:.0f} MB/s, relayed {r:.0f} MB/s, relayed/direct {r / d:.2f}")
    print(f"  direct:  {' '.join(f'{x:.0f}' for x in direct)}")
    print(f"  relayed: {' '.join(f'{x:.0f}' for x in relayed)}")
    if relay.returncode != 0:
        raise SystemExit(f"the relay exited {relay.returncode}")


if __name__ == "__main__":
    main()
