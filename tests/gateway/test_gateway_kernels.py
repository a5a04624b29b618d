#!/usr/bin/python3
"""More kernels through the gateway (issue 27): R, and a kernel added by configuration only,
in a real Jupyter Server with --gateway-url at cellgate, driven through its own REST API and
WebSocket. The agent is an MCP client on cellgate's stdio (`--http-listen`, the gateway on it).

- RThroughJupyterServerTest: /api/kernelspecs lists `ir` (language R) beside python3, the
  default python3; an `ir` notebook kernel runs R (a value, a print, an error, state), a
  ggplot comes as image/png display_data; its outputs equal, cell for cell, those of a
  stock IRkernel started here by jupyter_client (Debian's, from the host's `ir` spec: the
  sandbox runs the same R); the agent's touches (the error summary, the JSON value,
  Rscript's warning text) come with the same code through MCP execute_code only; an
  agent's R kernel is opened from the front end by kernelspec `attach-<kernel id>`, each
  side seeing what the other set, the notebook still the stock kernel; nbclient runs an R
  notebook through jupyter_server's GatewayKernelManager.
- ConfiguredKernelThroughJupyterServerTest: Debian's xeus-python as `python-xeus`, from a
  kernel.json in a --kernelspecs directory alone (tests/e2e/kernels_config.test.mjs checks it
  through MCP): in /api/kernelspecs, and a notebook kernel of it runs in xeus-python.
- OnlyLanguagesTest: with --languages python,python-xeus,bash, straight against cellgate,
  /api/kernelspecs has python3 and python-xeus alone and ir, javascript, xpython are 404.

Runs as root (runc), like test_gateway:
    cd tests/gateway && /usr/bin/python3 -m unittest -v test_gateway_kernels
"""

import base64
import json
import os
import secrets
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gwclient  # noqa: E402
import test_gateway as tg  # noqa: E402
from stockkernel import StockKernel  # noqa: E402
from test_gateway_hostile import Agent  # noqa: E402

STOCK_IR_SPEC = "/usr/share/jupyter/kernels/ir/kernel.json"
STOCK_XPYTHON_SPEC = "/usr/share/jupyter/kernels/xpython/kernel.json"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
GGPLOT = "library(ggplot2)\nggplot(data.frame(x = 1:3, y = c(2, 4, 8)), aes(x, y)) + geom_point()"
XEUS_MARKER = ("import sys\nprint('xeus_python_shell' in sys.modules, 'ipykernel' in sys.modules)\n"
               "type(get_ipython()).__module__")

# Cells whose outputs a front end must see as a stock IRkernel gives them (run in this order
# in a fresh kernel on each side).
R_CELLS = [
    "x <- 21 * 2\nx",
    "print('hello')",
    "f <- function() stop('boom')\nf()",
    "warning('careful')",
    "message('note')",
    "list(a = 1, b = 'x')",
    "data.frame(a = 1:2, b = c('x', 'y'))",
    "c(first = 1.5, second = NA)",
    "invisible(7)",
    "for (i in 1:3) cat(i, '')",
    "x + 1",
    "quietly <- suppressWarnings(as.integer('z'))\nis.na(quietly)",
    "stop('plain')",
]


def outputs_of(iopub):
    """The outputs a notebook keeps from a cell's iopub messages (type, content), consecutive
    stream messages of one name joined."""
    found = []
    for m in iopub:
        kind, content = m["msg_type"], m["content"]
        if kind == "stream":
            if found and found[-1][0] == "stream" and found[-1][1]["name"] == content["name"]:
                found[-1][1]["text"] += content["text"]
            else:
                found.append(("stream", {"name": content["name"], "text": content["text"]}))
        elif kind == "error":
            found.append(("error", {k: content[k] for k in ("ename", "evalue", "traceback")}))
        elif kind in ("execute_result", "display_data"):
            found.append((kind, {"data": content["data"], "metadata": content.get("metadata", {})}))
    return found


def reply_of(content):
    return {k: v for k, v in content.items() if k in ("status", "ename", "evalue", "traceback", "execution_count")}


