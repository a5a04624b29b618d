#!/usr/bin/python3
"""Warm-cell round trip: cellgate over MCP stdio versus Python jupyter_client, same run.

(A) `cellgate mcp`: time from writing a `tools/call execute_code` ("x=1", one session) line
    on stdin to reading the JSON-RPC response line with that id on stdout.
(B) `cellgate kernel`: the same sandboxed python kernel, driven by jupyter_client's
    BlockingKernelClient; time from `execute("x=1")` until both the iopub `status: idle` and
    the shell `execute_reply` for that request have arrived.
(C) `cellgate mcp --http`: the same call as (A) over MCP's Streamable HTTP transport, one
    POST per call on a kept-alive connection, until its JSON response is read.

With --compare-log instead: the execution log's cost per execution, the call of (A) on two
servers in the same run, `--execution-log full` (the default) and `--execution-log off`,
alternating cell by cell (which goes first alternates too); prints both and the ratios.

Both get W untimed warm-up cells, then N timed cells; A and B run one after the other.
Prints p50, p99 and mean in ms and the ratios A/B. Target (design.md): p50 ratio <= 1.0.
This is a benchmark, not a test: it prints figures and exits non-zero only on errors.

    tests/bench/run [--bin build/cellgate] [--warmup 20] [--iterations 200] [--only mcp|jupyter|http]
    tests/bench/run --compare-log [--bin build/cellgate] [--warmup 20] [--iterations 200]
"""

import argparse
import http.client
import json
import re
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CODE = "x=1"
SESSION_ID = "sess_benchbench01"
PROTOCOL_VERSION = "2025-11-25"
START_TIMEOUT = 120.0  # seconds for session/kernel start-up
CALL_TIMEOUT = 60.0  # seconds for one warm cell


class BenchError(Exception):
    """A failure that ends the benchmark with a clear message."""


# ---------------------------------------------------------------- processes


class Child:
    """A cellgate subprocess with pipes for stdin/stdout and stderr kept in a log file."""

    def __init__(self, argv, what):
        self.what = what
        self.state_dir = tempfile.mkdtemp(prefix="cg-bench-state-")
        self.log_dir = tempfile.mkdtemp(prefix="cg-bench-log-")
        self.log_path = os.path.join(self.log_dir, "stderr.log")
        self.log = open(self.log_path, "wb")
        argv = argv + ["--state-dir", self.state_dir]
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.log,
                cwd=REPO,
                start_new_session=True,  # own process group, for the last-resort SIGKILL
            )
        except OSError as e:
            self._remove_dirs()
            raise BenchError("%s: cannot start %s: %s" % (what, argv[0], e)) from e
        self.buf = b""

    def write_line(self, line):
        try:
            self.proc.stdin.write(line + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise self.died("write failed (%s)" % e) from e

    def read_line(self, timeout):
        """Return the next stdout line (without newline); raise on EOF or timeout."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BenchError("%s: no output within %.0f s%s" % (self.what, timeout, self.stderr_tail()))
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise self.died("stdout closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def died(self, how):
        try:
            code = self.proc.wait(timeout=2)
            state = "exited with status %s" % code
        except subprocess.TimeoutExpired:
            state = "still running"
        return BenchError("%s: %s, process %s%s" % (self.what, how, state, self.stderr_tail()))

    def stderr_tail(self, lines=20):
        self.log.flush()
        try:
            with open(self.log_path, "rb") as f:
                tail = f.read().decode("utf-8", "replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "" if not tail else "\n--- stderr (last %d lines) ---\n%s" % (len(tail), "\n".join(tail))

    def close(self):
        """Close stdin, wait; on timeout SIGTERM, then SIGKILL its process group; remove temp dirs."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        for sig, wait in ((None, 15), (signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            if sig == signal.SIGKILL:
                s_killpg(self.proc.pid)
            elif sig is not None:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        if sig is not None:  # it ignored stdin close: sweep what it left in its group
            s_killpg(self.proc.pid)
        self.proc.stdout.close()
        self.log.close()
        self._remove_dirs()

    def _remove_dirs(self):
        shutil.rmtree(self.state_dir, ignore_errors=True)
        shutil.rmtree(self.log_dir, ignore_errors=True)


def s_killpg(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# ---------------------------------------------------------------- (A) MCP stdio


class McpClient:
    """Minimal newline-delimited JSON-RPC 2.0 client over a Child's stdio."""

    def __init__(self, child):
        self.child = child
        self.next_id = 1

    def request(self, method, params, timeout):
        """Send a request; return (response, seconds from write to matching response)."""
        rid = self.next_id
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
        t0 = time.perf_counter()
        self.child.write_line(line)
        while True:
            msg = self._read(timeout)
            if msg.get("id") == rid and "method" not in msg:
                return msg, time.perf_counter() - t0
            self._answer_server_request(msg)

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.child.write_line(json.dumps(msg).encode())

    def _read(self, timeout):
        line = self.child.read_line(timeout)
        try:
            msg = json.loads(line)
        except ValueError as e:
            raise BenchError("mcp: stdout line is not JSON: %r" % line[:500]) from e
        if not isinstance(msg, dict):
            raise BenchError("mcp: stdout line is not a JSON object: %r" % line[:500])
        return msg

    def _answer_server_request(self, msg):
        """Notifications are ignored; a server request gets ping -> {} or method-not-found."""
        if "method" not in msg or "id" not in msg:
            return
        if msg["method"] == "ping":
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "not supported by bench"}}
        self.child.write_line(json.dumps(reply).encode())


