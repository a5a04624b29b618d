#!/usr/bin/python3
"""Warm-cell round trip through cellgate's Jupyter gateway versus jupyter_client, same run.

(G) `cellgate mcp --http 127.0.0.1:0 --gateway-token T`: a python3 kernel started with
    POST /api/kernels, driven over its WebSocket (/api/kernels/{id}/channels, legacy JSON
    messages, websocket-client as tests/gateway/gwclient.py); time from sending the
    execute_request of "x=1" until both its execute_reply and its iopub `status: idle`
    have been read.
(J) `cellgate kernel`: an identical sandboxed python kernel (same sandbox, same ipykernel),
    driven by jupyter_client's BlockingKernelClient over ZeroMQ with the host connection
    file that command prints; the same two messages timed (bench_roundtrip.py's loop).

With --jupyter-server, a third row (S): a real Jupyter Server (`python3 -m jupyter_server
--gateway-url=...`, tests/gateway/test_gateway.py's) started on G's cellgate, its own
kernel started through it, and the same cell over Jupyter Server's WebSocket, which it
proxies to the gateway: what a notebook page sees. Here that is about 44 ms a cell, and
the same with a local ipykernel and no gateway at all: Jupyter Server 1.23.3 never sets
TCP_NODELAY on its WebSocket to the front end (tornado's set_nodelay is not called), so its
small frames wait for the client's delayed ACK (40 ms). It is Jupyter Server's hop, not
the gateway's.

Both kernels run at once; after W untimed warm-up cells each, N timed cells alternate
between them (which goes first alternates too), so the machine's load falls on both alike.
Prints p50, p90, p99 and mean in ms, and the ratio G/J (target: p50 ratio <= 1.2).
This is a benchmark, not a test: it prints figures and exits non-zero only on errors.

    /usr/bin/python3 tests/bench/bench_gateway.py [--bin build/cellgate] [--rounds 200] [--warmup 20]
                                                  [--jupyter-server]
"""

import argparse
import json
import os
import secrets
import signal
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gateway"))

import bench_roundtrip as rt  # noqa: E402  (Child, http_port, jupyter_execute, ...)
import gwclient  # noqa: E402

CODE = rt.CODE  # "x=1"
START_TIMEOUT = rt.START_TIMEOUT
CALL_TIMEOUT = rt.CALL_TIMEOUT


class Gateway:
    """cellgate mcp --http with the gateway, one python3 kernel and a WebSocket to it."""

    def __init__(self, binary, kernel_name="python3", extra_args=()):
        self.token = secrets.token_hex(16)
        argv = [binary, "mcp", "--http", "127.0.0.1:0", "--gateway-token", self.token] + list(extra_args)
        self.child = rt.Child(argv, "cellgate gateway")
        self.ks = None
        self.kernel_id = None
        try:
            self.port = rt.http_port(self.child)
            status, body = self.rest("POST", "/api/kernels", {"name": kernel_name, "env": {}})
            if status != 201:
                raise rt.BenchError("gateway: POST /api/kernels -> %d %r%s" % (status, body[:500], self.child.stderr_tail()))
            self.kernel_id = json.loads(body)["id"]
            self.ks = gwclient.KernelSocket("http://127.0.0.1:%d" % self.port, self.kernel_id, self.token, timeout=START_TIMEOUT)
            self.ks.wait_ready(START_TIMEOUT)
        except BaseException:
            self.close()
            raise

    def rest(self, method, path, body=None):
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=START_TIMEOUT)
        try:
            headers = {"Authorization": "token " + self.token, "Content-Type": "application/json"}
            conn.request(method, path, json.dumps(body) if body is not None else None, headers)
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def execute(self):
        """One x=1 cell; seconds from send to execute_reply + idle."""
        t0 = time.perf_counter()
        try:
            r = self.ks.execute(CODE, timeout=CALL_TIMEOUT)
        except gwclient.GatewayError as e:
            raise rt.BenchError("gateway: %s%s" % (e, self.child.stderr_tail())) from e
        seconds = time.perf_counter() - t0
        if r.status != "ok":
            raise rt.BenchError("gateway: execute_reply is not ok: %s" % r.summary())
        return seconds

    def close(self):
        if self.ks:
            self.ks.close()
        if self.kernel_id:
            try:
                self.rest("DELETE", "/api/kernels/" + self.kernel_id)
            except OSError:
                pass
        if self.child.proc.poll() is None:
            self.child.proc.send_signal(signal.SIGTERM)  # --http does not end at stdin EOF
        self.child.close()