def stream_text(result, name):
    return "".join(m["content"]["text"] for m in result.of_type("stream") if m["content"]["name"] == name)


def shown(result):
    """The data of a cell's display_data and execute_result messages, in order."""
    return [m["content"]["data"] for m in result.iopub if m["msg_type"] in ("display_data", "execute_result")]


class KernelsCase(unittest.TestCase):
    """A stdio cellgate (ARGS added) with its gateway, an MCP agent on its stdin and stdout,
    and a Jupyter Server with --gateway-url at it, per class."""

    ARGS = []
    cg = js = None

    @classmethod
    def setUpClass(cls):
        if not os.access(tg.cellgate_binary(), os.X_OK):
            raise unittest.SkipTest("no cellgate binary at %s (build it, or set CELLGATE_BIN)" % tg.cellgate_binary())
        cls.token = secrets.token_hex(16)
        cls.cg = tg.Cellgate(token=cls.token, args=cls.ARGS, stdio=True)
        try:
            cls.agent = Agent(cls.cg)
            cls.js = tg.JupyterServer(cls.cg.url, cls.token)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.js:
            cls.js.stop()
            cls.js = None
        if cls.cg:
            cls.cg.stop()
            cls.cg = None

    def logs(self):
        return "\n--- jupyter server (tail) ---\n%s\n--- cellgate stderr (tail) ---\n%s" % (
            self.js.log_tail(), self.cg.stderr_tail())

    def js_json(self, method, path, body=None, expect=200):
        status, _, data = self.js.request(method, path, body)
        self.assertEqual(status, expect, tg.show(method, "(jupyter server) " + path, status, data) + self.logs())
        return json.loads(data) if data else None

    def notebook_kernel(self, name):
        """A kernel started (or, for attach-<id>, opened) through Jupyter Server, with a
        WebSocket to it through Jupyter Server; both end with the test."""
        model = self.js_json("POST", "/api/kernels", {"name": name}, expect=201)
        self.addCleanup(self.js.request, "DELETE", "/api/kernels/%s" % model["id"])
        ks = gwclient.KernelSocket("http://127.0.0.1:%d" % self.js.port, model["id"], self.js.token)
        self.addCleanup(ks.close)
        ks.wait_ready(tg.KERNEL_START_TIMEOUT)
        return model, ks

    def run_agent(self, language, code, session_id):
        return self.agent.call("tools/call", {"name": "execute_code", "arguments": {
            "language": language, "session_id": session_id, "code": code}})["structuredContent"]