def mcp_initialize(client):
    params = {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "cellgate-bench", "version": "1.0"},
    }
    resp, _ = client.request("initialize", params, START_TIMEOUT)
    if "result" not in resp:
        raise BenchError("mcp: initialize failed:\n%s" % json.dumps(resp, indent=2))
    client.notify("notifications/initialized")


def mcp_execute(client, timeout, session_id=SESSION_ID):
    """Run CODE once through execute_code; return seconds; abort unless status is success."""
    args = {"language": "python", "code": CODE, "session_id": session_id}
    resp, seconds = client.request("tools/call", {"name": "execute_code", "arguments": args}, timeout)
    status = ((resp.get("result") or {}).get("structuredContent") or {}).get("status")
    if status != "success":
        raise BenchError("mcp: execute_code did not succeed:\n%s" % json.dumps(resp, indent=2)[:4000])
    return seconds


def bench_mcp(binary, warmup, iterations):
    """(A): return the list of timed round trips in seconds."""
    child = Child([binary, "mcp"], "cellgate mcp")
    try:
        client = McpClient(child)
        mcp_initialize(client)
        mcp_execute(client, START_TIMEOUT)  # creates the session: not timed
        for _ in range(warmup):
            mcp_execute(client, CALL_TIMEOUT)
        return [mcp_execute(client, CALL_TIMEOUT) for _ in range(iterations)]
    finally:
        child.close()


def bench_compare_log(binary, warmup, iterations):
    """--compare-log: (A) against two servers, execution log full and off, alternating.
    Returns [(name, samples)] for both."""
    modes = ("full", "off")
    children, clients, samples = {}, {}, {mode: [] for mode in modes}
    try:
        for mode in modes:
            children[mode] = Child([binary, "mcp", "--execution-log", mode], "cellgate mcp --execution-log " + mode)
            clients[mode] = McpClient(children[mode])
            mcp_initialize(clients[mode])
            mcp_execute(clients[mode], START_TIMEOUT, SESSION_ID + mode)  # not timed
        for i in range(warmup + iterations):
            for mode in modes if i % 2 == 0 else modes[::-1]:
                seconds = mcp_execute(clients[mode], CALL_TIMEOUT, SESSION_ID + mode)
                if i >= warmup:
                    samples[mode].append(seconds)
        return [("log full", samples["full"]), ("log off", samples["off"])]
    finally:
        for child in children.values():
            child.close()


def report_compare_log(results, iterations, warmup):
    print("warm cell %r through cellgate mcp (stdio), %d timed after %d warm-up per server, "
          "alternating (ms)" % (CODE, iterations, warmup))
    print("%-28s %9s %9s %9s" % ("", "p50", "p99", "mean"))
    rows = {}
    for name, samples in results:
        rows[name] = summary(samples)
        print("%-28s %9.3f %9.3f %9.3f" % (("--execution-log " + name[4:],) + rows[name]))
    full, off = rows["log full"], rows["log off"]
    print("ratio full/off  p50 %.3f   p99 %.3f   mean %.3f" % (full[0] / off[0], full[1] / off[1], full[2] / off[2]))
    print("added per execution: p50 %+.3f ms, mean %+.3f ms" % (full[0] - off[0], full[2] - off[2]))