class ThroughJupyterServer:
    """A Jupyter Server with --gateway-url at G's cellgate, a kernel started through it and a
    WebSocket to Jupyter Server's own channels endpoint."""

    def __init__(self, gateway):
        import test_gateway

        self.ks = None
        self.js = test_gateway.JupyterServer("http://127.0.0.1:%d" % gateway.port, gateway.token)
        try:
            status, _, data = self.js.request("POST", "/api/kernels", {"name": "python3"})
            if status != 201:
                raise rt.BenchError("jupyter server: POST /api/kernels -> %d %r\n%s" % (status, data[:500], self.js.log_tail()))
            self.ks = gwclient.KernelSocket("http://127.0.0.1:%d" % self.js.port, json.loads(data)["id"], self.js.token,
                                            timeout=START_TIMEOUT)
            self.ks.wait_ready(START_TIMEOUT)
        except BaseException:
            self.close()
            raise

    def execute(self):
        t0 = time.perf_counter()
        try:
            r = self.ks.execute(CODE, timeout=CALL_TIMEOUT)
        except gwclient.GatewayError as e:
            raise rt.BenchError("jupyter server: %s\n%s" % (e, self.js.log_tail())) from e
        seconds = time.perf_counter() - t0
        if r.status != "ok":
            raise rt.BenchError("jupyter server: execute_reply is not ok: %s" % r.summary())
        return seconds

    def close(self):
        if self.ks:
            self.ks.close()
        self.js.stop()  # shuts its kernel down through the gateway, which is still up


class JupyterClient:
    """cellgate kernel (a sandboxed python kernel) and a BlockingKernelClient on it."""

    def __init__(self, binary):
        self.child = rt.Child([binary, "kernel"], "cellgate kernel")
        self.kc = None
        try:
            path = self.child.read_line(START_TIMEOUT).decode("utf-8", "replace").strip()
            if not os.path.isabs(path) or not os.path.isfile(path):
                raise rt.BenchError("cellgate kernel: expected a connection file path, got %r%s" % (path, self.child.stderr_tail()))
            self.kc = rt.kernel_client(path)
        except BaseException:
            self.close()
            raise

    def execute(self):
        return rt.jupyter_execute(self.kc, CALL_TIMEOUT)

    def close(self):
        if self.kc:
            self.kc.stop_channels()
        self.child.close()


def stats(samples):
    """(p50, p90, p99, mean) in ms; nearest-rank percentiles."""
    ms = sorted(s * 1000.0 for s in samples)

    def rank(p):
        return ms[min(len(ms) - 1, max(0, int(-(-p * len(ms) // 100)) - 1))]

    return rank(50), rank(90), rank(99), statistics.fmean(ms)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(REPO, "build", "cellgate"), help="cellgate binary (default: build/cellgate)")
    p.add_argument("--rounds", type=int, default=200, help="timed cells each (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="untimed warm-up cells each (default 20)")
    p.add_argument("--jupyter-server", action="store_true",
                   help="also (S): the cell through a real Jupyter Server with --gateway-url at cellgate")
    args = p.parse_args()
    if args.rounds < 1 or args.warmup < 0:
        p.error("--rounds must be >= 1 and --warmup >= 0")
    binary = os.path.abspath(args.bin)
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print("bench: cellgate binary not found or not executable: %s (build it first)" % binary, file=sys.stderr)
        return 2

    runners = {}
    names = ["G", "J"] + (["S"] if args.jupyter_server else [])
    samples = {name: [] for name in names}
    try:
        runners["G"] = Gateway(binary)
        runners["J"] = JupyterClient(binary)
        if args.jupyter_server:
            runners["S"] = ThroughJupyterServer(runners["G"])
        for _ in range(args.warmup):
            for name in names:
                runners[name].execute()
        for i in range(args.rounds):
            for name in names if i % 2 == 0 else names[::-1]:
                samples[name].append(runners[name].execute())
    except rt.BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    finally:
        for name in ("S", "J", "G"):  # Jupyter Server before the gateway it uses
            if name in runners:
                runners[name].close()

    g, j = stats(samples["G"]), stats(samples["J"])
    print("warm cell %r, %d timed after %d warm-up each, alternating (ms)" % (CODE, args.rounds, args.warmup))
    print("%-40s %9s %9s %9s %9s" % ("", "p50", "p90", "p99", "mean"))
    print("%-40s %9.3f %9.3f %9.3f %9.3f" % (("G gateway WebSocket (cellgate mcp --http)",) + g))
    print("%-40s %9.3f %9.3f %9.3f %9.3f" % (("J jupyter_client (cellgate kernel)",) + j))
    if args.jupyter_server:
        js = stats(samples["S"])
        print("%-40s %9.3f %9.3f %9.3f %9.3f" % (("S through Jupyter Server (--gateway-url)",) + js))
    print("ratio G/J  p50 %.3f   p90 %.3f   p99 %.3f   mean %.3f" % tuple(a / b for a, b in zip(g, j)))
    if args.jupyter_server:
        print("ratio S/J  p50 %.3f   p90 %.3f   p99 %.3f   mean %.3f" % tuple(a / b for a, b in zip(js, j)))
    print("target: p50 ratio <= 1.2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