class RThroughJupyterServerTest(KernelsCase):
    """R (IRkernel) as a Jupyter front end sees it through cellgate's gateway."""

    def test_kernelspecs_list_ir_beside_python3(self):
        specs = self.js_json("GET", "/api/kernelspecs")
        self.assertEqual(specs["default"], "python3", specs)
        names = specs["kernelspecs"]
        self.assertIn("ir", names, sorted(names))
        self.assertIn("python3", names, sorted(names))
        self.assertEqual(names["ir"]["spec"]["language"], "R", names["ir"])
        self.assertEqual(names["python3"]["spec"]["language"], "python", names["python3"])

    def test_r_runs_a_value_a_print_an_error(self):
        model, ks = self.notebook_kernel("ir")
        self.assertEqual(model["name"], "ir", model)
        info = ks.request("kernel_info_request")["content"]
        self.assertEqual(info["language_info"]["name"], "R", info)
        r = ks.execute("x <- 21 * 2\nx")
        self.assertEqual(r.status, "ok", r.summary())
        [data] = shown(r)
        self.assertEqual(data["text/plain"], "[1] 42", r.summary())
        r = ks.execute("print(paste('hello', x))")
        self.assertEqual(stream_text(r, "stdout"), '[1] "hello 42"\n', r.summary())
        r = ks.execute("f <- function() stop('boom')\nf()")
        self.assertEqual(r.status, "error", r.summary())
        [error] = r.of_type("error")
        self.assertEqual((error["content"]["ename"], error["content"]["evalue"]), ("ERROR", "Error in f(): boom\n"))
        self.assertIn("1. f()", error["content"]["traceback"], r.summary())
        r = ks.execute("x + 1")  # the error kept the state
        self.assertEqual([d["text/plain"] for d in shown(r)], ["[1] 43"], r.summary())

    def test_ggplot_is_png_display_data(self):
        _, ks = self.notebook_kernel("ir")
        r = ks.execute(GGPLOT, timeout=120)
        self.assertEqual(r.status, "ok", r.summary())
        [plot] = r.of_type("display_data")
        data = plot["content"]["data"]
        self.assertEqual(sorted(data), ["image/png", "text/plain"], r.summary())
        png = base64.b64decode(data["image/png"])
        self.assertEqual(png[:8], PNG_MAGIC)
        self.assertEqual(data["text/plain"], "plot without title")

    def test_outputs_equal_a_stock_irkernels(self):
        if not os.path.exists(STOCK_IR_SPEC):
            self.fail("%s missing: Debian's r-cran-irkernel (scripts/setup.sh test) installs it" % STOCK_IR_SPEC)
        _, ks = self.notebook_kernel("ir")
        stock = StockKernel(lambda home: json.load(open(STOCK_IR_SPEC)), prefix="cg-kernels-stock-",
                            home_env=True)
        self.addCleanup(stock.stop)
        for code in R_CELLS:
            r = ks.execute(code, allow_stdin=False)
            content, iopub = stock.execute(code)
            what = "cell %r through Jupyter Server and cellgate vs a stock IRkernel" % code
            self.assertEqual(reply_of(r.reply["content"]), reply_of(content), what)
            self.assertEqual(outputs_of(r.iopub), outputs_of(iopub), what)

    def test_agent_touches_come_through_mcp_only(self):
        _, ks = self.notebook_kernel("ir")
        session = "sess_gwkernels_touch"
        # The error: the agent gets Rscript's summary and the cell's frames with lines; the
        # notebook IRkernel's ERROR with its own traceback.
        code = "f <- function() stop('boom')\nf()"
        out = self.run_agent("r", code, session)
        self.assertEqual(out["status"], "execution_error", out)
        self.assertEqual(out["error_message"], "Error in f(): boom", out)
        self.assertIn("Traceback:\n1. f()", out["stderr"], out)
        r = ks.execute(code)
        self.assertEqual((r.reply["content"]["ename"], r.reply["content"]["evalue"]), ("ERROR", "Error in f(): boom\n"),
                         r.summary())
        self.assertNotEqual(r.reply["content"]["ename"], out["error_message"])
        # A list's value: JSON for the agent (returnValue); IRkernel's HTML, Markdown and
        # LaTeX, no JSON, for the notebook.
        code = "list(a = 1, b = 'x')"
        out = self.run_agent("r", code, session)
        self.assertEqual(out["returnValue"], {"a": 1, "b": "x"}, out)  # as Python's dict value
        [value] = [o for o in out["outputs"] if o["type"] == "execute_result"]
        self.assertIn("application/json", value["data"], out)
        r = ks.execute(code)
        [data] = shown(r)
        self.assertEqual(sorted(data), ["text/html", "text/latex", "text/markdown", "text/plain"], r.summary())
        self.assertEqual([m["msg_type"] for m in r.iopub if "data" in m["content"]], ["display_data"])
        # A warning: Rscript's words for the agent, IRkernel's (the eval frame, curly quotes)
        # for the notebook.
        code = "warning('careful')"
        out = self.run_agent("r", code, session)
        self.assertEqual(out["stderr"], "Warning message:\ncareful\n", out)
        r = ks.execute(code)
        self.assertEqual(stream_text(r, "stderr"), "Warning message in eval(expr, envir, enclos):\n\u201ccareful\u201d\n",
                         r.summary())

    def test_an_agents_r_kernel_opened_by_kernelspec(self):
        session = "sess_gwkernels_attach"
        out = self.run_agent("r", "kept <- 41", session)
        self.assertEqual(out["status"], "success", out)
        kernel_id = out.get("kernel_id")
        self.assertTrue(kernel_id, out)
        specs = self.js_json("GET", "/api/kernelspecs")["kernelspecs"]
        self.assertIn("attach-%s" % kernel_id, specs, sorted(specs))
        model, ks = self.notebook_kernel("attach-%s" % kernel_id)
        self.assertEqual(model["id"], kernel_id, "Jupyter Server opened another kernel: %r" % model)
        self.assertEqual(model["name"], "ir", model)
        r = ks.execute("kept + 1")
        self.assertEqual([d["text/plain"] for d in shown(r)], ["[1] 42"], r.summary())
        ks.execute("from_notebook <- kept * 2")
        out = self.run_agent("r", "cat(from_notebook)", session)
        self.assertEqual(out["stdout"], "82", out)
        # In the agent's own kernel, the notebook still sees the stock kernel.
        r = ks.execute("warning('careful')")
        self.assertEqual(stream_text(r, "stderr"), "Warning message in eval(expr, envir, enclos):\n\u201ccareful\u201d\n",
                         r.summary())
        out = self.run_agent("r", "warning('careful')", session)
        self.assertEqual(out["stderr"], "Warning message:\ncareful\n", out)

    def test_nbclient_runs_an_r_notebook(self):
        import nbformat
        from jupyter_server.gateway import managers
        from nbclient import NotebookClient

        tg.use_gateway_client(self)

        class RKernelManager(managers.GatewayKernelManager):
            # jupyter_server 1.23.3's GatewayKernelManager.start_kernel asks for
            # kwargs["kernel_name"], else python3, not its own kernel_name (Jupyter Server's
            # GatewayMappingKernelManager passes it; nbclient does not).
            async def start_kernel(self, **kwargs):
                kwargs.setdefault("kernel_name", self.kernel_name)
                return await super().start_kernel(**kwargs)

        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x <- 6 * 7\nx"), nbformat.v4.new_code_cell("print(x)"),
                    nbformat.v4.new_code_cell("stop('on purpose')"), nbformat.v4.new_code_cell(GGPLOT)]
        nb.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
        client = NotebookClient(nb, kernel_manager_class=RKernelManager, timeout=120,
                                startup_timeout=120, kernel_name="ir", allow_errors=True)
        try:
            client.execute()
        except Exception as e:
            raise AssertionError("nbclient failed: %r%s" % (e, self.logs())) from e
        nbformat.validate(nb)
        self.assertEqual(nb.metadata["language_info"]["name"], "R", nb.metadata)
        value, printed, error, plot = (c.outputs for c in nb.cells)
        self.assertEqual([(o.output_type, o.data["text/plain"]) for o in value], [("display_data", "[1] 42")])
        self.assertEqual([(o.output_type, o.name, o.text) for o in printed], [("stream", "stdout", "[1] 42\n")])
        self.assertEqual([(o.output_type, o.ename, o.evalue) for o in error],
                         [("error", "ERROR", "Error in eval(expr, envir, enclos): on purpose\n")])
        self.assertEqual([(o.output_type, sorted(o.data)) for o in plot], [("display_data", ["image/png", "text/plain"])])
        self.assertEqual(base64.b64decode(plot[0].data["image/png"])[:8], PNG_MAGIC)