# ---------------------------------------------------------------- (C) MCP over HTTP


def http_port(child, timeout=30.0):
    """The port `cellgate mcp --http 127.0.0.1:0` bound, read from its log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(child.log_path, "rb") as f:
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)/", f.read())
        if m:
            return int(m.group(1))
        if child.proc.poll() is not None:
            child.died("exited before listening")
        time.sleep(0.05)
    raise BenchError("http: no port in the server log:\n%s" % child.stderr_tail())


class HttpClient:
    """One kept-alive HTTP connection speaking MCP's Streamable HTTP transport."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=START_TIMEOUT)
        self.session = None
        self.next_id = 0

    def post(self, message):
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
            headers["MCP-Protocol-Version"] = PROTOCOL_VERSION
        start = time.perf_counter()
        self.conn.request("POST", "/mcp", json.dumps(message), headers)
        resp = self.conn.getresponse()
        body = resp.read()
        seconds = time.perf_counter() - start
        if resp.status == 202:
            return None, seconds, resp
        if resp.status != 200:
            raise BenchError("http: %s answered %d: %r" % (message.get("method"), resp.status, body[:500]))
        if resp.getheader("Content-Type", "").startswith("text/event-stream"):
            datas = [line[5:].strip() for line in body.decode().splitlines() if line.startswith("data:")]
            body = datas[-1].encode() if datas else b"{}"
        return json.loads(body), seconds, resp

    def request(self, method, params):
        self.next_id += 1
        return self.post({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})


def bench_http(binary, warmup, iterations):
    """(C): return the list of timed round trips in seconds."""
    child = Child([binary, "mcp", "--http", "127.0.0.1:0"], "cellgate mcp --http")
    try:
        client = HttpClient(http_port(child))
        params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        resp, _, raw = client.request("initialize", params)
        client.session = raw.getheader("Mcp-Session-Id")
        if not client.session or "result" not in resp:
            raise BenchError("http: initialize failed: %r" % resp)
        client.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

        def execute():
            args = {"language": "python", "code": CODE, "session_id": SESSION_ID}
            resp, seconds, _ = client.request("tools/call", {"name": "execute_code", "arguments": args})
            status = ((resp.get("result") or {}).get("structuredContent") or {}).get("status")
            if status != "success":
                raise BenchError("http: execute_code did not succeed:\n%s" % json.dumps(resp, indent=2)[:4000])
            return seconds

        execute()  # creates the session: not timed
        for _ in range(warmup):
            execute()
        return [execute() for _ in range(iterations)]
    finally:
        child.close()


# ---------------------------------------------------------------- (B) jupyter_client


def kernel_client(connection_file):
    from jupyter_client import BlockingKernelClient

    kc = BlockingKernelClient()
    kc.load_connection_file(connection_file)
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
    except RuntimeError as e:
        kc.stop_channels()
        raise BenchError("jupyter: kernel at %s not ready: %s" % (connection_file, e)) from e
    return kc


def jupyter_execute(kc, timeout):
    """Run CODE once; return seconds until both iopub idle and execute_reply have arrived."""
    t0 = time.perf_counter()
    msg_id = kc.execute(CODE)
    idle = reply = None
    deadline = time.monotonic() + timeout
    while idle is None:
        msg = s_get(kc.get_iopub_msg, deadline, "iopub status idle")
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "status"
            and msg["content"].get("execution_state") == "idle"
        ):
            idle = msg
    while reply is None:
        msg = s_get(kc.get_shell_msg, deadline, "execute_reply")
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_reply":
            reply = msg
    seconds = time.perf_counter() - t0
    if reply["content"].get("status") != "ok":
        raise BenchError("jupyter: execute_reply is not ok:\n%s" % json.dumps(reply["content"], indent=2, default=str))
    return seconds


def s_get(get, deadline, what):
    from queue import Empty

    try:
        return get(timeout=max(0.001, deadline - time.monotonic()))
    except Empty as e:
        raise BenchError("jupyter: timed out waiting for %s" % what) from e


