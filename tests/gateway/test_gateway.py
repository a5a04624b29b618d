#!/usr/bin/python3
"""cellgate's Jupyter Kernel Gateway API (issue 15) against real Jupyter components.

Each test class starts its own `cellgate mcp --http 127.0.0.1:0 --gateway-token T` on a
fresh state dir (CELLGATE_POOL=0; the binary from CELLGATE_BIN, else <repo>/build/cellgate)
and stops it at the end:

- RefusalsTest: the REST and WebSocket refusals straight against cellgate (401, 403, 404,
  400), both Authorization schemes, the kernelspecs and a kernel's model, start to delete;
- TokenFileTest: no --gateway-token: a random token written 0600 to <state>/gateway-token,
  named (never printed) in the `gateway:` line and accepted; the stdio transport's
  --http-listen;
- JupyterServerTest: a real Jupyter Server (`python3 -m jupyter_server --gateway-url=...`)
  driven through its own REST and WebSocket API: print, an error, display_data, input()
  answered, interrupt, restart, the kernel in cellgate's own list, DELETE through it;
- NbclientTest: nbclient executes a notebook through jupyter_server's GatewayKernelManager;
- ExecutionLogTest: jupyter_client's API through that manager's client: a failing cell and
  one the kernel aborts behind it, then 1+1, as the execution log on disk and /metrics
  record them (the aborted one not a success, 1+1's result 2).

The sandboxes are real (runc), so this runs as root, like the e2e tests:
    cd tests/gateway && /usr/bin/python3 -m unittest -v test_gateway
"""

import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import websocket

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwclient  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = "/usr/bin/python3"
START_TIMEOUT = 60.0
KERNEL_START_TIMEOUT = 120.0


def cellgate_binary():
    return os.environ.get("CELLGATE_BIN") or os.path.join(REPO, "build", "cellgate")


def mounts_below(path):
    prefix = path.rstrip("/") + "/"
    found = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                point = line.split(" ")[4]
                if point == path or point.startswith(prefix):
                    found.append(point)
    except OSError:
        pass
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, method, path, body=None, headers=None, timeout=KERNEL_START_TIMEOUT):
    """One HTTP request to 127.0.0.1:port; returns (status, headers dict lower-cased, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            headers = dict(headers or {}, **{"Content-Type": "application/json"})
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def show(method, path, status, body):
    return "%s %s -> %d %s" % (method, path, status, body[:1500].decode("utf-8", "replace"))


class Cellgate:
    """`cellgate mcp --state-dir TMP --http 127.0.0.1:0 ...` (or another transport's args)."""

    def __init__(self, token=None, args=None, stdio=False):
        self.state_dir = tempfile.mkdtemp(prefix="cg-gw-test-")
        self.log_path = os.path.join(tempfile.mkdtemp(prefix="cg-gw-log-"), "stderr.log")
        self.log = open(self.log_path, "wb")
        argv = [cellgate_binary(), "mcp", "--state-dir", self.state_dir]
        argv += ["--http-listen" if stdio else "--http", "127.0.0.1:0"]
        if token is not None:
            argv += ["--gateway-token", token]
        argv += list(args or [])
        env = dict(os.environ, CELLGATE_POOL="0")
        env.pop("CELLGATE_GATEWAY_TOKEN", None)
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stderr=self.log,
            env=env,
            cwd=REPO,
            start_new_session=True,
        )
        self.port = None
        self.gateway_line = None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            text = self.stderr()
            m = re.search(r"^.*gateway: .*--gateway-url=http://127\.0\.0\.1:(\d+)\S*.*$", text, re.M)
            if m:
                self.gateway_line = m.group(0)
                self.port = int(m.group(1))
            if not stdio:
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", text)
                self.port = int(m.group(1)) if m else None
            if self.port and self.gateway_line:
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not self.port:
            tail = self.stderr_tail(60)
            self.stop()
            raise AssertionError("cellgate did not start (%s):\n%s" % (" ".join(argv), tail))
        self.origin = "http://127.0.0.1:%d" % self.port
        self.url = self.origin

    def stderr(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stderr_tail(self, lines=30):
        return "\n".join(self.stderr().splitlines()[-lines:])

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f:
                try:
                    f.close()
                except OSError:
                    pass
        self.log.close()
        if mounts_below(self.state_dir):
            print("cellgate gateway test: %s still has mounts, not removed" % self.state_dir, file=sys.stderr)
        else:
            shutil.rmtree(self.state_dir, ignore_errors=True)
        shutil.rmtree(os.path.dirname(self.log_path), ignore_errors=True)


class JupyterServer:
    """`/usr/bin/python3 -m jupyter_server` with --gateway-url pointing at a cellgate."""

    def __init__(self, gateway_url, gateway_token, extra_env=None):
        self.home = tempfile.mkdtemp(prefix="cg-gw-jupyter-")
        self.token = secrets.token_hex(16)
        self.port = free_port()
        env = dict(os.environ)
        for name in [k for k in env if k.startswith("JUPYTER") or k.startswith("KERNEL_")]:
            env.pop(name)
        env.update(
            HOME=self.home,
            JUPYTER_CONFIG_DIR=os.path.join(self.home, "config"),
            JUPYTER_DATA_DIR=os.path.join(self.home, "data"),
            JUPYTER_RUNTIME_DIR=os.path.join(self.home, "runtime"),
            IPYTHONDIR=os.path.join(self.home, "ipython"),
            JUPYTER_PLATFORM_DIRS="1",
        )
        env.update(extra_env or {})
        root = os.path.join(self.home, "root")
        os.makedirs(root)
        argv = [
            PYTHON,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--allow-root",  # the tests run as root (runc)
            "--ServerApp.token=%s" % self.token,
            "--ServerApp.ip=127.0.0.1",
            "--port=%d" % self.port,
            "--port-retries=0",
            "--ServerApp.root_dir=%s" % root,
            "--gateway-url=%s" % gateway_url,
            "--GatewayClient.auth_token=%s" % gateway_token,
            "--GatewayClient.request_timeout=120",
        ]
        self.log_path = os.path.join(self.home, "jupyter.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     env=env, cwd=root, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                status, _, _ = self.request("GET", "/api/status", timeout=5)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        log = self.log_tail(60)
        self.stop()
        raise AssertionError("jupyter_server did not start:\n%s" % log)

    def headers(self):
        return {"Authorization": "token %s" % self.token}

    def request(self, method, path, body=None, timeout=KERNEL_START_TIMEOUT):
        return request(self.port, method, path, body, self.headers(), timeout)

    def log_tail(self, lines=40):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])

    def stop(self):
        if self.proc.poll() is not None:  # it died on its own: say how
            print("\njupyter_server exited with status %s before the end; its log's tail:\n%s"
                  % (self.proc.returncode, self.log_tail(80)), file=sys.stderr)
        else:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.home, ignore_errors=True)