class ConfiguredKernelThroughJupyterServerTest(KernelsCase):
    """Debian's xeus-python as the language python-xeus, by a kernel.json in --kernelspecs."""

    @classmethod
    def setUpClass(cls):
        with open(STOCK_XPYTHON_SPEC) as f:
            stock = json.load(f)
        cls.specs = tempfile.mkdtemp(prefix="cg-gw-kernelspecs-")
        os.makedirs(os.path.join(cls.specs, "python-xeus"))
        metadata = dict(stock.get("metadata", {}), cellgate={"aliases": ["xeus"], "title": "Python (xeus)"})
        with open(os.path.join(cls.specs, "python-xeus", "kernel.json"), "w") as f:
            json.dump({"argv": stock["argv"], "display_name": stock["display_name"], "language": stock["language"],
                       "metadata": metadata}, f)
        cls.stock_display_name = stock["display_name"]
        cls.ARGS = ["--kernelspecs", cls.specs]
        try:
            super().setUpClass()
        except BaseException:
            shutil.rmtree(cls.specs, ignore_errors=True)
            raise

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.specs, ignore_errors=True)

    def test_kernelspecs_have_python_xeus(self):
        specs = self.js_json("GET", "/api/kernelspecs")
        self.assertEqual(specs["default"], "python3", specs)
        spec = specs["kernelspecs"].get("python-xeus")
        self.assertIsNotNone(spec, sorted(specs["kernelspecs"]))
        self.assertEqual((spec["spec"]["language"], spec["spec"]["display_name"]), ("python", self.stock_display_name), spec)

    def test_a_python_xeus_notebook_kernel_runs_in_xeus_python(self):
        model, ks = self.notebook_kernel("python-xeus")
        self.assertEqual(model["name"], "python-xeus", model)
        info = ks.request("kernel_info_request")["content"]
        self.assertEqual(info.get("implementation"), "xeus-python", info)
        r = ks.execute(XEUS_MARKER)
        self.assertEqual(r.status, "ok", r.summary())
        self.assertEqual(stream_text(r, "stdout"), "True False\n", r.summary())
        self.assertEqual([d["text/plain"] for d in shown(r)], ["'xeus_python_shell.shell'"], r.summary())
        r = ks.execute("kept = 6 * 7")
        r = ks.execute("print(kept)")
        self.assertEqual(stream_text(r, "stdout"), "42\n", r.summary())
        r = ks.execute("1 / 0")  # xeus-python's ename is the class's repr
        self.assertEqual((r.status, r.reply["content"]["ename"], r.reply["content"]["evalue"]),
                         ("error", "<class 'ZeroDivisionError'>", "division by zero"), r.summary())


