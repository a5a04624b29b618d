#!/usr/bin/python3
"""The Jupyter command cellgate prints at start-up works as printed (issue 25).

A stdio `cellgate mcp` on a fresh state dir with no --gateway-token (so its token is made
and kept in <state>/gateway-token, as after the README's set-up) prints a `gateway:` line.
The test checks that the line names the token's file and that the token itself is nowhere
in the log, then runs the printed command through bash exactly as printed, with only the
notebook's own listening and browser options appended (a free port, its own token, no
browser), and checks that the notebook reached the gateway: a kernel started through the
notebook's REST API is a kernel cellgate lists, and it runs code. AsUserTest does the same
with cellgate and the notebook run as the normal user scripts/setup.sh test makes: the
token's file is under their own state dir ($XDG_STATE_HOME/cellgate), without --allow-root.

The sandboxes are real (runc) and the notebook is Debian's jupyter-notebook (scripts/setup.sh
serve installs it):
    cd tests/gateway && /usr/bin/python3 -m unittest -v test_gateway_notebook
"""

import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwclient  # noqa: E402
from test_gateway import KERNEL_START_TIMEOUT, START_TIMEOUT, Cellgate, cellgate_binary, free_port, request  # noqa: E402


class PrintedCommandTest(unittest.TestCase):
    def setUp(self):
        if not os.access(cellgate_binary(), os.X_OK):
            self.skipTest("no cellgate binary at %s" % cellgate_binary())
        if not shutil.which("bash"):
            self.skipTest("no bash")
        self.cg = Cellgate(token=None, stdio=True)
        self.addCleanup(self.cg.stop)
        self.notebook = None

    def stop_notebook(self):
        if self.notebook and self.notebook.poll() is None:
            self.notebook.send_signal(signal.SIGTERM)
            try:
                self.notebook.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.notebook.pid, signal.SIGKILL)
                self.notebook.wait()

    def gateway_port(self):
        return self.cg.port

    def gateway_tail(self):
        return self.cg.stderr_tail()

    def printed_command(self):
        m = re.search(r"gateway: (.*)$", self.cg.gateway_line)
        self.assertTrue(m, self.cg.gateway_line)
        return m.group(1)

    def start_notebook(self, command, home, prefix=()):
        port = free_port()
        token = secrets.token_hex(16)
        root = os.path.join(home, "root")
        os.makedirs(root)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "KERNEL_"))}
        env.update(HOME=home, JUPYTER_CONFIG_DIR=os.path.join(home, "config"),
                   JUPYTER_DATA_DIR=os.path.join(home, "data"),
                   JUPYTER_RUNTIME_DIR=os.path.join(home, "runtime"),
                   IPYTHONDIR=os.path.join(home, "ipython"), BROWSER="true")
        # The command as printed; only the notebook's own listener and browser are added.
        line = "%s --no-browser --ip=127.0.0.1 --port=%d --port-retries=0 --NotebookApp.token=%s" \
               " --notebook-dir=%s --GatewayClient.request_timeout=120" % (command, port, token, root)
        log_path = os.path.join(home, "notebook.log")
        log = open(log_path, "wb")
        self.addCleanup(log.close)
        self.notebook = subprocess.Popen(list(prefix) + ["bash", "-c", line], stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=log, env=env, cwd=root, start_new_session=True)
        self.addCleanup(self.stop_notebook)
        self.notebook_log = log_path
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline and self.notebook.poll() is None:
            try:
                status, _, _ = request(port, "GET", "/api/status", headers={"Authorization": "token " + token},
                                       timeout=5)
                if status == 200:
                    return port, token
            except OSError:
                pass
            time.sleep(0.2)
        self.fail("the printed command did not start a notebook (%s, exit %s):\n%s"
                  % (line, self.notebook.poll(), self.log_tail()))

    def log_tail(self):
        with open(self.notebook_log, "rb") as f:
            return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-40:])

    def test_printed_command_opens_a_notebook_on_the_gateway(self):
        token_file = os.path.join(self.cg.state_dir, "gateway-token")
        with open(token_file) as f:
            gateway_token = f.read().strip()
        command = self.printed_command()
        self.assertNotIn(gateway_token, self.cg.stderr(), "the gateway token is in the log")
        self.assertIn(token_file, command, "the printed command does not name the token's file")
        self.assertIn("--gateway-url=http://127.0.0.1:%d" % self.cg.port, command)
        if os.geteuid() == 0:
            self.assertIn("--allow-root", command, "the notebook refuses root without --allow-root")

        home = tempfile.mkdtemp(prefix="cg-gw-notebook-")
        self.addCleanup(shutil.rmtree, home, True)
        port, token = self.start_notebook(command, home)
        self.check_connected(port, token, gateway_token)

    def check_connected(self, port, token, gateway_token):
        """A kernel started through the notebook is one of cellgate's, and runs a cell."""
        auth = {"Authorization": "token " + token}
        status, _, data = request(port, "POST", "/api/kernels", {"name": "python3"}, auth, KERNEL_START_TIMEOUT)
        self.assertEqual(status, 201, "POST (notebook) /api/kernels: %d %r\n--- notebook ---\n%s\n--- cellgate ---\n%s"
                         % (status, data[:500], self.log_tail(), self.gateway_tail()))
        kernel = json.loads(data)
        self.addCleanup(request, port, "DELETE", "/api/kernels/%s" % kernel["id"], None, auth)
        status, _, data = request(self.gateway_port(), "GET", "/api/kernels",
                                  headers={"Authorization": "token " + gateway_token})
        self.assertEqual(status, 200, data)
        self.assertIn(kernel["id"], [k["id"] for k in json.loads(data)],
                      "the notebook's kernel is not one of cellgate's")
        ks = gwclient.KernelSocket("http://127.0.0.1:%d" % port, kernel["id"], token)
        self.addCleanup(ks.close)
        ks.wait_ready()
        r = ks.execute("print(6 * 7)")
        self.assertEqual(r.status, "ok", r.summary())
        self.assertEqual(r.stdout(), "42\n", r.summary())