class GatewayCase(unittest.TestCase):
    """A cellgate per class with a random gateway token."""

    cg = None
    token = None

    @classmethod
    def setUpClass(cls):
        if not os.access(cellgate_binary(), os.X_OK):
            raise unittest.SkipTest("no cellgate binary at %s (build it, or set CELLGATE_BIN)" % cellgate_binary())
        cls.token = secrets.token_hex(16)
        cls.cg = Cellgate(token=cls.token)

    @classmethod
    def tearDownClass(cls):
        if cls.cg:
            cls.cg.stop()
            cls.cg = None

    def gw(self, method, path, body=None, token=True, scheme="token", headers=None, timeout=KERNEL_START_TIMEOUT):
        h = dict(headers or {})
        if token:
            h["Authorization"] = "%s %s" % (scheme, self.token if token is True else token)
        return request(self.cg.port, method, path, body, h, timeout)

    def gw_json(self, method, path, body=None, expect=200):
        status, headers, data = self.gw(method, path, body)
        self.assertEqual(status, expect, show(method, path, status, data) + self.tail())
        return json.loads(data) if data else None

    def tail(self):
        return "\n--- cellgate stderr (tail) ---\n" + self.cg.stderr_tail()

    def start_kernel(self, name="python3"):
        model = self.gw_json("POST", "/api/kernels", {"name": name, "env": {}}, expect=201)
        self.addCleanup(self.gw, "DELETE", "/api/kernels/%s" % model["id"])
        return model


class TokensApartTest(unittest.TestCase):
    """The gateway token and MCP's bearer token (--http-token) open one door each."""

    def test_an_mcp_bearer_token_never_opens_the_gateway(self):
        if not os.access(cellgate_binary(), os.X_OK):
            raise unittest.SkipTest("no cellgate binary at %s" % cellgate_binary())
        gateway, mcp = secrets.token_hex(16), secrets.token_hex(16)
        cg = Cellgate(token=gateway, args=["--http-token", mcp])
        try:
            for scheme in ("token", "Bearer"):
                status, _, data = request(cg.port, "GET", "/api/kernels", None,
                                          {"Authorization": "%s %s" % (scheme, mcp)}, START_TIMEOUT)
                self.assertEqual(status, 401, "the MCP token on the gateway (%s): %d %r" % (scheme, status, data[:300]))
            status, _, data = request(cg.port, "GET", "/api/kernels", None,
                                      {"Authorization": "token %s" % gateway}, START_TIMEOUT)
            self.assertEqual(status, 200, "the gateway token: %d %r" % (status, data[:300]))
            # And the gateway token is no MCP client's.
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
            status, _, data = request(cg.port, "POST", "/mcp", init, {
                "Authorization": "Bearer %s" % gateway, "Accept": "application/json, text/event-stream"}, START_TIMEOUT)
            self.assertEqual(status, 401, "the gateway token on /mcp: %d %r" % (status, data[:300]))
        finally:
            cg.stop()


class GatewayOffTest(unittest.TestCase):
    """--gateway off serves none of the API and makes no token."""

    def test_gateway_off(self):
        if not os.access(cellgate_binary(), os.X_OK):
            raise unittest.SkipTest("no cellgate binary at %s" % cellgate_binary())
        state = tempfile.mkdtemp(prefix="cg-gw-off-")
        env = dict(os.environ, CELLGATE_POOL="0")
        proc = subprocess.Popen([cellgate_binary(), "mcp", "--state-dir", state, "--http", "127.0.0.1:0",
                                 "--gateway", "off"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=env, start_new_session=True)
        try:
            text, port = "", None
            deadline = time.monotonic() + START_TIMEOUT
            while port is None and time.monotonic() < deadline and proc.poll() is None:
                text += os.read(proc.stderr.fileno(), 65536).decode(errors="replace")
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)/", text)
                port = int(m.group(1)) if m else None
            self.assertIsNotNone(port, text)
            self.assertNotIn("gateway:", text)
            status, _, data = request(port, "GET", "/api/kernels", None,
                                      {"Authorization": "token whatever-it-is-0123"}, START_TIMEOUT)
            self.assertEqual(status, 404, data[:300])
            self.assertFalse(os.path.exists(os.path.join(state, "gateway-token")))
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
            shutil.rmtree(state, ignore_errors=True)