class OnlyLanguagesTest(unittest.TestCase):
    """--languages python,python-xeus,bash: the gateway offers those kernels alone."""

    def test_kernelspecs_and_starts_follow_languages(self):
        if not os.access(tg.cellgate_binary(), os.X_OK):
            raise unittest.SkipTest("no cellgate binary at %s" % tg.cellgate_binary())
        specs = tempfile.mkdtemp(prefix="cg-gw-kernelspecs-")
        self.addCleanup(shutil.rmtree, specs, True)
        shutil.copytree(os.path.dirname(STOCK_XPYTHON_SPEC), os.path.join(specs, "python-xeus"))
        token = secrets.token_hex(16)
        # --pool off: the default pool names javascript, which this server does not offer.
        cg = tg.Cellgate(token=token, args=["--kernelspecs", specs, "--languages", "python,python-xeus,bash",
                                            "--pool", "off"])
        self.addCleanup(cg.stop)
        auth = {"Authorization": "token %s" % token}
        status, _, data = tg.request(cg.port, "GET", "/api/kernelspecs", None, auth)
        self.assertEqual(status, 200, tg.show("GET", "/api/kernelspecs", status, data))
        body = json.loads(data)
        self.assertEqual((body["default"], sorted(body["kernelspecs"])), ("python3", ["python-xeus", "python3"]), body)
        for name in ("ir", "javascript", "xpython"):
            status, _, data = tg.request(cg.port, "POST", "/api/kernels", {"name": name, "env": {}}, auth)
            self.assertEqual(status, 404, tg.show("POST", "/api/kernels " + name, status, data))
        status, _, data = tg.request(cg.port, "POST", "/api/kernels", {"name": "python-xeus", "env": {}}, auth)
        self.assertEqual(status, 201, tg.show("POST", "/api/kernels python-xeus", status, data) + cg.stderr_tail())
        kernel_id = json.loads(data)["id"]
        self.addCleanup(tg.request, cg.port, "DELETE", "/api/kernels/%s" % kernel_id, None, auth)
        ks = gwclient.KernelSocket(cg.url, kernel_id, token)
        self.addCleanup(ks.close)
        ks.wait_ready(tg.KERNEL_START_TIMEOUT)
        r = ks.execute(XEUS_MARKER)
        self.assertEqual(stream_text(r, "stdout"), "True False\n", r.summary())


if __name__ == "__main__":
    unittest.main()
