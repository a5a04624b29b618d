"""Jupyter protocol tests of cellgate's R kernel (IRkernel), run on the host.

    cd tests/kernels && /usr/bin/python3 -m unittest -v test_r_kernel

The kernel runs unsandboxed from a kernelspec made in a temporary JUPYTER_PATH out of
kernels/r/kernel.json (its argv and env: kernels/r/cellgate_startup.R starts IRkernel),
over tcp as jupyter_kernel_test does. Its stdin file (/run/cellgate/stdin-r in a sandbox,
written by the server before each cell) is a file of the test's, and the message limit
the server passes (CELLGATE_MAX_MESSAGE_BYTES) is 1,000,000 bytes. Besides
jupyter_kernel_test's own tests: what cellgate_startup.R does for a request marked as an
MCP tool's (metadata cellgate_agent: true), and that it does none of it for an unmarked
one (a notebook's, which sees IRkernel as it is), the message bound, stdin, interrupts.
It needs r-cran-irkernel (and r-cran-dplyr, r-cran-ggplot2) and
python3-jupyter-kernel-test.
"""

import base64
import json
import os
import signal
import struct
import time
import unittest
from queue import Empty

import jupyter_kernel_test
from jupyter_client.utils import run_sync

from hostspec import KERNELS, HostKernelspec

SPEC = HostKernelspec("r", "cellgate-r-test", home_env=True)
LIMIT = 1000000


def setUpModule():
    spec = SPEC.install()
    # The server's part: the stdin file's path and the message limit.
    spec["env"]["CELLGATE_STDIN_FILE"] = os.path.join(SPEC.tmp, "stdin-r")
    spec["env"]["CELLGATE_MAX_MESSAGE_BYTES"] = str(LIMIT)
    with open(os.path.join(SPEC.tmp, "share", "kernels", SPEC.name, "kernel.json"), "w") as f:
        json.dump(spec, f, indent=2)


def tearDownModule():
    SPEC.remove()


class RKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = SPEC.name

    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = SPEC.start()

    language_name = "R"
    file_extension = ".r"

    code_hello_world = "cat('hello, world\\n')"
    code_stderr = "message('oops')"

    completion_samples = [
        {"text": "seq_l", "matches": {"seq_len"}},
    ]

    complete_code_samples = ["1", "print('hello, world')", "f <- function(x) {\n  x * 2\n}"]
    incomplete_code_samples = ["print('hello", "f <- function(x) {\n  x * 2"]
    invalid_code_samples = ["x <- )"]

    code_page_something = "?mean"

    code_generate_error = "stop('boom')"

    # IRkernel sends a notebook's values as display_data, never execute_result: no
    # code_execute_result (and no history: IRkernel answers every history_request with
    # an empty list). An agent's values are tested below.
    code_display_data = [
        {"code": "IRdisplay::display_html('<b>test</b>')", "mime": "text/html"},
        {"code": "plot(1:10)", "mime": "image/png"},
    ]

    code_inspect_sample = "mean"

    code_clear_output = "IRdisplay::clear_output()"

    # ---- beyond jupyter_kernel_test's own tests -------------------------------------

    def run_cell(self, code, agent=False, allow_stdin=False, stdin=None, answers=(), timeout=30):
        """Runs CODE as the server does for an MCP tool when AGENT (metadata cellgate_agent)
        or as a notebook does; STDIN, when given, is written to the stdin file first (as
        the server does), ANSWERS answer input requests. Returns (reply, outputs, asked)."""
        self.flush_channels()
        with open(os.path.join(SPEC.tmp, "stdin-r"), "w") as f:
            f.write(stdin or "")
        msg = self.kc.session.msg("execute_request", {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": allow_stdin, "stop_on_error": False})
        if agent:
            msg["metadata"]["cellgate_agent"] = True
        self.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        answers, asked, outputs, reply, idle = list(answers), [], [], None, False
        deadline = time.monotonic() + timeout
        while not (reply and idle):
            self.assertLess(time.monotonic(), deadline, "no reply and idle: %r" % code)
            try:
                request = run_sync(self.kc.stdin_channel.get_msg)(timeout=0.01)
                asked.append(request["content"]["prompt"])
                self.kc.input(answers.pop(0) if answers else "\x04")
            except Empty:
                pass
            try:
                m = run_sync(self.kc.iopub_channel.get_msg)(timeout=0.05)
                if m["parent_header"].get("msg_id") != msg_id:
                    continue
                if m["msg_type"] == "status":
                    idle = m["content"]["execution_state"] == "idle"
                elif m["msg_type"] != "execute_input":
                    outputs.append(m)
            except Empty:
                pass
            try:
                m = run_sync(self.kc.shell_channel.get_msg)(timeout=0.01)
                if m["parent_header"].get("msg_id") == msg_id:
                    reply = m
            except Empty:
                pass
        return reply, outputs, asked

    def stream(self, outputs, name="stdout"):
        return "".join(m["content"]["text"] for m in outputs
                       if m["msg_type"] == "stream" and m["content"]["name"] == name)

    def of_type(self, outputs, kind):
        return [m for m in outputs if m["msg_type"] == kind]

    def test_kernel_info_matches_the_spec(self):
        with open(os.path.join(KERNELS, "r", "kernel.json")) as f:
            cellgate = json.load(f)["metadata"]["cellgate"]
        self.flush_channels()
        self.kc.kernel_info()
        reply = self.kc.get_shell_msg(timeout=15)
        info = reply["content"]["language_info"]
        self.assertEqual(reply["content"]["implementation"], "IRkernel")
        for key, value in cellgate["language_info"].items():
            self.assertEqual(info[key], value, key)
        self.assertEqual(cellgate["endpoint"], "jupyter")

    def test_agent_value_is_an_execute_result_with_json(self):
        reply, out, _ = self.run_cell("x <- 5\nx\nlist(a = 1, b = c(2, 3), c = NA, d = 'e')",
                                      agent=True)
        self.assertEqual(reply["content"]["status"], "ok")
        self.assertEqual([m["msg_type"] for m in out], ["stream", "execute_result"])
        self.assertEqual(self.stream(out), "[1] 5\n")  # an earlier value, as Rscript prints it
        result = out[1]["content"]
        self.assertEqual(result["execution_count"], reply["content"]["execution_count"])
        self.assertEqual(result["data"]["application/json"], {"a": 1, "b": [2, 3], "c": None, "d": "e"})
        self.assertIn("$a", result["data"]["text/plain"])
        self.assertNotIn("text/latex", result["data"])
        self.assertNotIn("text/markdown", result["data"])

    def test_agent_json_forms(self):
        for code, want in (
            ("data.frame(a = 1:2, b = c('u', 'v'))", [{"a": 1, "b": "u"}, {"a": 2, "b": "v"}]),
            ("c(a = 1, b = 2)", {"a": 1, "b": 2}),
            ("matrix(1:4, 2)", [[1, 3], [2, 4]]),
            ("'text'", "text"),
            ("1:3 / 2", [0.5, 1, 1.5]),
        ):
            reply, out, _ = self.run_cell(code, agent=True)
            results = self.of_type(out, "execute_result")
            self.assertEqual(len(results), 1, (code, out))
            self.assertEqual(results[0]["content"]["data"]["application/json"], want, code)
        # No JSON for what is not plain data, or too much of it: the text alone.
        for code in ("new.env()", "function(x) x", "1:100000"):
            reply, out, _ = self.run_cell(code, agent=True)
            data = self.of_type(out, "execute_result")[0]["content"]["data"]
            self.assertIn("text/plain", data, code)
            self.assertNotIn("application/json", data, code)
        # An invisible value is no result.
        reply, out, _ = self.run_cell("y <- 1", agent=True)
        self.assertEqual(out, [])

    def test_agent_result_is_the_last_expression_only(self):
        def kinds(code):
            reply, out, _ = self.run_cell(code, agent=True)
            self.assertEqual(reply["content"]["status"], "ok", out)
            return [(m["msg_type"], m["content"].get("text") or m["content"]["data"]["text/plain"])
                    for m in out]
        # A visible value followed by an invisible one is printed, not the result.
        self.assertEqual(kinds("42\ny <- 1"), [("stream", "[1] 42\n")])
        self.assertEqual(kinds("42; plot(1:3)"), [("stream", "[1] 42\n"),
                                                  ("display_data", "plot without title")])
        # The plot IRkernel sends once the code has run comes before the value it preceded.
        self.assertEqual(kinds("plot(1:3); 42"), [("display_data", "plot without title"),
                                                  ("execute_result", "[1] 42")])

    def test_notebook_value_is_stock_display_data(self):
        reply, out, _ = self.run_cell("x <- 5\nx\nlist(a = 1, b = 2)")
        self.assertEqual([m["msg_type"] for m in out], ["display_data", "display_data"])
        data = out[1]["content"]["data"]
        self.assertNotIn("application/json", data)
        for mime in ("text/plain", "text/html", "text/markdown", "text/latex"):
            self.assertIn(mime, data)

    def test_agent_error_is_plain(self):
        code = "f <- function() stop('boom')\ng <- function() f()\ng()"
        reply, out, _ = self.run_cell(code, agent=True)
        content = reply["content"]
        self.assertEqual(content["status"], "error")
        self.assertEqual((content["ename"], content["evalue"]), ("Error in f()", "boom"))
        self.assertEqual(content["traceback"], [
            "Error in f(): boom", "Traceback:", "1. g()", "2. f()   # line 2",
            "3. stop(\"boom\")   # line 1"])
        errors = self.of_type(out, "error")
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["content"]["traceback"], content["traceback"])

    def test_agent_error_leaves_out_package_frames(self):
        code = "library(dplyr, warn.conflicts = FALSE)\nmtcars %>% mutate(z = stop('bad'))"
        reply, out, _ = self.run_cell(code, agent=True)
        traceback = reply["content"]["traceback"]
        self.assertTrue(traceback[0].startswith("Error in mutate("), traceback)
        self.assertIn("bad", traceback[0])
        self.assertEqual(len(traceback), 1, traceback)  # the cell's one line: no traceback
        self.assertFalse(any("\x1b[" in line for line in traceback), traceback)

    def test_agent_top_level_error_has_no_traceback(self):
        reply, out, _ = self.run_cell("stop('plain')", agent=True)
        self.assertEqual(reply["content"]["traceback"], ["Error: plain"])
        self.assertEqual(reply["content"]["ename"], "Error")

    def test_notebook_error_is_stock(self):
        code = "f <- function() stop('boom')\nf()"
        reply, out, _ = self.run_cell(code)
        content = reply["content"]
        self.assertEqual(content["ename"], "ERROR")
        self.assertEqual(content["evalue"], "Error in f(): boom\n")
        self.assertEqual(content["traceback"][0], "Error in f(): boom\nTraceback:\n")

    def test_agent_warning_and_message(self):
        reply, out, _ = self.run_cell("message('note'); warning('careful'); 1", agent=True)
        self.assertEqual(self.stream(out, "stderr"), "note\nWarning message:\ncareful\n")
        reply, out, _ = self.run_cell("message('note'); warning('careful'); 1")
        self.assertEqual(self.stream(out, "stderr"),
                         "note\n\nWarning message in eval(expr, envir, enclos):\n\u201ccareful\u201d\n")

    def test_agent_text_has_no_colours(self):
        code = "print(tibble::tibble(a = 1:2)); rlang::inform('note'); 1"
        reply, out, _ = self.run_cell(code, agent=True)
        self.assertEqual(self.stream(out), "# A tibble: 2 \u00d7 1\n      a\n  <int>\n1     1\n2     2\n")
        self.assertEqual(self.stream(out, "stderr"), "note\n")
        # A notebook's gets IRkernel's colours, and the next agent's request none again.
        reply, out, _ = self.run_cell(code)
        self.assertIn("\x1b[", self.stream(out))
        reply, out, _ = self.run_cell(code, agent=True)
        self.assertNotIn("\x1b[", self.stream(out))

    def test_agent_quit_is_an_exit_code(self):
        reply, out, _ = self.run_cell("cat('before\\n')\nquit(status = 3)\ncat('after\\n')", agent=True)
        content = reply["content"]
        self.assertEqual((content["status"], content["ename"], content["evalue"]),
                         ("error", "SystemExit", "3"))
        self.assertEqual(self.stream(out), "before\n")
        self.assertEqual(self.of_type(out, "error"), [])
        reply, out, _ = self.run_cell("q('no')", agent=True)
        self.assertEqual((reply["content"]["ename"], reply["content"]["evalue"]), ("SystemExit", "0"))
        # A notebook's quit() asks the front end to stop the kernel, as IRkernel does.
        reply, out, _ = self.run_cell("quit()\ncat('after\\n')")
        self.assertEqual(reply["content"]["status"], "ok")
        self.assertEqual(reply["content"]["payload"], [{"source": "ask_exit", "keepkernel": False}])

    def test_agent_stdin_from_the_file(self):
        code = ("first <- readline('name? ')\nrest <- readLines('stdin')\n"
                "list(first = first, rest = rest)")
        reply, out, asked = self.run_cell(code, agent=True, allow_stdin=True, stdin="ann\nb\nc\n")
        self.assertEqual(reply["content"]["status"], "ok", out)
        result = self.of_type(out, "execute_result")[0]["content"]["data"]["application/json"]
        self.assertEqual(result, {"first": "ann", "rest": ["b", "c"]})
        self.assertEqual(self.stream(out), "name? ")
        self.assertEqual(asked, [])
        for code, stdin, want in (("sum(scan(file('stdin'), quiet = TRUE))", "1 2\n3\n", 6),
                                  ("nrow(read.csv('stdin'))", "h\n1\n5\n", 2)):
            reply, out, _ = self.run_cell(code, agent=True, allow_stdin=True, stdin=stdin)
            results = self.of_type(out, "execute_result")
            self.assertEqual(results[0]["content"]["data"]["application/json"], want, (code, out))

    def test_agent_stdin_errors(self):
        reply, out, _ = self.run_cell("readline()", agent=True)
        self.assertEqual(reply["content"]["traceback"][0],
                         "Error: readline() needs stdin: pass `stdin` with the call")
        reply, out, _ = self.run_cell("x <- readLines('stdin')", agent=True)
        self.assertEqual(reply["content"]["traceback"][0],
                         "Error: readLines('stdin') needs stdin: pass `stdin` with the call")
        reply, out, _ = self.run_cell("readline(); readline()", agent=True, allow_stdin=True, stdin="one\n")
        self.assertEqual(reply["content"]["traceback"][0], "Error: readline(): no more lines in stdin")

    def test_agent_stdin_through_the_channel_when_the_file_is_empty(self):
        # A call without stdin text that may ask the user (a task): the stdin channel.
        reply, out, asked = self.run_cell("paste(readline('a? '), readline('b? '))", agent=True,
                                          allow_stdin=True, answers=["x", "y"])
        self.assertEqual(asked, ["a? ", "b? "])
        result = self.of_type(out, "execute_result")[0]["content"]["data"]["application/json"]
        self.assertEqual(result, "x y")
        reply, out, asked = self.run_cell("readline('c? ')", agent=True, allow_stdin=True)
        self.assertEqual(reply["content"]["traceback"][0], "Error: readline(): no more lines in stdin")

    def test_notebook_readline_is_stock(self):
        # The stdin file holds an earlier agent's text: a notebook's readline() asks.
        reply, out, asked = self.run_cell("paste0('<', readline('who? '), '>')", allow_stdin=True, stdin="agent's\n",
                                          answers=["me"])
        self.assertEqual(asked, ["who? "])
        data = self.of_type(out, "display_data")[0]["content"]["data"]
        self.assertEqual(data["text/plain"], "[1] \"<me>\"")

    def assert_bounded(self, outputs):
        for m in outputs:
            self.assertLess(len(json.dumps(m["content"])), LIMIT, m["msg_type"])

    def test_huge_stream_is_cut_into_messages(self):
        for agent in (False, True):
            reply, out, _ = self.run_cell("cat(strrep('x', 3e6)); cat('\\u00e9', strrep('y', 2e5))",
                                          agent=agent)
            self.assertEqual(reply["content"]["status"], "ok")
            self.assert_bounded(out)
            self.assertGreater(len(self.of_type(out, "stream")), 3)
            self.assertEqual(self.stream(out), "x" * 3000000 + "\u00e9 " + "y" * 200000)

    def test_huge_display_is_saved_as_a_file(self):
        code = "set.seed(1); IRdisplay::display_png(as.raw(sample(0:255, 2e6, TRUE)))"
        for agent in (False, True):
            reply, out, _ = self.run_cell(code, agent=agent)
            self.assertEqual(reply["content"]["status"], "ok")
            self.assert_bounded(out)
            data = self.of_type(out, "display_data")[0]["content"]["data"]
            self.assertNotIn("image/png", data)
            note = data["text/plain"]
            self.assertIn("[image/png output of 2000000 bytes saved to ", note)
            path = note.split(" saved to ")[1].split(":")[0]
            self.assertTrue(path.startswith(os.path.join(SPEC.tmp, "work", "outputs", "large-")), path)
            self.assertEqual(os.path.getsize(path), 2000000)

    def test_huge_error_is_cut(self):
        # (stop() cuts its message to 8,170 bytes itself; rlang's abort() does not.)
        for agent in (False, True):
            reply, out, _ = self.run_cell("rlang::abort(strrep('z', 3e6))", agent=agent)
            self.assert_bounded(out)
            self.assertEqual(len(self.of_type(out, "error")), 1)
            self.assertLess(len(json.dumps(reply["content"])), LIMIT)
            self.assertIn("[... cut: the text was", reply["content"]["evalue"])

    def png_size(self, data):
        png = base64.b64decode(data)
        self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
        return struct.unpack(">II", png[16:24]), len(png)

    def test_plots_are_small_pngs(self):
        # An agent's plot: 7 x 5 in at 100 dpi; a notebook's: IRkernel's own 7 x 7 in at 120.
        for code in ("plot(1:10)",
                     "library(ggplot2)\nggplot(mtcars, aes(wt, mpg)) + geom_point() + ggtitle('cars')"):
            for agent, pixels in ((True, (700, 500)), (False, (840, 840)), (True, (700, 500))):
                reply, out, _ = self.run_cell(code, agent=agent)
                displays = self.of_type(out, "display_data")
                self.assertEqual(len(displays), 1, (code, agent, out))
                data = displays[0]["content"]["data"]
                self.assertEqual(sorted(data), ["image/png", "text/plain"])
                self.assertEqual(self.png_size(data["image/png"])[0], pixels, (code, agent))
                if agent:
                    self.assertLess(self.png_size(data["image/png"])[1], 200 * 1024)

    def test_interrupt_keeps_state(self):
        self.run_cell("kept <- 41")
        for code in ("Sys.sleep(100)", "repeat { spin <- 1 }"):
            self.flush_channels()
            msg_id = self.kc.execute(code)
            time.sleep(2.0)
            os.kill(self.km.provisioner.process.pid, signal.SIGINT)  # interrupt_mode "signal"
            reply = self.get_non_kernel_info_reply(timeout=20)
            self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
            self.assertEqual(reply["content"]["status"], "abort", code)  # IRkernel's word for it
            reply, out, _ = self.run_cell("kept + 1", agent=True)
            result = self.of_type(out, "execute_result")[0]["content"]["data"]["application/json"]
            self.assertEqual(result, 42)

if __name__ == "__main__":
    unittest.main(verbosity=2)
