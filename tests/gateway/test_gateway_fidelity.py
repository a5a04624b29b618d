#!/usr/bin/python3
"""A Jupyter front end attached through cellgate's gateway sees the stock kernel (issue 23,
point 11): the agent behaviour of kernels/python/cellgate_startup.py (the stdin wording,
short tracebacks, "Cell In [n]" names, JSON values, a silent sys.exit) is for the MCP
tools' own requests only.

- StockThroughJupyterServerTest: a real Jupyter Server (--gateway-url at cellgate) and its
  own WebSocket: input() without stdin, a traceback through library code, a dict's value,
  sys.exit(3), warnings and traceback.print_exc() as stock ipykernel shows them; then the
  same cells, output for output, against a stock ipykernel started here by jupyter_client
  (Debian's, the one the sandbox runs too), the only differences being the kernel's pid in
  its cell file names and its engine id.
- NbclientStdinTest: nbclient's own test_disable_stdin (its "Disable Stdin.ipynb": one cell
  `name = input("name: ")`, allow_errors) through jupyter_server's GatewayKernelManager,
  with a dict cell and a sys.exit(3) cell beside it.
- ForgedMarkTest: a front end that puts the bridge's mark ("cellgate_agent": true) in its
  own request's metadata, over the legacy and the v1 framing, still gets the stock kernel
  (the gateway removes the mark).

tests/e2e/corpus_fidelity.test.mjs checks that the agent keeps its behaviour in the same
kernel a notebook uses. Runs as root (runc), like test_gateway:
    cd tests/gateway && /usr/bin/python3 -m unittest -v test_gateway_fidelity
"""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwclient  # noqa: E402
import test_gateway as tg  # noqa: E402
from stockkernel import StockKernel  # noqa: E402

STOCK_STDIN = "raw_input was called, but this frontend does not support input requests."
STOCK_GETPASS = "getpass was called, but this frontend does not support input requests."
SYSTEM_EXIT_TB = ["An exception has occurred, use %tb to see the full traceback.\n", "SystemExit: 3\n"]
TO_EXIT = "To exit: use 'exit', 'quit', or Ctrl-D."
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# Cells whose outputs a front end must see as stock ipykernel gives them (the differential
# test runs them in this order in a fresh kernel on each side).
CELLS = [
    "input('name: ')",
    "import getpass\ngetpass.getpass('secret: ')",
    "def inner():\n    return 1 / 0\n\ndef outer():\n    return inner()\n\nouter()",
    "from IPython.display import Image\nImage(data=b'x', format='bogus')",
    "{'a': 1, 'b': [1, 2]}",
    "[1, 'two', None]",
    "import sys\nsys.exit(3)",
    "raise SystemExit('bye')",
    "import warnings\nwarnings.warn('careful')",
    "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()",
    "x = (",
    "print('after all that')",
]


def plain(text):
    """TEXT without ANSI colours and with the kernel's pid in cell file names made N."""
    return re.sub(r"/tmp/ipykernel_\d+/", "/tmp/ipykernel_N/", ANSI.sub("", text))


def outputs_of(iopub):
    """The outputs a notebook keeps from a cell's iopub messages (type, content), ANSI and
    pids normalized, consecutive stream messages of one name joined."""
    found = []
    for m in iopub:
        kind, content = m["msg_type"], m["content"]
        if kind == "stream":
            if found and found[-1][0] == "stream" and found[-1][1]["name"] == content["name"]:
                found[-1][1]["text"] += plain(content["text"])
            else:
                found.append(("stream", {"name": content["name"], "text": plain(content["text"])}))
        elif kind == "error":
            found.append(("error", {"ename": content["ename"], "evalue": plain(content["evalue"]),
                                    "traceback": [plain(t) for t in content["traceback"]]}))
        elif kind in ("execute_result", "display_data"):
            found.append((kind, {"data": content["data"], "metadata": content.get("metadata", {})}))
    return found


def reply_of(content):
    return {k: (plain(v) if isinstance(v, str) else v) for k, v in content.items()
            if k in ("status", "ename", "evalue", "execution_count")}


def errors(result):
    return [m["content"] for m in result.of_type("error")]


def ipykernel_spec(home):
    """Debian's ipykernel as a plain Jupyter kernel: the sandbox kernel's own argv less
    cellgate's startup file."""
    return {"argv": ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", "{connection_file}",
                     "--HistoryManager.hist_file=:memory:"],
            "display_name": "stock", "language": "python",
            "env": {"IPYTHONDIR": os.path.join(home, "ipython"),
                    "MPLCONFIGDIR": os.path.join(home, "mpl"), "PYTHONDONTWRITEBYTECODE": "1",
                    "PYDEVD_DISABLE_FILE_VALIDATION": "1"}}


