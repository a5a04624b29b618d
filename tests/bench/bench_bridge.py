#!/usr/bin/python3
"""The bridge's own cost per cell (issue 29, point 3): a null kernel, instruction counts, and
the MCP/jupyter_client ratio on ipykernel, in one run.

(F) floor: the null kernel (null_kernel.py: answers every request at once, HMAC-signed) run on
    the host over ipc, driven by a minimal pyzmq client: execute_request until both the
    execute_reply and iopub's status idle have arrived. What a cell costs with no bridge.
(M) cellgate mcp (stdio): execute_code on the null kernel in a session (`--kernelspecs` with a
    generated spec, language "null": the same sandbox and ipc path as any kernel).
(H) the same call over Streamable HTTP (one POST per call on a kept-alive connection).
(G) the gateway: a null kernel started by POST /api/kernels, a cell over its WebSocket.
    F, M, H and G (of every --bin) take turns cell by cell; bridge time = each one's
    percentile minus F's p50.
(A/J) ipykernel: execute_code `x=1` in a session over MCP stdio (A) and jupyter_client on
    `cellgate kernel` (J), of every --bin, alternating; their ratio (target A/J <= 0.9 at p50).
(C) callgrind: `valgrind --tool=callgrind` on cellgate mcp (stdio) and on the gateway, each
    driving the null kernel; counters are zeroed after the warm-up (callgrind_control -z) and
    dumped after N cells: instructions per cell (the whole server process, all threads), the
    self cost per library and cellgate's own functions by inclusive cost (callgrind_annotate).
    valgrind 3.19 (Debian 12) lacks pidfd_open: pidfd_shim.c, built here and LD_PRELOADed
    into the server alone, stands in for it.
(S) system calls per cell: `strace -f -c` attached to cellgate mcp (stdio, null kernel) over
    the same number of cells as (C).
(P) context switches per cell: `perf stat -e context-switches --per-thread` attached the same
    way: the main loop's, ZeroMQ's I/O thread's and the other threads' (runner, log).

Give --bin more than once (the base binary first) to measure both in one run; the last table
sets them side by side. A benchmark, not a test: it prints figures, exits non-zero on errors.

    /usr/bin/python3 tests/bench/bench_bridge.py [--bin B]... [--cells 200] [--warmup 20]
                      [--callgrind-cells 100] [--top 15] [--skip null,ipykernel,syscalls,switches,callgrind]
"""

import argparse
import glob
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gateway"))

import bench_gateway as bg  # noqa: E402
import bench_roundtrip as rt  # noqa: E402

CODE = "x=1"
NULL = "null"
START_TIMEOUT = rt.START_TIMEOUT
CALL_TIMEOUT = rt.CALL_TIMEOUT


