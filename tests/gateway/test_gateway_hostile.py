#!/usr/bin/python3
"""What a real Jupyter Server does to an agent's kernel it opened (issue 23, point 12).

Jupyter Server 1.23.3 opens an agent's kernel through the gateway (kernelspec
`attach-<kernel id>`, or KERNEL_ID in its own environment, which GatewayClient forwards) and,
at its own shutdown, sends DELETE for every kernel it knows. That DELETE must look like a
successful shutdown to it (else it raises and never exits), while the kernel and the agent's
state live on: the front end only detached.

The agent is an MCP client on cellgate's stdio (`cellgate mcp --http-listen 127.0.0.1:0`):
    cd tests/gateway && /usr/bin/python3 -m unittest -v test_gateway_hostile
"""

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_gateway import Cellgate, JupyterServer, cellgate_binary, request, show  # noqa: E402

# How long Jupyter Server may take to stop after SIGTERM before it counts as hung (it stops
# in about a second; on the hang it never does).
STOP_WAIT_S = 60
CALL_TIMEOUT_S = 180


class Agent:
    """An MCP client speaking JSON lines on a stdio cellgate's stdin and stdout."""

    def __init__(self, cg):
        self.cg = cg
        self.next_id = 0
        self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "gateway-hostile", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.cg.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.cg.proc.stdin.flush()

    def call(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:  # notifications and logs come first; the answer has our id
            line = self.cg.proc.stdout.readline()
            if not line:
                raise AssertionError("cellgate closed its stdout:\n" + self.cg.stderr_tail())
            message = json.loads(line)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise AssertionError("%s: %s" % (method, message["error"]))
                return message["result"]

    def run(self, session_id, code):
        result = self.call("tools/call", {"name": "execute_code", "arguments": {
            "language": "python", "session_id": session_id, "code": code}})
        return result["structuredContent"]


class JupyterServerShutdownTest(unittest.TestCase):
    """Jupyter Server opens an agent's kernel, then stops: it exits, the agent's state stays."""

    @classmethod
    def setUpClass(cls):
        if not os.access(cellgate_binary(), os.X_OK):
            raise unittest.SkipTest("no cellgate binary at %s (build it, or set CELLGATE_BIN)" % cellgate_binary())
        cls.token = secrets.token_hex(16)
        cls.cg = Cellgate(token=cls.token, stdio=True)
        cls.agent = Agent(cls.cg)

    @classmethod
    def tearDownClass(cls):
        cls.cg.stop()

    def agent_kernel(self, session_id, value):
        out = self.agent.run(session_id, "kept = %d" % value)
        self.assertEqual(out["status"], "success", out)
        self.assertTrue(out.get("kernel_id"), out)
        return out["kernel_id"]

    def open_then_stop(self, kernel_id, name, extra_env=None):
        """Opens KERNEL_ID through a Jupyter Server (kernelspec NAME), runs nothing, and stops
        that server with SIGTERM; returns its exit status, or None when it hung (killed)."""
        js = JupyterServer(self.cg.url, self.token, extra_env=extra_env)
        try:
            status, _, data = js.request("POST", "/api/kernels", {"name": name})
            self.assertEqual(status, 201, show("POST", "/api/kernels", status, data) + "\n" + js.log_tail())
            self.assertEqual(json.loads(data)["id"], kernel_id, "Jupyter Server opened another kernel")
            js.proc.send_signal(signal.SIGTERM)
            try:
                return js.proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                print("\njupyter_server hung at shutdown; its log's tail:\n%s" % js.log_tail(30), file=sys.stderr)
                os.killpg(js.proc.pid, signal.SIGKILL)
                js.proc.wait()
                return None
        finally:
            if js.proc.poll() is None:
                js.stop()
            else:  # stopped as asked
                js.log.close()
                shutil.rmtree(js.home, ignore_errors=True)

    def assert_kept(self, session_id, kernel_id, value):
        status, _, data = request(self.cg.port, "GET", "/api/kernels/%s" % kernel_id, None,
                                  {"Authorization": "token %s" % self.token})
        self.assertEqual(status, 200, "the agent's kernel is gone: " + show("GET", "kernel", status, data))
        out = self.agent.run(session_id, "print(kept)")
        self.assertEqual(out["stdout"], "%d\n" % value, out)
        self.assertFalse(out["kernel_restarted"], out)

    def test_stop_after_attach_by_kernelspec(self):
        kernel_id = self.agent_kernel("sess_gwhostile01", 41)
        code = self.open_then_stop(kernel_id, "attach-%s" % kernel_id)
        self.assertIsNotNone(code, "Jupyter Server hung at shutdown (it got no success for its DELETE)")
        self.assert_kept("sess_gwhostile01", kernel_id, 41)

    def test_stop_after_attach_by_kernel_id_env(self):
        kernel_id = self.agent_kernel("sess_gwhostile02", 43)
        code = self.open_then_stop(kernel_id, "python3", extra_env={"KERNEL_ID": kernel_id})
        self.assertIsNotNone(code, "Jupyter Server hung at shutdown (it got no success for its DELETE)")
        self.assert_kept("sess_gwhostile02", kernel_id, 43)


if __name__ == "__main__":
    unittest.main()