class StockThroughJupyterServerTest(tg.GatewayCase):
    """A real Jupyter Server with --gateway-url: what its WebSocket carries is stock."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ks = None
        try:
            cls.js = tg.JupyterServer(cls.cg.url, cls.token)
            cls.ks = cls.kernel_socket()
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
    def logs(cls):
        return "\n--- jupyter server (tail) ---\n%s\n--- cellgate stderr (tail) ---\n%s" % (
            cls.js.log_tail(), cls.cg.stderr_tail())

    @classmethod
    def kernel_socket(cls):
        """A new kernel started through Jupyter Server, and a WebSocket to it through Jupyter
        Server (both end with the class's cellgate)."""
        status, _, data = cls.js.request("POST", "/api/kernels", {"name": "python3"})
        if status != 201:
            raise AssertionError(tg.show("POST", "(jupyter server) /api/kernels", status, data) + cls.logs())
        ks = gwclient.KernelSocket("http://127.0.0.1:%d" % cls.js.port, json.loads(data)["id"], cls.js.token)
        ks.wait_ready(tg.KERNEL_START_TIMEOUT)
        return ks

    def test_input_without_stdin_is_jupyters_error(self):
        for code, evalue in (("name = input('name: ')", STOCK_STDIN),
                             ("import getpass\ngetpass.getpass()", STOCK_GETPASS)):
            r = self.ks.execute(code, allow_stdin=False)
            self.assertEqual(r.status, "error", r.summary())
            self.assertEqual((r.reply["content"]["ename"], r.reply["content"]["evalue"]),
                             ("StdinNotImplementedError", evalue), r.summary())
            [error] = errors(r)
            self.assertEqual(error["evalue"], evalue)
            # A full traceback: the cell's line, then ipykernel's own frame that raised.
            text = plain("\n".join(error["traceback"]))
            self.assertIn("Traceback (most recent call last)", text, r.summary())
            self.assertIn("ipykernel/kernelbase.py", text, r.summary())
            self.assertNotIn("needs stdin", text, r.summary())
            self.assertNotIn("cellgate_startup", text, r.summary())

    def test_traceback_keeps_its_frames(self):
        r = self.ks.execute("def inner():\n    return 1 / 0\n\ndef outer():\n    return inner()\n\nouter()")
        [error] = errors(r)
        text = plain("\n".join(error["traceback"]))
        for frame in ("in outer()", "in inner()", "----> 2     return 1 / 0"):
            self.assertIn(frame, text, r.summary())
        # An error raised inside IPython's own code keeps IPython's frame, as stock does.
        r = self.ks.execute("from IPython.display import Image\nImage(data=b'x', format='bogus')")
        [error] = errors(r)
        text = plain("\n".join(error["traceback"]))
        self.assertRegex(text, r"File /usr/lib/python3/dist-packages/IPython/core/display\.py:\d+, in Image\.__init__",
                         r.summary())
        self.assertIn("Cannot embed the 'bogus' image format", text)

    def test_dict_and_list_values_are_text_only(self):
        for code, text in (("{'a': 1, 'b': [1, 2]}", "{'a': 1, 'b': [1, 2]}"), ("[1, 'two', None]", "[1, 'two', None]")):
            r = self.ks.execute(code)
            [result] = r.of_type("execute_result")
            self.assertEqual(result["content"]["data"], {"text/plain": text}, r.summary())

    def test_sys_exit_shows_what_ipykernel_shows(self):
        r = self.ks.execute("import sys\nsys.exit(3)")
        self.assertEqual(r.status, "error", r.summary())
        self.assertEqual((r.reply["content"]["ename"], r.reply["content"]["evalue"]), ("SystemExit", "3"))
        self.assertEqual(len(errors(r)), 1, "one error output: " + r.summary())
        [error] = errors(r)
        self.assertEqual([plain(t) for t in error["traceback"]], SYSTEM_EXIT_TB, r.summary())
        stderr = "".join(m["content"]["text"] for m in r.of_type("stream") if m["content"]["name"] == "stderr")
        self.assertIn(TO_EXIT, stderr, r.summary())

    def test_cell_names_are_ipykernels(self):
        r = self.ks.execute("import warnings\nwarnings.warn('careful')")
        stderr = plain("".join(m["content"]["text"] for m in r.of_type("stream")))
        self.assertRegex(stderr, r"^/tmp/ipykernel_N/\d+\.py:2: UserWarning: careful", r.summary())
        r = self.ks.execute("import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()")
        stderr = plain("".join(m["content"]["text"] for m in r.of_type("stream")))
        self.assertRegex(stderr, r'File "/tmp/ipykernel_N/\d+\.py", line 3, in <module>', r.summary())

    def test_outputs_equal_a_stock_ipykernels(self):
        ks = self.kernel_socket()
        self.addCleanup(ks.close)
        stock = StockKernel(ipykernel_spec, prefix="cg-fidelity-stock-")
        self.addCleanup(stock.stop)
        for code in CELLS:
            r = ks.execute(code, allow_stdin=False)
            content, iopub = stock.execute(code)
            what = "cell %r through Jupyter Server and cellgate vs a stock ipykernel" % code
            self.assertEqual(reply_of(r.reply["content"]), reply_of(content), what)
            self.assertEqual(outputs_of(r.iopub), outputs_of(iopub), what)


class NbclientStdinTest(tg.GatewayCase):
    """nbclient's test_disable_stdin through jupyter_server's GatewayKernelManager."""

    def test_disable_stdin(self):
        import nbformat
        from jupyter_server.gateway import managers
        from nbclient import NotebookClient

        tg.use_gateway_client(self)

        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell('name = input("name: ")'),  # nbclient's "Disable Stdin.ipynb"
            nbformat.v4.new_code_cell("{'a': 1}"),
            nbformat.v4.new_code_cell("import sys\nsys.exit(3)"),
        ]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        client = NotebookClient(nb, kernel_manager_class=managers.GatewayKernelManager, timeout=60,
                                startup_timeout=120, kernel_name="python3", allow_errors=True)
        try:
            client.execute()
        except Exception as e:
            raise AssertionError("nbclient failed: %r%s" % (e, self.tail())) from e
        nbformat.validate(nb)
        stdin_out, dict_out, exit_out = (c.outputs for c in nb.cells)
        # nbclient's own assertions (test_disable_stdin):
        self.assertEqual(len(stdin_out), 1, stdin_out)
        self.assertEqual(stdin_out[0]["output_type"], "error")
        self.assertEqual(stdin_out[0]["ename"], "StdinNotImplementedError")
        self.assertEqual(stdin_out[0]["evalue"], STOCK_STDIN)
        self.assertEqual([(o.output_type, dict(o.data)) for o in dict_out], [("execute_result", {"text/plain": "{'a': 1}"})])
        errors_out = [o for o in exit_out if o.output_type == "error"]
        self.assertEqual([(o.ename, o.evalue, [plain(t) for t in o.traceback]) for o in errors_out],
                         [("SystemExit", "3", SYSTEM_EXIT_TB)], exit_out)