def write_null_spec(root):
    """ROOT/null/kernel.json: python3 -c <null_kernel.py's source> {connection_file}."""
    with open(os.path.join(HERE, "null_kernel.py"), encoding="utf-8") as f:
        source = f.read()
    os.makedirs(os.path.join(root, NULL))
    spec = {
        "argv": ["/usr/bin/python3", "-c", source, "{connection_file}"],
        "display_name": "Null kernel (bench)",
        "language": "python",
        "metadata": {"cellgate": {"language": NULL, "title": "Null kernel", "kernel_name": NULL}},
    }
    with open(os.path.join(root, NULL, "kernel.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f)
    return root


# ---------------------------------------------------------------- (F) the floor


class Floor:
    """The null kernel on the host over ipc, and a minimal signed client."""

    def __init__(self):
        import zmq

        self.zmq = zmq
        self.dir = tempfile.mkdtemp(prefix="cg-bench-null-")
        self.key = uuid.uuid4().hex.encode()
        info = {"transport": "ipc", "ip": os.path.join(self.dir, "k"), "key": self.key.decode(),
                "signature_scheme": "hmac-sha256", "shell_port": 1, "iopub_port": 2, "stdin_port": 3,
                "control_port": 4, "hb_port": 5}
        path = os.path.join(self.dir, "connection.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(info, f)
        self.proc = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "null_kernel.py"), path])
        self.ctx = zmq.Context()
        self.shell = self.ctx.socket(zmq.DEALER)
        self.iopub = self.ctx.socket(zmq.SUB)
        self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        for sock in (self.shell, self.iopub):
            sock.linger = 0
        self.shell.connect("ipc://%s-1" % info["ip"])
        self.iopub.connect("ipc://%s-2" % info["ip"])
        self.session = uuid.uuid4().hex
        deadline = time.monotonic() + START_TIMEOUT
        while not self.iopub.poll(100):  # kernel_info until iopub is live
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise rt.BenchError("floor: the null kernel did not answer")
            self._send("kernel_info_request", {})
        while self.iopub.poll(200):
            self.iopub.recv_multipart()
        while self.shell.poll(0):
            self.shell.recv_multipart()

    def _send(self, msg_type, content):
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": msg_type, "username": "bench", "session": self.session,
                  "date": "2026-01-01T00:00:00Z", "version": "5.3"}
        parts = [json.dumps(p).encode() for p in (header, {}, {}, content)]
        sig = hmac.new(self.key, b"".join(parts), hashlib.sha256).hexdigest().encode()
        self.shell.send_multipart([b"<IDS|MSG>", sig] + parts)
        return msg_id

    def _parent_of(self, frames):
        at = frames.index(b"<IDS|MSG>")
        want = hmac.new(self.key, b"".join(frames[at + 2:at + 6]), hashlib.sha256).hexdigest().encode()
        if not hmac.compare_digest(want, frames[at + 1]):
            raise rt.BenchError("floor: bad signature from the null kernel")
        return json.loads(frames[at + 2]), json.loads(frames[at + 3]), json.loads(frames[at + 5])

    def execute(self):
        t0 = time.perf_counter()
        msg_id = self._send("execute_request", {"code": CODE, "silent": False, "store_history": True,
                                                "user_expressions": {}, "allow_stdin": False})
        idle = reply = False
        poller = self.zmq.Poller()
        poller.register(self.shell, self.zmq.POLLIN)
        poller.register(self.iopub, self.zmq.POLLIN)
        while not (idle and reply):
            events = dict(poller.poll(CALL_TIMEOUT * 1000))
            if not events:
                raise rt.BenchError("floor: no answer from the null kernel")
            for sock in events:
                header, parent, content = self._parent_of(sock.recv_multipart())
                if parent.get("msg_id") != msg_id:
                    continue
                if header["msg_type"] == "execute_reply":
                    reply = True
                elif header["msg_type"] == "status" and content.get("execution_state") == "idle":
                    idle = True
        return time.perf_counter() - t0

    def close(self):
        self.ctx.destroy(linger=0)
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------- (M, H, A) MCP


def check_success(resp, what):
    status = ((resp.get("result") or {}).get("structuredContent") or {}).get("status")
    if status != "success":
        raise rt.BenchError("%s: execute_code did not succeed:\n%s" % (what, json.dumps(resp, indent=2)[:4000]))


class McpStdio:
    def __init__(self, argv, language, what="mcp"):
        self.what = what
        self.language = language
        self.child = rt.Child(argv, what)
        try:
            self.client = rt.McpClient(self.child)
            rt.mcp_initialize(self.client)
            self.execute(START_TIMEOUT)  # creates the session
        except BaseException:
            self.close()
            raise

    def execute(self, timeout=CALL_TIMEOUT):
        args = {"language": self.language, "code": CODE, "session_id": rt.SESSION_ID}
        resp, seconds = self.client.request("tools/call", {"name": "execute_code", "arguments": args}, timeout)
        check_success(resp, self.what)
        return seconds

    def close(self):
        self.child.close()


