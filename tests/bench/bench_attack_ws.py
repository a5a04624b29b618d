#!/usr/bin/python3
"""The gateway's WebSockets under attack (issue 23, point 1): the server's peak memory and
its longest main-loop stall, for comparing two binaries.

    /usr/bin/python3 tests/bench/bench_attack_ws.py [--bin build/cellgate] [--rounds 70] [--print-mb 200]

It starts `cellgate mcp --http 127.0.0.1:0 --gateway-token T` (CELLGATE_POOL=0, a fresh state
dir), starts a notebook kernel through the gateway, and while a pinger sends `GET /api` (with
the token, on one keep-alive connection, from a process of its own) every 10 ms and records the longest gap between two
answers, it runs two phases:

1. print: a well-behaved front end runs a cell printing --print-mb MB and reads it all, while
   4 front ends attached to the same kernel reset their TCP connection once its output
   reaches them;
2. churn: --rounds front ends in turn run a cell that prints a line, waits 0.3 s and prints
   50 KB, and go away once its first line came: a TCP reset, the TCP connection ended
   without a close frame, or a close frame and the socket closed at once.

Then it reads /proc/<pid>: VmHWM (peak RSS; reset with clear_refs before phase 1), the fds
against the count before the attack, and the CPU ticks (utime+stime) the idle server used
over 3 s. One line of figures per run (`RESULT ...`), comparable between binaries.
Only 127.0.0.1 is contacted.
"""

import argparse
import base64
import http.client
import json
import multiprocessing
import os
import re
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRINTING_CELL = 'import time\nprint("started", flush=True)\ntime.sleep(0.3)\nprint("z" * 50000, flush=True)'


class Server:
    def __init__(self, binary, token):
        self.state = tempfile.mkdtemp(prefix="cg-bench-ws-")
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [binary, "mcp", "--state-dir", self.state, "--http", "127.0.0.1:0", "--gateway-token", token],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log,
            env=dict(os.environ, CELLGATE_POOL="0"), start_new_session=True)
        self.port = None
        for _ in range(400):
            self.log.seek(0)
            m = re.search(rb"listening on http://127\.0\.0\.1:(\d+)/", self.log.read())
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not self.port:
            self.stop()
            sys.exit("cellgate did not start")

    def status(self, key):
        with open("/proc/%d/status" % self.proc.pid) as f:
            return int(re.search(r"^%s:\s+(\d+) kB" % key, f.read(), re.M).group(1)) / 1024

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.proc.pid))

    def ticks(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.state, ignore_errors=True)


def ping_loop(port, token, stop, results):
    """GET /api every 10 ms until STOP is set; puts (longest gap, p99 gap, count, failures) in
    RESULTS. A process of its own, so the attackers' Python never delays it."""
    conn = None
    gaps = []
    failures = 0
    last = time.monotonic()
    worst_at = 0.0
    while not stop.is_set():
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            conn.request("GET", "/api", headers={"Authorization": "token " + token})
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                failures += 1
        except (OSError, http.client.HTTPException):
            failures += 1
            conn = None
        now = time.monotonic()
        if not gaps or now - last > max(gaps):
            worst_at = last
        gaps.append(now - last)
        last = now
        time.sleep(0.01)
    gaps.sort()
    results.put((gaps[-1] * 1000, gaps[int(len(gaps) * 0.99)] * 1000, len(gaps), failures, worst_at))