class ForgedMarkTest(tg.GatewayCase):
    """Straight against cellgate: the bridge's mark, sent by a front end, is removed."""

    def test_forged_mark_gets_the_stock_kernel(self):
        kid = self.start_kernel()["id"]
        for protocol in ("legacy", "v1"):
            ks = gwclient.KernelSocket(self.cg.url, kid, self.token, protocol=protocol)
            self.addCleanup(ks.close)
            ks.wait_ready(tg.KERNEL_START_TIMEOUT)
            for code, check in (
                ("input()", lambda r: self.assertEqual(r.reply["content"].get("evalue"), STOCK_STDIN, r.summary())),
                ("{'forged': True}", lambda r: self.assertEqual(
                    r.of_type("execute_result")[0]["content"]["data"], {"text/plain": "{'forged': True}"}, r.summary())),
            ):
                msg = ks.new_msg("execute_request", {"code": code, "silent": False, "store_history": True,
                                                     "user_expressions": {}, "allow_stdin": False,
                                                     "stop_on_error": False}, "shell")
                msg["metadata"] = {"cellgate_agent": True, "cellId": "forged"}
                result = gwclient.Result(ks.send(msg))
                while result.reply is None or not result.idle:
                    m = ks.recv(60)
                    if m.get("parent_header", {}).get("msg_id") != result.msg_id:
                        continue
                    if m.get("channel") == "shell":
                        result.reply = m
                    elif m.get("channel") == "iopub":
                        result.iopub.append(m)
                        result.idle = m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
                check(result)


if __name__ == "__main__":
    unittest.main()