class McpHttp:
    def __init__(self, argv, language):
        self.child = rt.Child(argv + ["--http", "127.0.0.1:0"], "cellgate mcp --http")
        self.language = language
        try:
            self.client = rt.HttpClient(rt.http_port(self.child))
            params = {"protocolVersion": rt.PROTOCOL_VERSION, "capabilities": {},
                      "clientInfo": {"name": "bench", "version": "0"}}
            resp, _, raw = self.client.request("initialize", params)
            self.client.session = raw.getheader("Mcp-Session-Id")
            if not self.client.session or "result" not in resp:
                raise rt.BenchError("http: initialize failed: %r" % resp)
            self.client.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
            self.execute()
        except BaseException:
            self.close()
            raise

    def execute(self):
        args = {"language": self.language, "code": CODE, "session_id": rt.SESSION_ID}
        resp, seconds, _ = self.client.request("tools/call", {"name": "execute_code", "arguments": args})
        check_success(resp, "http")
        return seconds

    def close(self):
        if self.child.proc.poll() is None:
            self.child.proc.send_signal(15)  # --http does not end at stdin EOF
        self.child.close()


# ---------------------------------------------------------------- runs


def pct(samples, p):
    ms = sorted(s * 1000.0 for s in samples)
    return ms[min(len(ms) - 1, max(0, int(-(-p * len(ms) // 100)) - 1))]


def cpu_seconds(runner):
    """User + system CPU of the server process behind RUNNER (all its threads), or None."""
    child = getattr(getattr(runner, "child", None), "proc", None)
    if child is None:
        return None
    try:
        with open("/proc/%d/stat" % child.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def alternate(runners, warmup, cells):
    """Runs every runner's cell in turn; {name: samples}, and {name + "/cpu": [server CPU
    seconds per cell]} for those with a server process."""
    samples = {name: [] for name in runners}
    names = list(runners)
    for _ in range(warmup):
        for name in names:
            runners[name].execute()
    before = {name: cpu_seconds(runners[name]) for name in names}
    for i in range(cells):
        for name in names if i % 2 == 0 else names[::-1]:
            samples[name].append(runners[name].execute())
    for name in names:
        after = cpu_seconds(runners[name])
        if before[name] is not None and after is not None:
            samples[name + "/cpu"] = (after - before[name]) / cells
    return samples


def close_all(runners):
    for runner in reversed(list(runners.values())):
        try:
            runner.close()
        except Exception as e:  # noqa: BLE001  (best effort, keep closing the rest)
            print("bench: closing: %s" % e, file=sys.stderr)


def run_null(binaries, specs, warmup, cells):
    """F and, for each binary, M, H and G, all taking turns cell by cell (so the machine's
    load falls on all alike): {binary: {name: samples}}, F's samples shared."""
    runners = {}
    try:
        runners["F"] = Floor()
        for n, b in enumerate(binaries):
            args = [b, "mcp", "--kernelspecs", specs, "--pool", "off"]
            runners["M%d" % n] = McpStdio(args + ["--http-listen", "off"], NULL, "cellgate mcp (null)")
            runners["H%d" % n] = McpHttp(args, NULL)
            runners["G%d" % n] = bg.Gateway(b, NULL, ["--kernelspecs", specs, "--pool", "off"])
        samples = alternate(runners, warmup, cells)
        out = {}
        for n, b in enumerate(binaries):
            out[b] = {}
            for key in "FMHG":
                name = key if key == "F" else "%s%d" % (key, n)
                out[b][key] = samples[name]
                out[b][key + "/cpu"] = samples.get(name + "/cpu")
        return out
    finally:
        close_all(runners)


def run_ipykernel_all(binaries, warmup, cells):
    """A and J for each binary, all taking turns: {binary: {"A": samples, "J": samples}}."""
    runners = {}
    try:
        for n, b in enumerate(binaries):
            runners["A%d" % n] = McpStdio([b, "mcp", "--http-listen", "off"], "python", "cellgate mcp (python)")
            runners["J%d" % n] = bg.JupyterClient(b)
        samples = alternate(runners, warmup, cells)
        return {b: {"A": samples["A%d" % n], "J": samples["J%d" % n], "A/cpu": samples.get("A%d/cpu" % n)}
                for n, b in enumerate(binaries)}
    finally:
        close_all(runners)


def traced_cells(binary, specs, warmup, cells, label, tracer_argv, settle_s):
    """Runs CELLS warm cells on cellgate mcp (stdio, null kernel) after WARMUP, with a tracer
    attached for them: TRACER_ARGV(pid, out) is its command line, writing to the file OUT,
    SETTLE_S the time it takes to attach to every thread; it is stopped with SIGINT. Returns
    (the server's pid, the lines the tracer wrote)."""
    runner = McpStdio([binary, "mcp", "--kernelspecs", specs, "--pool", "off", "--http-listen", "off"], NULL,
                      label)
    out = tempfile.mktemp(prefix="cg-bench-tracer-")
    try:
        for _ in range(warmup):
            runner.execute()
        pid = runner.child.proc.pid
        tracer = subprocess.Popen(tracer_argv(pid, out), stderr=subprocess.DEVNULL)
        time.sleep(settle_s)
        for _ in range(cells):
            runner.execute()
        tracer.send_signal(signal.SIGINT)
        tracer.wait(30)
        with open(out) as f:
            return pid, f.read().splitlines()
    finally:
        runner.close()
        if os.path.exists(out):
            os.unlink(out)


def syscalls_per_cell(binary, specs, warmup, cells):
    """strace -f -c on cellgate mcp (stdio, null kernel) over CELLS warm cells: system calls
    per cell, in all and the most frequent ({name: count}), or None without strace."""
    if not shutil.which("strace"):
        return None
    # attached to every thread before the first counted cell
    _, lines = traced_cells(binary, specs, warmup, cells, "strace mcp",
                            lambda pid, out: ["strace", "-f", "-c", "-o", out, "-p", str(pid)], 1.0)
    counts = {}
    for line in lines:
        p = line.split()
        if len(p) >= 5 and p[0][0].isdigit() and p[-1] != "total":
            counts[p[-1]] = int(p[3]) / cells
    return counts


def switches_per_cell(binary, specs, warmup, cells):
    """perf stat on cellgate mcp (stdio, null kernel) over CELLS warm cells: context switches
    per cell by thread ({"main": n, "zmq I/O": n, "others": n, "all": n}, "others" being the
    runner and the log threads), or None without perf (or when it may not attach)."""
    if not shutil.which("perf"):
        return None
    pid, lines = traced_cells(
        binary, specs, warmup, cells, "perf mcp",
        lambda pid, out: ["perf", "stat", "-x,", "--per-thread", "-e", "context-switches", "-p", str(pid), "-o", out],
        0.5)
    counts = {"main": 0.0, "zmq I/O": 0.0, "others": 0.0}
    for line in lines:
        p = line.split(",")
        if len(p) < 4 or "context-switches" not in p[3] or not p[1].strip().isdigit():
            continue
        comm, _, tid = p[0].strip().rpartition("-")
        group = "main" if tid == str(pid) else "zmq I/O" if comm.startswith("ZMQbg/IO") else "others"
        counts[group] += int(p[1]) / cells
    counts["all"] = sum(counts.values())
    return counts if counts["all"] else None


def build_shim(outdir):
    """pidfd_shim.so (valgrind 3.19 lacks pidfd_open, see pidfd_shim.c), built into OUTDIR."""
    so = os.path.join(outdir, "pidfd_shim.so")
    if not os.path.exists(so):
        subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", so, os.path.join(HERE, "pidfd_shim.c"), "-ldl",
                        "-lpthread"], check=True)
    return so


def callgrind_run(binary, specs, path, warmup, cells, top, outdir):
    os.environ["LD_PRELOAD"] = build_shim(outdir)  # valgrind passes it on to the server only
    try:
        return s_callgrind_run(binary, specs, path, warmup, cells, top, outdir)
    finally:
        del os.environ["LD_PRELOAD"]


def s_callgrind_run(binary, specs, path, warmup, cells, top, outdir):
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s/cg.%%p" % outdir, "--dump-instr=no", binary]
    common = ["--kernelspecs", specs, "--pool", "off"]
    start = time.monotonic()
    if path == "mcp":
        runner = McpStdio(vg + ["mcp"] + common + ["--http-listen", "off"], NULL, "callgrind mcp")
    else:
        runner = ValgrindGateway(vg, common)
    try:
        for _ in range(warmup):
            runner.execute()
        pid = runner.child.proc.pid
        subprocess.run(["callgrind_control", "-z", str(pid)], check=True, capture_output=True)
        for _ in range(cells):
            runner.execute()
        subprocess.run(["callgrind_control", "-d", "bench", str(pid)], check=True, capture_output=True)
        dumps = sorted(glob.glob("%s/cg.%d.*" % (outdir, pid)), key=os.path.getmtime)
        if not dumps:
            raise rt.BenchError("callgrind: no dump for %d in %s" % (pid, outdir))
        dump = dumps[-1]
    finally:
        runner.close()
    total, own, libraries = annotate(dump, binary, top)
    return {"total": total, "per_cell": total / cells, "top": own, "libraries": libraries, "dump": dump,
            "seconds": time.monotonic() - start}


class ValgrindGateway(bg.Gateway):
    """bg.Gateway with the server under valgrind (the binary argument is valgrind's argv)."""

    def __init__(self, vg, common):
        import secrets

        self.token = secrets.token_hex(16)
        self.child = rt.Child(vg + ["mcp", "--http", "127.0.0.1:0", "--gateway-token", self.token] + common,
                              "callgrind gateway")
        self.ks = None
        self.kernel_id = None
        try:
            self.port = rt.http_port(self.child, timeout=120)
            status, body = self.rest("POST", "/api/kernels", {"name": NULL, "env": {}})
            if status != 201:
                raise rt.BenchError("gateway: POST /api/kernels -> %d %r" % (status, body[:500]))
            self.kernel_id = json.loads(body)["id"]
            self.ks = bg.gwclient.KernelSocket("http://127.0.0.1:%d" % self.port, self.kernel_id, self.token,
                                               timeout=START_TIMEOUT)
            self.ks.wait_ready(START_TIMEOUT)
        except BaseException:
            self.close()
            raise


# After callgrind_control -z, the frames that were on each thread's stack (thread and
# actor entry points, main, the loops) show their whole thread's cost as their own: rows
# above ROOT_SHARE of the total are those, not where time goes, and are left out.
ROOT_SHARE = 0.25


def s_rows(text):
    """[(Ir, function, object)] of a callgrind_annotate table."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*?)(?: \[(.*)\])?$", line)
        if m and "PROGRAM TOTALS" not in line:
            rows.append((int(m.group(1).replace(",", "")), m.group(2), m.group(3) or "?"))
    return rows


def annotate(dump, binary, top):
    """(total Ir, top inclusive rows of BINARY's own functions, self Ir per library)."""
    def run(inclusive):
        return subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", "--inclusive=" + inclusive, dump],
                              check=True, capture_output=True, text=True).stdout
    text = run("no")
    total = int(re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
    libraries = {}
    for ir, fn, obj in s_rows(text):
        if ir <= ROOT_SHARE * total:
            name = os.path.basename(obj)
            libraries[name] = libraries.get(name, 0) + ir
    skip = ("main", "(below main)", "cg_serve", "cg_loop_run", "cg_loop_run_once", "cg_runner_actor")
    own = [(ir, fn.split(":", 1)[-1]) for ir, fn, obj in s_rows(run("yes"))
           if obj == binary and fn.split(":", 1)[-1] not in skip]
    return total, own[:top], sorted(libraries.items(), key=lambda kv: -kv[1])


# ---------------------------------------------------------------- report


def report_binary(label, res, floor_p50):
    print("\n== %s" % label)
    if "null" in res:
        s = res["null"]
        print("null kernel, %d cells each, alternating (ms)      p50       p95    bridge p50  bridge p95  server CPU/cell"
              % len(s["F"]))
        names = {"F": "F floor: pyzmq client, host", "M": "M cellgate mcp (stdio)", "H": "H cellgate mcp (HTTP)",
                 "G": "G gateway WebSocket"}
        for key in "FMHG":
            p50, p95 = pct(s[key], 50), pct(s[key], 95)
            if key == "F":
                print("  %-40s %8.3f  %8.3f" % (names[key], p50, p95))
            else:
                cpu = s.get(key + "/cpu")
                print("  %-40s %8.3f  %8.3f  %8.0f µs %8.0f µs  %8s" % (
                    names[key], p50, p95, (p50 - floor_p50) * 1000, (p95 - floor_p50) * 1000,
                    "%.0f µs" % (cpu * 1e6) if cpu is not None else "-"))
    if "ipy" in res:
        s = res["ipy"]
        a, j = pct(s["A"], 50), pct(s["J"], 50)
        print("ipykernel x=1, %d cells each, alternating (ms)    p50       p95" % len(s["A"]))
        print("  %-40s %8.3f  %8.3f" % ("A cellgate mcp (stdio)", a, pct(s["A"], 95)))
        print("  %-40s %8.3f  %8.3f" % ("J jupyter_client (cellgate kernel)", j, pct(s["J"], 95)))
        print("  ratio A/J p50 %.3f   p95 %.3f   (target <= 0.9 at p50)" % (a / j, pct(s["A"], 95) / pct(s["J"], 95)))
    calls = res.get("syscalls")
    if calls:
        top = sorted(calls.items(), key=lambda kv: -kv[1])[:8]
        print("system calls per cell, mcp path, null kernel (strace -f -c): %.0f; %s" % (
            sum(calls.values()), ", ".join("%s %.1f" % kv for kv in top)))
    sw = res.get("switches")
    if sw:
        print("context switches per cell, mcp path, null kernel (perf stat): %.1f; main loop %.1f, ZeroMQ's I/O "
              "thread %.1f, others (runner, log) %.1f" % (sw["all"], sw["main"], sw["zmq I/O"], sw["others"]))
    for path in ("mcp", "gateway"):
        c = res.get("cg_" + path)
        if not c:
            continue
        print("callgrind, %s path, null kernel: %s instructions per cell (%s in all; %s)" % (
            path, "{:,.0f}".format(c["per_cell"]), "{:,}".format(c["total"]), c["dump"]))
        n = max(1, c["cells"])
        print("  self cost per cell by object: " + ", ".join(
            "%s %s" % (lib, "{:,}".format(ir // n)) for lib, ir in c["libraries"][:8]))
        print("  cellgate's functions, inclusive, per cell:")
        for ir, fn in c["top"]:
            print("  %12s  %5.1f%%  %s" % ("{:,}".format(ir // n), 100.0 * ir / max(1, c["total"]), fn))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", action="append", help="cellgate binary; repeat to compare (default: build/cellgate)")
    p.add_argument("--cells", type=int, default=200, help="timed cells per path (default 200)")
    p.add_argument("--warmup", type=int, default=20, help="untimed warm-up cells per path (default 20)")
    p.add_argument("--callgrind-cells", type=int, default=100, help="cells counted under callgrind (default 100)")
    p.add_argument("--top", type=int, default=15, help="functions listed per callgrind profile (default 15)")
    p.add_argument("--skip", default="", help="comma-separated: null, ipykernel, syscalls, switches, callgrind")
    args = p.parse_args()
    binaries = [os.path.abspath(b) for b in (args.bin or [os.path.join(REPO, "build", "cellgate")])]
    skip = set(filter(None, args.skip.split(",")))
    for b in binaries:
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            print("bench: cellgate binary not found or not executable: %s" % b, file=sys.stderr)
            return 2
    specs = write_null_spec(tempfile.mkdtemp(prefix="cg-bench-specs-"))
    outdir = tempfile.mkdtemp(prefix="cg-bench-callgrind-")
    results = {b: {} for b in binaries}
    try:
        if "null" not in skip:
            for b, samples in run_null(binaries, specs, args.warmup, args.cells).items():
                results[b]["null"] = samples
        if "ipykernel" not in skip:
            for b, samples in run_ipykernel_all(binaries, args.warmup, args.cells).items():
                results[b]["ipy"] = samples
        for b in binaries:
            r = results[b]
            if "syscalls" not in skip:
                r["syscalls"] = syscalls_per_cell(b, specs, args.warmup, args.callgrind_cells)
            if "switches" not in skip:
                r["switches"] = switches_per_cell(b, specs, args.warmup, args.callgrind_cells)
            if "callgrind" not in skip:
                for path in ("mcp", "gateway"):
                    c = callgrind_run(b, specs, path, min(args.warmup, 10), args.callgrind_cells, args.top, outdir)
                    c["cells"] = args.callgrind_cells
                    r["cg_" + path] = c
    except rt.BenchError as e:
        print("bench: %s" % e, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
    finally:
        shutil.rmtree(specs, ignore_errors=True)
    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    for b in binaries:
        floor = pct(results[b]["null"]["F"], 50) if "null" in results[b] else 0.0
        report_binary(b, results[b], floor)
    if len(binaries) > 1:
        print("\n== side by side (p50; bridge = path minus the floor's p50)")
        print("  %-34s" % "" + "".join("%16s" % os.path.basename(os.path.dirname(b)) or b for b in binaries))
        rows = []
        if all("null" in results[b] for b in binaries):
            for key, name in (("M", "MCP stdio"), ("H", "MCP HTTP"), ("G", "gateway")):
                rows.append(("bridge µs p50, " + name, [(pct(results[b]["null"][key], 50)
                                                         - pct(results[b]["null"]["F"], 50)) * 1000
                                                        for b in binaries], "%16.0f"))
            for key, name in (("M", "MCP stdio"), ("H", "MCP HTTP"), ("G", "gateway")):
                if all(results[b]["null"].get(key + "/cpu") is not None for b in binaries):
                    rows.append(("server CPU µs/cell, " + name, [results[b]["null"][key + "/cpu"] * 1e6
                                                                 for b in binaries], "%16.0f"))
        if all("ipy" in results[b] for b in binaries):
            rows.append(("ipykernel A/J p50", [pct(results[b]["ipy"]["A"], 50) / pct(results[b]["ipy"]["J"], 50)
                                               for b in binaries], "%16.3f"))
        if all(results[b].get("switches") for b in binaries):
            rows.append(("context switches/cell, mcp", [results[b]["switches"]["all"] for b in binaries], "%16.1f"))
        if all(results[b].get("syscalls") for b in binaries):
            rows.append(("system calls/cell, mcp", [sum(results[b]["syscalls"].values()) for b in binaries], "%16.0f"))
        for path in ("mcp", "gateway"):
            if all("cg_" + path in results[b] for b in binaries):
                rows.append(("instructions/cell, %s" % path, [results[b]["cg_" + path]["per_cell"] for b in binaries],
                             "%16.0f"))
        for name, values, fmt in rows:
            print("  %-34s" % name + "".join(fmt % v for v in values))
    print("callgrind dumps kept in %s" % outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