class RefusalsTest(GatewayCase):
    """Straight against cellgate: what it refuses and how, and the kernel model."""

    UNKNOWN = "00000000-0000-4000-8000-000000000000"

    def assert_unauthorized(self, status, data, what):
        self.assertEqual(status, 401, "%s: %d %r" % (what, status, data[:500]))
        body = json.loads(data)
        self.assertEqual(body.get("error"), "unauthorized", body)
        self.assertIsInstance(body.get("message"), str)

    def test_gateway_line_names_url_not_token(self):
        self.assertIn("--gateway-url=http://127.0.0.1:%d" % self.cg.port, self.cg.gateway_line)
        self.assertIn("--GatewayClient.auth_token='<the --gateway-token>'", self.cg.gateway_line)
        self.assertNotIn(self.token, self.cg.stderr(), "the gateway token is in the log")

    def test_no_token_is_401(self):
        for path in ("/api/kernels", "/api/kernelspecs", "/api", "/kernelspecs/python3/logo-64x64.png"):
            status, _, data = self.gw("GET", path, token=False)
            self.assert_unauthorized(status, data, "GET %s without a token" % path)
        status, _, data = self.gw("POST", "/api/kernels", {"name": "python3"}, token=False)
        self.assert_unauthorized(status, data, "POST /api/kernels without a token")

    def test_wrong_token_is_401(self):
        for scheme in ("token", "Bearer"):
            status, _, data = self.gw("GET", "/api/kernels", token="not-" + self.token, scheme=scheme)
            self.assert_unauthorized(status, data, "%s with a wrong token" % scheme)
        status, _, data = self.gw("GET", "/api/kernels", token=self.token[:-1], scheme="token")
        self.assert_unauthorized(status, data, "a token one character short")
        status, _, data = self.gw("GET", "/api/kernels", headers={"Authorization": "Basic %s" % self.token}, token=False)
        self.assert_unauthorized(status, data, "an unknown scheme")

    def test_token_and_bearer_both_accepted(self):
        for scheme in ("token", "Bearer"):
            status, _, data = self.gw("GET", "/api/kernels", scheme=scheme)
            self.assertEqual(status, 200, show("GET", "/api/kernels (%s)" % scheme, status, data))
            self.assertIsInstance(json.loads(data), list)

    def test_api_version(self):
        body = self.gw_json("GET", "/api")
        self.assertIn("version", body)

    def test_kernelspecs(self):
        body = self.gw_json("GET", "/api/kernelspecs")
        self.assertEqual(body.get("default"), "python3", body)
        self.assertIn("python3", body["kernelspecs"])
        self.assertIn("javascript", body["kernelspecs"])
        spec = self.gw_json("GET", "/api/kernelspecs/python3")
        self.assertEqual(spec.get("name"), "python3", spec)
        self.assertIn("spec", spec)
        self.assertEqual(spec["spec"].get("language"), "python", spec)
        status, _, data = self.gw("GET", "/api/kernelspecs/no-such-kernel")
        self.assertEqual(status, 404, show("GET", "/api/kernelspecs/no-such-kernel", status, data))
        status, _, data = self.gw("GET", "/kernelspecs/python3/no-such-resource.png")
        self.assertEqual(status, 404, show("GET", "/kernelspecs/python3/no-such-resource.png", status, data))
        status, _, data = self.gw("GET", "/kernelspecs/python3/../../gateway-token")
        self.assertIn(status, (400, 404), show("GET", "/kernelspecs/python3/../../gateway-token", status, data))
        self.assertNotIn(self.token.encode(), data)

    def test_bad_origin_is_403(self):
        for path in ("/api/kernels", "/api/kernelspecs"):
            status, _, data = self.gw("GET", path, headers={"Origin": "http://evil.example"})
            self.assertEqual(status, 403, show("GET", path + " Origin: http://evil.example", status, data))
        status, _, data = self.gw("POST", "/api/kernels", {"name": "python3"}, headers={"Origin": "http://evil.example"})
        self.assertEqual(status, 403, show("POST", "/api/kernels Origin: http://evil.example", status, data))
        # The listener's own origin is fine.
        status, _, data = self.gw("GET", "/api/kernels", headers={"Origin": self.cg.origin})
        self.assertEqual(status, 200, show("GET", "/api/kernels Origin: " + self.cg.origin, status, data))

    def test_unknown_kernel_is_404(self):
        base = "/api/kernels/" + self.UNKNOWN
        for method, path in (("GET", base), ("DELETE", base), ("POST", base + "/interrupt"), ("POST", base + "/restart")):
            status, _, data = self.gw(method, path, body={} if method == "POST" else None)
            self.assertEqual(status, 404, show(method, path, status, data) + self.tail())

    def test_websocket_to_unknown_kernel_refused(self):
        with self.assertRaises(websocket.WebSocketException) as cm:
            ks = gwclient.KernelSocket(self.cg.url, self.UNKNOWN, self.token, timeout=10)
            ks.close()
        status = getattr(cm.exception, "status_code", None)
        if status is not None:
            self.assertEqual(status, 404, repr(cm.exception))

    def test_websocket_without_token_is_401(self):
        model = self.start_kernel()
        for token in (None, "wrong"):
            with self.assertRaises(websocket.WebSocketBadStatusException) as cm:
                ks = gwclient.KernelSocket(self.cg.url, model["id"], token, timeout=10)
                ks.close()
            self.assertEqual(cm.exception.status_code, 401, repr(cm.exception))
        with self.assertRaises(websocket.WebSocketBadStatusException) as cm:
            ks = gwclient.KernelSocket(self.cg.url, model["id"], self.token, timeout=10, origin="http://evil.example")
            ks.close()
        self.assertEqual(cm.exception.status_code, 403, repr(cm.exception))

    def test_message_without_channel_is_shell(self):
        # Jupyter's own channels handler (Jupyter Server's and the Kernel Gateway's) takes a
        # message without `channel` as shell; jupyter_server 1.23.3's GatewayKernelClient
        # (what nbclient uses through a gateway) sends every message that way.
        model = self.start_kernel()
        ks = gwclient.KernelSocket(self.cg.url, model["id"], self.token)
        try:
            msg = ks.new_msg("kernel_info_request", {}, "shell")
            del msg["channel"]
            ks.send(msg)
            deadline = time.monotonic() + 30
            while True:
                try:
                    reply = ks.recv(deadline - time.monotonic())
                except gwclient.GatewayError as e:
                    self.fail("no kernel_info_reply to a message without a channel: %s%s" % (e, self.tail()))
                if reply.get("parent_header", {}).get("msg_id") == msg["header"]["msg_id"] and reply["channel"] == "shell":
                    break
            self.assertEqual(reply["msg_type"], "kernel_info_reply")
        finally:
            ks.close()

    def test_post_bad_json_is_400(self):
        for body in ("{not json", "[]", '{"name": 3}'):
            status, _, data = self.gw("POST", "/api/kernels", body, headers={"Content-Type": "application/json"})
            self.assertEqual(status, 400, show("POST", "/api/kernels " + body, status, data))

    def test_post_unknown_kernelspec_refused(self):
        status, _, data = self.gw("POST", "/api/kernels", {"name": "no-such-kernel"})
        self.assertIn(status, (400, 404), show("POST", "/api/kernels {name: no-such-kernel}", status, data))

    def test_null_name_gets_the_default_kernel(self):
        # Notebook 6.4.12's gateway client sends {"name": null} for a notebook without one.
        for body in ({"name": None, "env": {}}, {"env": {}}):
            model = self.gw_json("POST", "/api/kernels", body, expect=201)
            self.gw("DELETE", "/api/kernels/" + model["id"])
            self.assertEqual(model["name"], "python3", model)

    def test_kernel_model_lifecycle(self):
        model = self.gw_json("POST", "/api/kernels", {"name": "python3", "env": {"KERNEL_USERNAME": "gwtest"}}, expect=201)
        kid = model["id"]
        try:
            for key in ("id", "name", "last_activity", "execution_state", "connections"):
                self.assertIn(key, model)
            self.assertEqual(model["name"], "python3")
            time.strptime(model["last_activity"][:19], "%Y-%m-%dT%H:%M:%S")
            self.assertRegex(model["last_activity"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$")
            self.assertIsInstance(model["connections"], int)
            listed = self.gw_json("GET", "/api/kernels")
            self.assertIn(kid, [k["id"] for k in listed])
            again = self.gw_json("GET", "/api/kernels/" + kid)
            self.assertEqual(again["id"], kid)
            ks = gwclient.KernelSocket(self.cg.url, kid, self.token)
            try:
                ks.wait_ready()
                self.assertEqual(self.gw_json("GET", "/api/kernels/" + kid)["connections"], 1)
                r = ks.execute("print(6 * 7)")
                self.assertEqual(r.status, "ok", r.summary())
                self.assertEqual(r.stdout(), "42\n")
                # shutdown_request over the WebSocket is refused (cellgate closes that
                # WebSocket with 1008 and the reason): the kernel lives on, state and all.
                r = ks.execute("kept = 'state'")
                ks.send(ks.new_msg("shutdown_request", {"restart": False}, "control"))
                time.sleep(1)
            finally:
                ks.close()
            self.assertEqual(self.gw_json("GET", "/api/kernels/" + kid)["id"], kid)
            ks = gwclient.KernelSocket(self.cg.url, kid, self.token)
            try:
                r = ks.execute("print(kept)")
                self.assertEqual(r.stdout(), "state\n", r.summary())
            finally:
                ks.close()
        finally:
            status, _, data = self.gw("DELETE", "/api/kernels/" + kid)
        self.assertEqual(status, 204, show("DELETE", "/api/kernels/" + kid, status, data))
        status, _, data = self.gw("GET", "/api/kernels/" + kid)
        self.assertEqual(status, 404, show("GET", "/api/kernels/%s after DELETE" % kid, status, data))
        self.assertNotIn(kid, [k["id"] for k in self.gw_json("GET", "/api/kernels")])


ECHO_TARGET = """
def _gw_echo(comm, open_msg):
    def reply(msg):
        bufs = [bytes(b) for b in msg['buffers']]
        comm.send({'sizes': [len(b) for b in bufs]}, buffers=[b[::-1] for b in bufs])
    comm.on_msg(reply)
    reply(open_msg)
get_ipython().kernel.comm_manager.register_target('gw_echo', _gw_echo)
"""


class ProtocolTest(GatewayCase):
    """The WebSocket's framings and fan-out, straight against cellgate, on one kernel."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        status, _, data = request(cls.cg.port, "POST", "/api/kernels", {"name": "python3"},
                                  {"Authorization": "token " + cls.token})
        if status != 201:
            cls.tearDownClass()
            raise AssertionError(show("POST", "/api/kernels", status, data))
        cls.kid = json.loads(data)["id"]

    def socket(self, protocol="legacy"):
        ks = gwclient.KernelSocket(self.cg.url, self.kid, self.token, protocol=protocol)
        self.addCleanup(ks.close)
        ks.wait_ready()
        return ks

    def wait_for(self, ks, pred, what, timeout=20):
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            try:
                m = ks.recv(deadline - time.monotonic())
            except gwclient.GatewayError as e:
                self.fail("%s: %s; seen %s%s" % (what, e, [x.get("msg_type") for x in seen], self.tail()))
            if pred(m):
                return m
            seen.append(m)

    def check_buffers(self, protocol):
        ks = self.socket(protocol)
        r = ks.execute(ECHO_TARGET)
        self.assertEqual(r.status, "ok", r.summary())
        comm_id = secrets.token_hex(8)
        opening = ks.new_msg("comm_open", {"comm_id": comm_id, "target_name": "gw_echo", "data": {}}, "shell")
        opening["buffers"] = [b"abc123", bytes(range(256)) * 4]
        ks.send(opening)

        def echo_of(m):
            return m.get("msg_type") == "comm_msg" and m["content"].get("comm_id") == comm_id

        m = self.wait_for(ks, echo_of, "the comm's answer to comm_open with buffers")
        self.assertEqual(m["content"]["data"], {"sizes": [6, 1024]})
        self.assertEqual([bytes(b) for b in m["buffers"]], [b"321cba", (bytes(range(256)) * 4)[::-1]])
        message = ks.new_msg("comm_msg", {"comm_id": comm_id, "data": {}}, "shell")
        message["buffers"] = [b"\x00\xff" * 5000]
        ks.send(message)
        m = self.wait_for(ks, echo_of, "the comm's answer to comm_msg with a buffer")
        self.assertEqual(m["content"]["data"], {"sizes": [10000]})
        self.assertEqual([bytes(b) for b in m["buffers"]], [b"\xff\x00" * 5000])

    def test_buffers_both_ways_legacy_binary(self):
        self.check_buffers("legacy")

    def test_v1_subprotocol(self):
        ks = self.socket("v1")
        self.assertEqual(ks.ws.getsubprotocol(), gwclient.V1)
        r = ks.execute("print('over v1')")
        self.assertEqual(r.stdout(), "over v1\n", r.summary())
        self.check_buffers("v1")

    def test_legacy_without_subprotocol(self):
        ks = self.socket()
        self.assertIn(ks.ws.getsubprotocol(), (None, ""))
        r = ks.execute("print('legacy')")
        self.assertEqual(r.stdout(), "legacy\n", r.summary())

    def test_iopub_to_every_connection_input_to_the_sender(self):
        a, b = self.socket(), self.socket()
        self.assertGreaterEqual(self.gw_json("GET", "/api/kernels/" + self.kid)["connections"], 2)
        r = a.execute("print('to everyone')")
        self.assertEqual(r.stdout(), "to everyone\n", r.summary())
        m = self.wait_for(b, lambda m: m.get("msg_type") == "stream" and m["parent_header"].get("msg_id") == r.msg_id,
                          "the other connection's copy of the stream")
        self.assertEqual(m["content"]["text"], "to everyone\n")
        r = a.execute("print('hi', input('name? '))", on_input=lambda prompt, password: "only a")
        self.assertEqual(r.stdout(), "hi only a\n", r.summary())
        m = self.wait_for(b, lambda m: m.get("msg_type") == "stream" and m["parent_header"].get("msg_id") == r.msg_id,
                          "the other connection's copy of the answer's stream")
        b.pending = []
        seen = []
        while True:
            try:
                seen.append(b.recv(1.0))
            except gwclient.GatewayError:
                break
        self.assertNotIn("input_request", [x.get("msg_type") for x in seen], "input_request went to another connection")

    @classmethod
    def tearDownClass(cls):
        if cls.cg and getattr(cls, "kid", None):
            request(cls.cg.port, "DELETE", "/api/kernels/" + cls.kid, headers={"Authorization": "token " + cls.token})
        super().tearDownClass()


class TokenFileTest(unittest.TestCase):
    """No --gateway-token: a random one, 0600 in the state dir, named in the log (never its value) and accepted."""

    def setUp(self):
        if not os.access(cellgate_binary(), os.X_OK):
            self.skipTest("no cellgate binary at %s" % cellgate_binary())

    def check_token_file(self, cg):
        path = os.path.join(cg.state_dir, "gateway-token")
        self.assertTrue(os.path.isfile(path), "no %s\n%s" % (path, cg.stderr_tail()))
        st = os.lstat(path)
        self.assertTrue(stat.S_ISREG(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600, oct(st.st_mode))
        with open(path) as f:
            token = f.read().strip()
        self.assertGreaterEqual(len(token), 16, "a short token: %r" % token)
        self.assertIn('--GatewayClient.auth_token="$(cat %s)"' % path, cg.gateway_line)
        self.assertNotIn(token, cg.stderr(), "the gateway token is in the log")
        status, _, data = request(cg.port, "GET", "/api/kernelspecs", headers={"Authorization": "token " + token})
        self.assertEqual(status, 200, show("GET", "/api/kernelspecs", status, data))
        status, _, data = request(cg.port, "GET", "/api/kernelspecs", headers={"Authorization": "token x" + token})
        self.assertEqual(status, 401, show("GET", "/api/kernelspecs (wrong token)", status, data))
        return token

    def test_generated_token_written_0600(self):
        cg = Cellgate(token=None)
        try:
            first = self.check_token_file(cg)
        finally:
            cg.stop()
        cg = Cellgate(token=None)
        try:
            second = self.check_token_file(cg)
        finally:
            cg.stop()
        self.assertNotEqual(first, second, "two fresh state dirs got the same token")

    def test_stdio_transport_with_http_listen(self):
        token = secrets.token_hex(16)
        cg = Cellgate(token=token, stdio=True)
        try:
            self.assertNotIn(token, cg.stderr(), "the gateway token is in the log")
            status, _, data = request(cg.port, "GET", "/api/kernelspecs", headers={"Authorization": "Bearer " + token})
            self.assertEqual(status, 200, show("GET", "/api/kernelspecs", status, data))
            status, _, data = request(cg.port, "GET", "/api/kernelspecs")
            self.assertEqual(status, 401, show("GET", "/api/kernelspecs (no token)", status, data))
            self.assertFalse(os.path.exists(os.path.join(cg.state_dir, "gateway-token")),
                             "a given token is not written to the state dir")
        finally:
            cg.stop()


class JupyterServerTest(GatewayCase):
    """A real Jupyter Server with --gateway-url: its own REST and WebSocket API."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.js = JupyterServer(cls.cg.url, cls.token)
        except BaseException:
            super().tearDownClass()
            raise
        try:
            cls.kernel = cls.js_start_kernel()
            cls.ks = cls.js_socket(cls.kernel["id"])
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "ks", None):
            cls.ks.close()
        if getattr(cls, "js", None):
            cls.js.stop()
            cls.js = None
        super().tearDownClass()

    @classmethod
    def js_start_kernel(cls):
        try:
            status, _, data = cls.js.request("POST", "/api/kernels", {"name": "python3"})
        except OSError as e:
            raise AssertionError("POST (jupyter server) /api/kernels: %r (jupyter_server %s)%s"
                                 % (e, "running" if cls.js.proc.poll() is None
                                    else "exited with %s" % cls.js.proc.returncode, cls.logs_of())) from e
        if status != 201:
            raise AssertionError("%s\n--- jupyter server ---\n%s\n--- cellgate ---\n%s"
                                 % (show("POST", "(jupyter server) /api/kernels", status, data),
                                    cls.js.log_tail(), cls.cg.stderr_tail()))
        return json.loads(data)

    @classmethod
    def js_socket(cls, kernel_id):
        try:
            ks = gwclient.KernelSocket("http://127.0.0.1:%d" % cls.js.port, kernel_id, cls.js.token)
            ks.wait_ready()
        except Exception as e:
            raise AssertionError("no WebSocket to kernel %s through Jupyter Server: %r (jupyter_server %s)%s"
                                 % (kernel_id, e, "running" if cls.js.proc.poll() is None
                                    else "exited with %s" % cls.js.proc.returncode, cls.logs_of())) from e
        return ks

    @classmethod
    def logs_of(cls):
        return "\n--- jupyter server (tail) ---\n%s\n--- cellgate stderr (tail) ---\n%s" % (
            cls.js.log_tail(), cls.cg.stderr_tail())

    def logs(self):
        return self.logs_of()

    def test_print_is_a_stream(self):
        r = self.ks.execute("print('hello from the gateway')")
        self.assertEqual(r.status, "ok", r.summary())
        self.assertEqual(r.stdout(), "hello from the gateway\n", r.summary())
        self.assertIn("busy", [m["content"].get("execution_state") for m in r.of_type("status")])
        r = self.ks.execute("6 * 7")
        results = r.of_type("execute_result")
        self.assertEqual(len(results), 1, r.summary())
        self.assertEqual(results[0]["content"]["data"]["text/plain"], "42")

    def test_error(self):
        r = self.ks.execute("1 / 0")
        self.assertEqual(r.status, "error", r.summary())
        self.assertEqual(r.reply["content"].get("ename"), "ZeroDivisionError")
        errors = r.of_type("error")
        self.assertEqual(len(errors), 1, r.summary())
        self.assertEqual(errors[0]["content"]["ename"], "ZeroDivisionError")
        self.assertIsInstance(errors[0]["content"]["traceback"], list)
        r = self.ks.execute("print('after the error')")
        self.assertEqual(r.stdout(), "after the error\n", r.summary())

    def test_display_data(self):
        r = self.ks.execute("import IPython.display as d\nd.display(d.HTML('<b>x</b>'))")
        self.assertEqual(r.status, "ok", r.summary())
        shown = r.of_type("display_data")
        self.assertEqual(len(shown), 1, r.summary())
        self.assertEqual(shown[0]["content"]["data"].get("text/html"), "<b>x</b>", r.summary())

    def test_input_answered(self):
        prompts = []

        def answer(prompt, password):
            prompts.append((prompt, password))
            return "gateway user"

        r = self.ks.execute("name = input('who? ')\nprint('hi', name)", on_input=answer, timeout=60)
        self.assertEqual(r.status, "ok", r.summary())
        self.assertEqual(prompts, [("who? ", False)])
        self.assertIn("hi gateway user\n", r.stdout(), r.summary())

    def test_interrupt(self):
        done = {}

        def run():
            try:
                done["result"] = self.ks.execute("import time\ntime.sleep(60)", timeout=45)
            except Exception as e:  # reported by the main thread
                done["error"] = e

        t = threading.Thread(target=run)
        t.start()
        time.sleep(2)  # well into the sleep
        t0 = time.monotonic()
        status, _, data = self.js.request("POST", "/api/kernels/%s/interrupt" % self.kernel["id"], {})
        self.assertEqual(status, 204, show("POST", "(jupyter server) interrupt", status, data) + self.logs())
        t.join(50)
        self.assertFalse(t.is_alive())
        self.assertNotIn("error", done, "%r%s" % (done.get("error"), self.logs()))
        r = done["result"]
        self.assertLess(time.monotonic() - t0, 30, "the interrupt took until the sleep ended")
        self.assertEqual(r.status, "error", r.summary())
        self.assertEqual(r.reply["content"].get("ename"), "KeyboardInterrupt", r.summary())
        r = self.ks.execute("print('after the interrupt')")
        self.assertEqual(r.stdout(), "after the interrupt\n", r.summary())

    def test_in_cellgates_list(self):
        listed = self.gw_json("GET", "/api/kernels")
        self.assertIn(self.kernel["id"], [k["id"] for k in listed], listed)
        status, _, data = self.js.request("GET", "/api/kernels")
        self.assertEqual(status, 200, show("GET", "(jupyter server) /api/kernels", status, data))
        self.assertIn(self.kernel["id"], [k["id"] for k in json.loads(data)])
        status, _, data = self.js.request("GET", "/api/kernelspecs")
        self.assertEqual(status, 200, show("GET", "(jupyter server) /api/kernelspecs", status, data))
        specs = json.loads(data)
        self.assertEqual(specs.get("default"), "python3")
        self.assertIn("javascript", specs["kernelspecs"])

    def test_restart_loses_state(self):
        kernel = self.js_start_kernel()
        kid = kernel["id"]
        ks = self.js_socket(kid)
        try:
            r = ks.execute("restart_var = 1234\nprint(restart_var)")
            self.assertEqual(r.stdout(), "1234\n", r.summary())
            status, _, data = self.js.request("POST", "/api/kernels/%s/restart" % kid, {})
            self.assertEqual(status, 200, show("POST", "(jupyter server) restart", status, data) + self.logs())
            self.assertEqual(json.loads(data)["id"], kid)
            # The same WebSocket carries on (as a notebook page's does); the state is gone.
            ks.wait_ready()
            r = ks.execute("print('restart_var' in globals())")
            self.assertEqual(r.stdout(), "False\n", r.summary())
        finally:
            ks.close()
        # A WebSocket opened afterwards sees the same (restarted) kernel.
        ks = self.js_socket(kid)
        try:
            r = ks.execute("print('restart_var' in globals())")
            self.assertEqual(r.stdout(), "False\n", r.summary())
        finally:
            ks.close()
        self.delete_through_jupyter(kid)

    def test_zz_delete_through_jupyter_server(self):
        kernel = self.js_start_kernel()
        self.assertIn(kernel["id"], [k["id"] for k in self.gw_json("GET", "/api/kernels")])
        self.delete_through_jupyter(kernel["id"])

    def delete_through_jupyter(self, kid):
        status, _, data = self.js.request("DELETE", "/api/kernels/" + kid)
        self.assertEqual(status, 204, show("DELETE", "(jupyter server) /api/kernels/" + kid, status, data) + self.logs())
        status, _, data = self.gw("GET", "/api/kernels/" + kid)
        self.assertEqual(status, 404, show("GET", "(cellgate) /api/kernels/%s after DELETE" % kid, status, data))
        self.assertNotIn(kid, [k["id"] for k in self.gw_json("GET", "/api/kernels")])


def use_gateway_client(case):
    """Points jupyter_server's GatewayClient (what its GatewayKernelManager uses) at the
    cellgate server of CASE, a GatewayCase, until the test ends."""
    from jupyter_server.gateway import managers
    from jupyter_server.gateway.gateway_client import GatewayClient

    gc = GatewayClient.instance()
    gc.url = case.cg.url
    gc.auth_token = case.token
    gc.request_timeout = 120.0
    # jupyter_server 1.23.3's GatewayKernelClient opens its WebSocket without the
    # GatewayClient's headers (only Jupyter Server's own proxy sends them): give it the
    # Authorization header the gateway asks for.
    real_create = managers.websocket.create_connection

    def create_connection(url, **kw):
        kw.setdefault("header", ["Authorization: token %s" % case.token])
        return real_create(url, **kw)

    managers.websocket.create_connection = create_connection
    case.addCleanup(setattr, managers.websocket, "create_connection", real_create)
    case.addCleanup(GatewayClient.clear_instance)


class NbclientTest(GatewayCase):
    """nbclient runs a notebook through jupyter_server's GatewayKernelManager."""

    def test_notebook_through_gateway(self):
        import nbformat
        from jupyter_server.gateway import managers
        from nbclient import NotebookClient

        use_gateway_client(self)
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("total = sum(range(10))\nprint('total', total)"),
            nbformat.v4.new_code_cell("import IPython.display as d\nd.display(d.Markdown('**bold**'))\ntotal * 2"),
            nbformat.v4.new_code_cell("import sys\nprint(sys.version_info[0])"),
        ]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        # nbclient makes its own GatewayKernelManager, so it owns it: it stops the client's
        # channels and shuts the kernel down (DELETE through the gateway) when done.
        client = NotebookClient(nb, kernel_manager_class=managers.GatewayKernelManager, timeout=60,
                                startup_timeout=120, kernel_name="python3")
        before = {k["id"] for k in self.gw_json("GET", "/api/kernels")}
        try:
            client.execute()
        except Exception as e:
            raise AssertionError("nbclient failed: %r%s" % (e, self.tail())) from e
        nbformat.validate(nb)
        out0, out1, out2 = (c.outputs for c in nb.cells)
        # A print may reach the notebook as more than one stream message (ipykernel flushes
        # on a timer; on a loaded machine "3" and "\n" can come apart): compare the text.
        def printed(outputs):
            self.assertEqual({o.output_type for o in outputs}, {"stream"}, outputs)
            return "".join(o["text"] for o in outputs)
        self.assertEqual(printed(out0), "total 45\n", out0)
        self.assertEqual([o.output_type for o in out1], ["display_data", "execute_result"], out1)
        self.assertEqual(out1[0]["data"].get("text/markdown"), "**bold**")
        self.assertEqual(out1[1]["data"]["text/plain"], "90")
        self.assertEqual(out1[1]["execution_count"], 2)
        self.assertEqual(printed(out2), "3\n", out2)
        # nbclient shut its kernel down through the gateway (DELETE) when done.
        after = {k["id"] for k in self.gw_json("GET", "/api/kernels")}
        self.assertEqual(after - before, set(), "nbclient's kernel is still listed")


