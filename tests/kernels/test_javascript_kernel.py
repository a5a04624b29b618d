"""Jupyter protocol tests of cellgate's JavaScript kernel (tslab), run on the host.

    cd tests/kernels && /usr/bin/python3 -m unittest -v test_javascript_kernel

The kernel runs unsandboxed from a kernelspec made in a temporary JUPYTER_PATH:
kernels/javascript/kernel.json with /opt/cellgate/kernels (where sandboxes see
the repo's kernels/ directory) replaced by the repo's kernels/ directory, over
tcp as jupyter_kernel_test does. It needs kernels/javascript/node_modules
(`cd kernels/javascript && npm ci`) and python3-jupyter-kernel-test.
"""

import base64
import os
import subprocess
import time
import unittest

import jupyter_kernel_test
from jupyter_kernel_test.msgspec_v5 import validate_message

from hostspec import KERNELS, HostKernelspec

SPEC = HostKernelspec("javascript", "cellgate-javascript-test")

# One PNG pixel.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

def setUpModule():
    tslab = os.path.join(KERNELS, "javascript", "node_modules", "tslab", "package.json")
    if not os.path.exists(tslab):
        raise RuntimeError(
            "kernels/javascript/node_modules is missing: run "
            "`(cd kernels/javascript && npm ci --no-audit --no-fund)` or scripts/setup.sh"
        )
    SPEC.install()


def tearDownModule():
    SPEC.remove()


class JavaScriptKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = SPEC.name

    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = SPEC.start()

    # -- kernel_info
    language_name = "javascript"
    file_extension = ".js"

    # -- streams
    code_hello_world = "console.log('hello, world')"
    code_stderr = "console.error('oops')"

    # -- completion: TypeScript's language service, with Node's types
    completion_samples = [
        {"text": "Math.ab", "matches": ["abs"]},
        {"text": "let myVariable = 1; myVar", "matches": ["myVariable"]},
        {"text": "require('fs').readFileS", "matches": ["readFileSync"]},
    ]

    # -- is_complete: tslab answers complete or incomplete, never invalid
    complete_code_samples = [
        "1 + 1",
        "console.log('x')",
        "function f() { return 1 }",
        "const a = [1, 2, 3]",
        "if (true) { 1 }",
    ]
    incomplete_code_samples = [
        "function f() {",
        "if (x) {",
        "foo(",
        "const o = {",
        "for (let i = 0; i < 3; i++)",
    ]

    # -- rich output through tslab's display API
    code_display_data = [
        {"code": "require('tslab').display.html('<b>x</b>')", "mime": "text/html"},
        {"code": "require('tslab').display.markdown('# title')", "mime": "text/markdown"},
        {"code": "require('tslab').display.svg('<svg xmlns=\"http://www.w3.org/2000/svg\"/>')",
         "mime": "image/svg+xml"},
        {"code": "require('tslab').display.png(Buffer.from('%s', 'base64'))"
                 % base64.b64encode(PNG).decode(), "mime": "image/png"},
    ]

    # -- the value of the last expression, as Node's util.inspect shows it
    code_execute_result = [
        {"code": "6 * 7", "result": "42"},
        {"code": "'a' + 'b'", "result": "'ab'"},
        {"code": "({a: 1, b: [1, 2]})", "result": "{ a: 1, b: [ 1, 2 ] }"},
        {"code": "await new Promise(r => setTimeout(r, 100)); 42", "result": "42"},
    ]

    # -- an uncaught exception: one `error` message and an error reply
    code_generate_error = "throw new Error('boom')"

    # -- inspect: TypeScript's quick info
    code_inspect_sample = "Math.max"

    # history_request gets an empty history: no supported_history_operations.

    # ---- beyond jupyter_kernel_test's own tests ---------------------------

    def run_cell(self, code, timeout=30):
        self.flush_channels()
        return self.execute_helper(code, timeout=timeout)

    def test_kernel_info_versions(self):
        self.flush_channels()
        msg_id = self.kc.kernel_info()
        reply = self.kc.get_shell_msg(timeout=15)
        validate_message(reply, "kernel_info_reply", msg_id)
        content = reply["content"]
        self.assertEqual(content["status"], "ok")
        self.assertRegex(content["language_info"]["version"], r"^\d+\.\d+\.\d+$")
        self.assertEqual(content["language_info"]["mimetype"], "text/javascript")

    def test_error_reply_has_ename_evalue_traceback(self):
        reply, out = self.run_cell("function f() { throw new TypeError('bad thing') }\nf()")
        content = reply["content"]
        self.assertEqual(content["status"], "error")
        self.assertEqual(content["ename"], "TypeError")
        self.assertEqual(content["evalue"], "bad thing")
        self.assertTrue(any("at f " in line for line in content["traceback"]), content["traceback"])
        errors = [m for m in out if m["msg_type"] == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["content"]["ename"], "TypeError")
        # tslab's internals are not in the traceback.
        self.assertFalse(any("tslab/dist" in line for line in content["traceback"]))

    def test_async_rejection_is_an_error(self):
        reply, out = self.run_cell("await Promise.reject(new RangeError('late'))")
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "RangeError")
        self.assertEqual(reply["content"]["evalue"], "late")

    def test_syntax_error(self):
        reply, out = self.run_cell("let = ;")
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "CompileError")
        self.assertIn("Expression expected", reply["content"]["evalue"])
        self.assertEqual([m["msg_type"] for m in out], ["error"])

    def test_thrown_non_error(self):
        reply, out = self.run_cell("throw 42")
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["evalue"], "42")

    def test_next_cell_after_error_runs(self):
        # tslab aborts every request for 200 ms after an error; cellgate-tslab.js
        # aborts only those already queued.
        self.run_cell("throw new Error('first')")
        reply, out = self.run_cell("'second'")
        self.assertEqual(reply["content"]["status"], "ok")

    def test_plain_javascript_is_not_type_checked(self):
        reply, out = self.run_cell("let retyped = 1; retyped = 'a'; retyped")
        self.assertEqual(reply["content"]["status"], "ok", out)
        results = [m for m in out if m["msg_type"] == "execute_result"]
        self.assertEqual(results[0]["content"]["data"]["text/plain"], "'a'")

    def test_unknown_name_is_a_reference_error(self):
        reply, out = self.run_cell("noSuchFunction()")
        self.assertEqual(reply["content"]["ename"], "ReferenceError")

    def test_bindings_live_across_cells(self):
        self.run_cell("const pathMod = require('path'); let counter = 1")
        self.run_cell("counter++")
        self.run_cell("counter++")
        reply, out = self.run_cell("[pathMod.join('a', 'b'), counter]")
        self.assertEqual(reply["content"]["status"], "ok", out)
        results = [m for m in out if m["msg_type"] == "execute_result"]
        self.assertEqual(results[0]["content"]["data"]["text/plain"], "[ 'a/b', 3 ]")

    def test_import_statement(self):
        reply, out = self.run_cell("import * as os from 'os'; typeof os.cpus")
        self.assertEqual(reply["content"]["status"], "ok", out)
        results = [m for m in out if m["msg_type"] == "execute_result"]
        self.assertEqual(results[0]["content"]["data"]["text/plain"], "'function'")

    def test_module_installed_after_a_failed_import(self):
        # The import fails, then the module appears in node_modules (as `npm install`
        # puts it there): TypeScript's watch re-resolves the failed import on a second
        # timer, which tslab's one-timer slot refused ("Unexpected pending
        # rebuildTimer") on every later cell, for good.
        reply, out = self.run_cell("import * as late from 'cg_late_module'")
        self.assertEqual(reply["content"]["status"], "error")
        module = os.path.join(SPEC.tmp, "work", "node_modules", "cg_late_module")
        os.makedirs(module)
        with open(os.path.join(module, "index.js"), "w") as f:
            f.write("exports.answer = 42;\n")
        time.sleep(3)  # the folder watch reports the change on a timer of its own
        for code, want in (("1 + 1", "2"), ("import * as late2 from 'cg_late_module'; late2.answer", "42")):
            reply, out = self.run_cell(code)
            self.assertEqual(reply["content"]["status"], "ok", (code, reply["content"], out))
            results = [m for m in out if m["msg_type"] == "execute_result"]
            self.assertEqual(results[0]["content"]["data"]["text/plain"], want)

    def test_png_is_base64(self):
        code = "require('tslab').display.png(new Uint8Array([%s]))" % ", ".join(str(b) for b in PNG)
        reply, out = self.run_cell(code)
        self.assertEqual(reply["content"]["status"], "ok")
        data = [m for m in out if m["msg_type"] == "display_data"][0]["content"]["data"]
        self.assertEqual(base64.b64decode(data["image/png"]), PNG)

    def test_update_display(self):
        reply, out = self.run_cell(
            "const d = require('tslab').newDisplay(); d.text('one'); d.html('<i>two</i>')"
        )
        self.assertEqual(reply["content"]["status"], "ok")
        types = [m["msg_type"] for m in out]
        self.assertEqual(types, ["display_data", "update_display_data"])
        ids = {m["content"]["transient"]["display_id"] for m in out}
        self.assertEqual(len(ids), 1)

    def test_stdout_interleaving(self):
        reply, out = self.run_cell("console.log('a'); console.error('b'); console.log('c'); 1")
        streams = [(m["content"]["name"], m["content"]["text"]) for m in out if m["msg_type"] == "stream"]
        self.assertEqual(streams, [("stdout", "a\n"), ("stderr", "b\n"), ("stdout", "c\n")])

    def test_many_lines_all_arrive(self):
        # zeromq.js delays a socket's 513th send made at once and throws EBUSY at the
        # next one: tslab's unawaited sends made such a cell stop at about 510 lines and
        # never finish. Streams are now gathered per turn of the event loop.
        reply, out = self.run_cell("for (let i = 0; i < 3000; i++) console.log('line ' + i); 1")
        self.assertEqual(reply["content"]["status"], "ok", reply["content"])
        text = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
        self.assertEqual(text, "".join("line %d\n" % i for i in range(3000)))
        reply, out = self.run_cell("for (let i = 0; i < 600; i++) process.stdout.write(i % 2 ? 'b' : 'a'); 2")
        self.assertEqual(reply["content"]["status"], "ok", reply["content"])
        text = "".join(m["content"]["text"] for m in out if m["msg_type"] == "stream")
        self.assertEqual(text, "ab" * 300)

    def test_interrupt_synchronous_loop(self):
        self.flush_channels()
        msg_id = self.kc.execute("while (true) {}")
        time.sleep(1.0)
        self.km.interrupt_kernel()  # interrupt_mode "signal": SIGINT
        reply = self.get_non_kernel_info_reply(timeout=10)
        validate_message(reply, "execute_reply", msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertIn("interrupted", reply["content"]["evalue"])
        reply, out = self.run_cell("'alive'")
        self.assertEqual(reply["content"]["status"], "ok")

    def test_interrupt_pending_await(self):
        self.flush_channels()
        msg_id = self.kc.execute("await new Promise(r => setTimeout(r, 60000))")
        time.sleep(1.0)
        self.km.interrupt_kernel()
        reply = self.get_non_kernel_info_reply(timeout=10)
        validate_message(reply, "execute_reply", msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertIn("Interrupted", reply["content"]["evalue"])

    def test_comm_info(self):
        self.flush_channels()
        msg_id = self.kc.comm_info()
        reply = self.get_non_kernel_info_reply(timeout=15)
        validate_message(reply, "comm_info_reply", msg_id)


class UntypedStartTests(unittest.TestCase):
    """In JavaScript mode the kernel converts cells with a program without types (no lib,
    no @types/node) and reads TypeScript's declarations only for the first completion or
    inspection (cellgate-tslab.js). Cells behave as with the types: bindings that a cell
    requires are the cell's own in later cells, even where a global has the same name."""

    @classmethod
    def setUpClass(cls):
        saved = os.environ.get("NODE_OPTIONS")
        os.environ["NODE_OPTIONS"] = "--require " + os.path.join(os.path.dirname(__file__), "dts_reads.js")
        try:
            cls.km, cls.kc = SPEC.start()  # a kernel of its own: nothing has completed in it yet
        finally:
            if saved is None:
                del os.environ["NODE_OPTIONS"]
            else:
                os.environ["NODE_OPTIONS"] = saved

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel(now=True)

    def run_cell(self, code):
        """The cell's execute_result text (or stdout), failing on an error."""
        msg_id = self.kc.execute(code)
        text = ""
        while True:
            msg = self.kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "error":
                self.fail("%s: %s" % (content["ename"], content["evalue"]))
            if kind == "execute_result":
                text += content["data"]["text/plain"]
            if kind == "stream" and content["name"] == "stdout":
                text += content["text"]
            if kind == "status" and content["execution_state"] == "idle":
                break
        while self.kc.get_shell_msg(timeout=60)["parent_header"].get("msg_id") != msg_id:
            pass
        return text

    def types_read(self):
        return self.run_cell(
            "globalThis.__dtsReads.filter((f) => /lib\\.es|@types\\/node/.test(f)).length")

    def test_untyped_until_completion(self):
        self.assertEqual(self.types_read(), "0")
        self.run_cell("const { setTimeout } = require('timers/promises');\n"
                      "const { readFileSync: rf } = require('fs'); let n = [1, 2].map((v) => v * 2)")
        # The promise setTimeout the cell required, not the global one; rf kept too.
        self.assertEqual(self.run_cell("await setTimeout(1, 'later')"), "'later'")
        self.assertEqual(self.run_cell("typeof rf + ' ' + n.length"), "'function 2'")
        self.assertEqual(self.run_cell("await Promise.resolve(7)"), "7")
        self.assertEqual(self.types_read(), "0")
        # The first completion reads the types and completes with them (Node's process).
        msg_id = self.kc.complete("process.versi", 13)
        reply = self.kc.get_shell_msg(timeout=60)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        self.assertIn("version", reply["content"]["matches"])
        self.assertIn("versions", reply["content"]["matches"])
        self.assertNotEqual(self.types_read(), "0")
        self.assertEqual(self.run_cell("n[1] + 1"), "5")


class CodeCacheTests(unittest.TestCase):
    """`node cellgate-tslab.js --make-code-cache` (scripts/setup.sh) writes V8's code cache of
    TypeScript, named after this Node.js's V8, which the kernel then loads without a complaint (it says so when the cache
    does not match its Node.js)."""

    def test_make_and_use(self):
        js = os.path.join(KERNELS, "javascript")
        v8 = subprocess.run(["/usr/bin/node", "-p", "process.versions.v8"], capture_output=True,
                            text=True, timeout=60).stdout.strip()
        cache = os.path.join(js, "node_modules", f".cellgate-typescript-v8-{v8}.v8cache")
        made = subprocess.run(["/usr/bin/node", "cellgate-tslab.js", "--make-code-cache"], cwd=js,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(made.returncode, 0, made.stderr)
        self.assertGreater(os.path.getsize(cache), 1 << 20)
        run = subprocess.run(["/usr/bin/node", os.path.join(js, "cellgate-tslab.js"), "kernel",
                              "--config-path", os.path.join(js, "no-such-connection-file")],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 2, run.stderr)
        self.assertIn("no connection file", run.stderr)
        self.assertNotIn("does not match", run.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