class RawWs:
    """A raw WebSocket to a kernel's channels (legacy JSON framing)."""

    def __init__(self, port, token, kernel_id):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        key = base64.b64encode(secrets.token_bytes(16)).decode()
        self.sock.sendall((
            "GET /api/kernels/%s/channels HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
            "Authorization: token %s\r\n\r\n" % (kernel_id, port, key, token)).encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("closed during the upgrade")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            self.sock.close()
            raise OSError("upgrade refused: " + head.split(b"\r\n")[0].decode())

    def send(self, opcode, payload):
        mask = secrets.token_bytes(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        head += bytes([0x80 | n]) if n < 126 else (bytes([0x80 | 126]) + struct.pack("!H", n) if n < 65536
                                                  else bytes([0x80 | 127]) + struct.pack("!Q", n))
        self.sock.sendall(head + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload)))

    def execute(self, code):
        msg_id = uuid.uuid4().hex
        self.send(1, json.dumps({
            "header": {"msg_id": msg_id, "username": "bench", "session": uuid.uuid4().hex,
                       "msg_type": "execute_request", "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}).encode())
        return msg_id

    def _fill(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise OSError("closed")
            self.buf += chunk

    def recv(self):
        """The next message: (opcode, payload)."""
        self._fill(2)
        opcode, n = self.buf[0] & 15, self.buf[1] & 127
        at = 2
        if n == 126:
            self._fill(4)
            n, at = struct.unpack("!H", self.buf[2:4])[0], 4
        elif n == 127:
            self._fill(10)
            n, at = struct.unpack("!Q", self.buf[2:10])[0], 10
        self._fill(at + n)
        payload, self.buf = self.buf[at:at + n], self.buf[at + n:]
        return opcode, payload

    def wait(self, pred):
        while True:
            opcode, payload = self.recv()
            if opcode == 8:
                raise OSError("closed by the server")
            if opcode == 1 and pred(json.loads(payload)):
                return

    def reset(self):
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def close_now(self):
        self.send(8, struct.pack("!H", 1000))
        self.sock.close()


def gateway(port, token, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers={"Authorization": "token " + token, "Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data) if data else None


def phase_print(srv, token, kernel_id, print_mb):
    attackers = [RawWs(srv.port, token, kernel_id) for _ in range(4)]
    reader = RawWs(srv.port, token, kernel_id)
    time.sleep(1)  # their subscriptions join
    msg_id = reader.execute('import sys\nchunk = "a" * (1 << 20) + "\\n"\nfor i in range(%d):\n'
                            '    sys.stdout.write(chunk)\nsys.stdout.flush()' % print_mb)

    def reset_on_output(ws):
        try:
            ws.wait(lambda m: m.get("msg_type") == "stream")
        except OSError:
            pass
        ws.reset()
    threads = [threading.Thread(target=reset_on_output, args=(ws,)) for ws in attackers]
    for t in threads:
        t.start()
    reader.wait(lambda m: m.get("msg_type") == "status" and m.get("parent_header", {}).get("msg_id") == msg_id
                and m["content"].get("execution_state") == "idle")
    reader.close_now()
    for t in threads:
        t.join()


def phase_churn(srv, token, kernel_id, rounds):
    refused = 0
    for i in range(rounds):
        try:
            ws = RawWs(srv.port, token, kernel_id)
        except OSError:
            refused += 1
            continue
        msg_id = ws.execute(PRINTING_CELL)
        try:
            ws.wait(lambda m: m.get("msg_type") == "stream" and m.get("parent_header", {}).get("msg_id") == msg_id)
        except OSError:
            pass
        if i % 7 == 0:
            ws.close_now()
        elif i % 2:
            ws.sock.shutdown(socket.SHUT_RDWR)
            ws.sock.close()
        else:
            ws.reset()
    return refused


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "cellgate"))
    ap.add_argument("--rounds", type=int, default=70)
    ap.add_argument("--print-mb", type=int, default=200)
    args = ap.parse_args()
    token = secrets.token_hex(16)
    srv = Server(args.bin, token)
    try:
        status, model = gateway(srv.port, token, "POST", "/api/kernels", {"name": "python3", "env": {}})
        if status != 201:
            sys.exit("no kernel: %s %s" % (status, model))
        kernel_id = model["id"]
        warm = RawWs(srv.port, token, kernel_id)
        warm_id = warm.execute("x = 1")
        warm.wait(lambda m: m.get("msg_type") == "execute_reply" and m.get("parent_header", {}).get("msg_id") == warm_id)
        warm.close_now()
        time.sleep(3)
        fds_before = srv.fds()
        with open("/proc/%d/clear_refs" % srv.proc.pid, "w") as f:
            f.write("5")
        stop, results = multiprocessing.Event(), multiprocessing.Queue()
        pinger = multiprocessing.Process(target=ping_loop, args=(srv.port, token, stop, results))
        pinger.start()
        t0 = time.monotonic()
        phase_print(srv, token, kernel_id, args.print_mb)
        hwm_print = srv.status("VmHWM")
        t_print = time.monotonic() - t0
        refused = phase_churn(srv, token, kernel_id, args.rounds)
        attack_s = time.monotonic() - t0
        stop.set()
        max_gap, p99_gap, pings, ping_failures, worst_at = results.get()
        pinger.join()
        time.sleep(5)  # the last cells end, ended connections are freed
        idle0 = srv.ticks()
        time.sleep(3)
        idle_ticks = srv.ticks() - idle0
        print("RESULT bin=%s VmHWM_MB=%.0f (after print phase %.0f) RSS_after_MB=%.0f max_gap_ms=%.0f "
              "p99_gap_ms=%.0f pings=%d ping_failures=%d refused_upgrades=%d/%d fds=%d->%d "
              "idle_ticks_3s=%d attack_s=%.0f (print phase %.0f s; longest gap began at %.1f s)"
              % (args.bin, srv.status("VmHWM"), hwm_print, srv.status("VmRSS"), max_gap, p99_gap, pings,
                 ping_failures, refused, args.rounds, fds_before, srv.fds(), idle_ticks, attack_s, t_print, worst_at - t0))
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