class ExecutionLogTest(GatewayCase):
    """Jupyter's own client (jupyter_server's GatewayKernelManager and GatewayKernelClient,
    jupyter_client's API) runs cells through the gateway; the execution log on disk and
    /metrics record them as they ended: a cell the kernel aborted because the one before it
    failed (stop_on_error) is not a success, and `1+1`'s entry holds its result, 2."""

    def admin_get(self, path):
        with open(os.path.join(self.cg.state_dir, "admin-token")) as f:
            admin = f.read().strip()
        status, _, data = request(self.cg.port, "GET", path, headers={"Authorization": "Bearer %s" % admin})
        self.assertEqual(status, 200, show("GET", path, status, data) + self.tail())
        return data.decode("utf-8")

    def runs(self, status):
        """cellgate_runs_total{status="STATUS"} (0 when absent)."""
        key = 'cellgate_runs_total{status="%s"} ' % status
        for line in self.admin_get("/metrics").splitlines():
            if line.startswith(key):
                return float(line[len(key):])
        return 0

    def logged(self, code, timeout=60):
        """The gateway entry of CODE in the day's executions file, once the server wrote it."""
        logs = os.path.join(self.cg.state_dir, "logs")
        deadline = time.monotonic() + timeout
        while True:
            for name in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
                if name.startswith("executions-") and name.endswith(".jsonl"):
                    with open(os.path.join(logs, name)) as f:
                        for line in f:
                            entry = json.loads(line)
                            if entry.get("tool") == "gateway" and entry.get("code") == code:
                                return entry
            if time.monotonic() > deadline:
                raise AssertionError("no gateway entry for %r in %s%s" % (code, logs, self.tail()))
            time.sleep(0.1)

    async def run_cells(self):
        from jupyter_server.gateway.managers import GatewayKernelManager

        km = GatewayKernelManager()
        await km.start_kernel(kernel_name="python3")
        kc = km.client()
        await kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=120)
            # The failing cell and the one queued behind it go out at once, as a notebook's
            # "run all" sends them; the kernel aborts the second.
            failing = kc.execute("import time\ntime.sleep(1)\nraise ValueError('gateway log boom')", stop_on_error=True)
            queued = kc.execute("print('queued behind the boom')", stop_on_error=True)
            replies = await self.until_done(kc, [failing, queued])
            value = kc.execute("1+1")
            replies.update(await self.until_done(kc, [value]))
            return replies[failing], replies[queued], replies[value]
        finally:
            kc.stop_channels()
            await km.shutdown_kernel(now=True)

    async def until_done(self, kc, msg_ids, timeout=120):
        """The execute_reply content of each of MSG_IDS, once it and its idle status came."""
        replies, idle = {}, set()
        deadline = time.monotonic() + timeout
        while len(replies) < len(msg_ids) or len(idle) < len(msg_ids):
            left = deadline - time.monotonic()
            self.assertGreater(left, 0, "replies %s, idle %s%s" % (replies, idle, self.tail()))
            for get, channel in ((kc.get_shell_msg, "shell"), (kc.get_iopub_msg, "iopub")):
                try:
                    msg = await get(timeout=0.2)
                except Exception:  # queue.Empty
                    continue
                parent = msg.get("parent_header", {}).get("msg_id")
                if parent not in msg_ids:
                    continue
                if channel == "shell" and msg["msg_type"] == "execute_reply":
                    replies[parent] = msg["content"]
                elif msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                    idle.add(parent)
        return replies

    def test_aborted_cell_and_result_in_the_log(self):
        import asyncio

        use_gateway_client(self)
        success, error, setup = self.runs("success"), self.runs("error"), self.runs("setup_error")
        failing, queued, value = asyncio.run(self.run_cells())
        self.assertEqual(failing["status"], "error", failing)
        self.assertEqual(queued["status"], "aborted", "the kernel aborted the queued cell: %s" % queued)
        self.assertEqual(value["status"], "ok", value)

        entry = self.logged("import time\ntime.sleep(1)\nraise ValueError('gateway log boom')")
        self.assertEqual(entry["status"], "failed", entry)
        self.assertIn("ValueError: gateway log boom", entry.get("error_message") or "", entry)
        entry = self.logged("print('queued behind the boom')")
        self.assertNotEqual(entry["status"], "success", "an aborted cell is not a success: %s" % entry)
        self.assertIn("aborted", entry.get("error_message") or "", entry)
        self.assertEqual(entry["stdout"], "", entry)
        entry = self.logged("1+1")
        self.assertEqual(entry["status"], "success", entry)
        self.assertEqual(entry.get("result"), "2", "1+1's entry holds its result: %s" % entry)

        self.assertEqual(self.runs("success") - success, 1, "only 1+1 counts as a success")
        self.assertEqual(self.runs("error") - error, 1, "the failing cell counts as an error")
        self.assertEqual(self.runs("setup_error") - setup, 1, "the aborted cell did not run")


if __name__ == "__main__":
    unittest.main()