def jupyter_loop(connection_file, warmup, iterations):
    kc = kernel_client(connection_file)
    try:
        for _ in range(warmup):
            jupyter_execute(kc, CALL_TIMEOUT)
        return [jupyter_execute(kc, CALL_TIMEOUT) for _ in range(iterations)]
    finally:
        kc.stop_channels()


def bench_jupyter(binary, warmup, iterations, connection_file=None):
    """(B): return the list of timed round trips in seconds."""
    if connection_file:  # an already running kernel (for checking this loop)
        return jupyter_loop(connection_file, warmup, iterations)
    child = Child([binary, "kernel"], "cellgate kernel")
    try:
        path = child.read_line(START_TIMEOUT).decode("utf-8", "replace").strip()
        if not os.path.isabs(path) or not os.path.isfile(path):
            raise BenchError("cellgate kernel: expected a connection file path, got %r%s" % (path, child.stderr_tail()))
        return jupyter_loop(path, warmup, iterations)
    finally:
        child.close()


# ---------------------------------------------------------------- report


def summary(samples):
    """Return (p50, p99, mean) in milliseconds; percentiles are nearest-rank."""
    ms = sorted(s * 1000.0 for s in samples)

    def rank(p):
        return ms[min(len(ms) - 1, max(0, int(-(-p * len(ms) // 100)) - 1))]

    return rank(50), rank(99), statistics.fmean(ms)


def report(results, iterations, warmup):
    print("warm cell %r, %d timed after %d warm-up (ms)" % (CODE, iterations, warmup))
    print("%-28s %9s %9s %9s" % ("", "p50", "p99", "mean"))
    rows = {}
    for name, samples in results:
        rows[name] = summary(samples)
        print("%-28s %9.3f %9.3f %9.3f" % ((name,) + rows[name]))
    base = rows.get("B jupyter_client")
    for name, row in rows.items():
        if base and name != "B jupyter_client":
            print("ratio %s/B  p50 %.3f   p99 %.3f" % (name[0], row[0] / base[0], row[1] / base[1]))
    if base and len(rows) > 1:
        print("target: ratio A/B <= 1.0 (p50); C is the same call over HTTP, for comparison")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", default=os.path.join(REPO, "build", "cellgate"), help="cellgate binary (default: build/cellgate)")
    p.add_argument("--warmup", type=int, default=20, help="untimed warm-up cells (default 20)")
    p.add_argument("--iterations", type=int, default=200, help="timed cells (default 200)")
    p.add_argument("--only", choices=("mcp", "jupyter", "http"), help="run only (A) mcp, (B) jupyter or (C) http")
    p.add_argument(
        "--compare-log",
        action="store_true",
        help="instead: (A) on two servers, --execution-log full vs off, alternating; the log's cost per execution",
    )
    p.add_argument(
        "--connection-file",
        help="for (B), use this running kernel instead of starting `cellgate kernel` (checks the client loop)",
    )
    args = p.parse_args()
    if args.compare_log and (args.only or args.connection_file):
        p.error("--compare-log runs alone: no --only or --connection-file")
    if args.warmup < 0 or args.iterations < 1:
        p.error("--warmup must be >= 0 and --iterations >= 1")
    args.bin = os.path.abspath(os.path.join(REPO, args.bin))
    return args


def main():
    args = parse_args()
    need_bin = args.only != "jupyter" or not args.connection_file
    if need_bin and not (os.path.isfile(args.bin) and os.access(args.bin, os.X_OK)):
        print("bench: cellgate binary not found or not executable: %s (build it first)" % args.bin, file=sys.stderr)
        return 2
    results = []
    try:
        if args.compare_log:
            report_compare_log(bench_compare_log(args.bin, args.warmup, args.iterations), args.iterations, args.warmup)
            return 0
        if args.only in (None, "mcp"):
            results.append(("A cellgate mcp (stdio)", bench_mcp(args.bin, args.warmup, args.iterations)))
        if args.only in (None, "jupyter"):
            samples = bench_jupyter(args.bin, args.warmup, args.iterations, args.connection_file)
            results.append(("B jupyter_client", samples))
        if args.only in (None, "http"):
            results.append(("C cellgate mcp (HTTP)", bench_http(args.bin, args.warmup, args.iterations)))
    except BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    report(results, args.iterations, args.warmup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