class AsUserTest(PrintedCommandTest):
    """The same as a normal user (rootless, their own state dir: $XDG_STATE_HOME/cellgate),
    cellgate and the notebook both run as the user scripts/setup.sh test makes."""

    def setUp(self):
        self.user = os.environ.get("CELLGATE_TEST_USER", "cellgate-test")
        if not os.access(cellgate_binary(), os.X_OK):
            self.skipTest("no cellgate binary at %s" % cellgate_binary())
        try:
            self.pw = pwd.getpwnam(self.user)
        except KeyError:
            self.skipTest("no user %s (scripts/setup.sh test makes it)" % self.user)
        if os.geteuid() != 0:
            self.skipTest("not root: cannot run as %s" % self.user)
        self.tmp = tempfile.mkdtemp(prefix="cg-gw-user-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.home = os.path.join(self.tmp, "home")
        self.xdg = os.path.join(self.tmp, "xdg")
        for d in (self.home, self.xdg):
            os.makedirs(d)
            os.chown(d, self.pw.pw_uid, self.pw.pw_gid)
        self.prefix = ["setpriv", "--reuid=%s" % self.user, "--regid=%s" % self.user, "--clear-groups"]
        self.notebook = None
        log_path = os.path.join(self.tmp, "cellgate.log")
        self.log = open(log_path, "wb")
        self.addCleanup(self.log.close)
        env = {"HOME": self.home, "XDG_STATE_HOME": self.xdg, "PATH": "/usr/bin:/bin", "CELLGATE_POOL": "0"}
        self.cellgate = subprocess.Popen(self.prefix + [cellgate_binary(), "mcp", "--http-listen", "127.0.0.1:0"],
                                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=self.log, env=env,
                                         cwd="/", start_new_session=True)
        self.addCleanup(self.stop_cellgate)
        self.log_path = log_path
        deadline = time.monotonic() + START_TIMEOUT
        self.line = None
        while time.monotonic() < deadline and self.cellgate.poll() is None and not self.line:
            m = re.search(r"^.*gateway: (.*--gateway-url=http://127\.0\.0\.1:(\d+).*)$", self.stderr(), re.M)
            if m:
                self.line, self.port = m.group(1), int(m.group(2))
            time.sleep(0.05)
        self.assertTrue(self.line, "no gateway line from cellgate as %s:\n%s" % (self.user, self.stderr()))

    def gateway_port(self):
        return self.port

    def gateway_tail(self):
        return "\n".join(self.stderr().splitlines()[-40:])

    def stderr(self):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop_cellgate(self):
        if self.cellgate.poll() is None:
            self.cellgate.stdin.close()
            self.cellgate.send_signal(signal.SIGTERM)
            try:
                self.cellgate.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.cellgate.pid, signal.SIGKILL)
                self.cellgate.wait()

    def test_printed_command_opens_a_notebook_on_the_gateway(self):
        token_file = os.path.join(self.xdg, "cellgate", "gateway-token")
        with open(token_file) as f:
            gateway_token = f.read().strip()
        self.assertNotIn(gateway_token, self.stderr(), "the gateway token is in the log")
        self.assertIn('--GatewayClient.auth_token="$(cat %s)"' % token_file, self.line)
        self.assertNotIn("/var/lib/cellgate", self.line)
        self.assertNotIn("--allow-root", self.line)
        port, token = self.start_notebook(self.line, self.home, self.prefix)
        self.check_connected(port, token, gateway_token)


if __name__ == "__main__":
    unittest.main()
