"""Jupyter protocol tests of cellgate's Python kernel (ipykernel), run on the host.

    cd tests/kernels && /usr/bin/python3 -m unittest -v test_python_kernel

The kernel runs unsandboxed from a kernelspec made in a temporary JUPYTER_PATH
out of kernels/python/kernel.json (its argv and env), over tcp as
jupyter_kernel_test does. It needs python3-ipykernel and
python3-jupyter-kernel-test.
"""

import re
import time
import unittest

import jupyter_kernel_test
from jupyter_kernel_test.msgspec_v5 import validate_message

from hostspec import HostKernelspec

SPEC = HostKernelspec("python", "cellgate-python-test", home_env=True)


def setUpModule():
    SPEC.install()


def tearDownModule():
    SPEC.remove()


class PythonKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = SPEC.name

    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = SPEC.start()

    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('oops', file=sys.stderr)"

    completion_samples = [
        {"text": "zi", "matches": {"zip"}},
    ]

    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]

    code_page_something = "zip?"

    code_generate_error = "raise ValueError('boom')"

    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"},
    ]

    code_display_data = [
        {"code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))",
         "mime": "text/html"},
        {"code": "from IPython.display import Math, display; display(Math('\\\\frac{1}{2}'))",
         "mime": "text/latex"},
    ]

    # The history is in memory (--HistoryManager.hist_file=:memory:).
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "search")

    code_inspect_sample = "zip"

    code_clear_output = "from IPython.display import clear_output; clear_output()"

    def test_error_reply_has_ename_evalue_traceback(self):
        self.flush_channels()
        reply, out = self.execute_helper("def f():\n    raise TypeError('bad thing')\nf()")
        content = reply["content"]
        self.assertEqual(content["status"], "error")
        self.assertEqual(content["ename"], "TypeError")
        self.assertEqual(content["evalue"], "bad thing")
        self.assertTrue(content["traceback"])

    def test_interrupt_synchronous_loop(self):
        self.flush_channels()
        msg_id = self.kc.execute("while True: pass")
        time.sleep(1.0)
        self.km.interrupt_kernel()
        reply = self.get_non_kernel_info_reply(timeout=10)
        validate_message(reply, "execute_reply", msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "KeyboardInterrupt")


class DeferredImportTests(unittest.TestCase):
    """The launcher defers what the kernel's start never uses (cellgate_launch.py): jedi,
    IPython's terminal shell (prompt_toolkit), stack_data and ipykernel's debugger (debugpy)
    run when first used, and then behave as always: jedi's completions with their types,
    IPython.embed, tracebacks, debug requests."""

    def setUp(self):
        self.km, self.kc = SPEC.start()  # a kernel of its own: nothing has run in it yet

    def tearDown(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def loaded(self, *names):
        """Which of NAMES have run in the kernel (a module whose code ran has its own names)."""
        expr = "sorted(n for n in %r if n in sys.modules and hasattr(sys.modules[n], '__file__')" \
               " and len(vars(sys.modules[n])) > 12)" % (names,)
        reply = self.kc.execute_interactive("import sys", user_expressions={"x": expr}, timeout=30)
        value = reply["content"]["user_expressions"]["x"]
        self.assertEqual(value["status"], "ok", value)
        return eval(value["data"]["text/plain"])

    def test_deferred_until_used(self):
        heavy = ("jedi", "jedi.api.classes", "prompt_toolkit", "IPython.terminal.embed", "stack_data")
        self.assertEqual(self.loaded(*heavy), [])
        # jedi completes, with the types only jedi gives (IPython's own matchers say <unknown>).
        self.kc.execute_interactive("s = 'abc'", timeout=30)
        msg_id = self.kc.complete("s.upp", 5)
        reply = self.kc.get_shell_msg(timeout=30)
        self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
        content = reply["content"]
        self.assertEqual(content["status"], "ok")
        self.assertIn("upper", content["matches"])
        types = {c["text"]: c["type"] for c in content["metadata"]["_jupyter_types_experimental"]}
        self.assertEqual(types.get("upper"), "function")
        self.assertEqual(self.loaded("jedi", "jedi.api.classes"), ["jedi", "jedi.api.classes"])
        # A traceback (stack_data) and the terminal shell's embed, run on first use. The error
        # must not abort the next request (stop_on_error, jupyter_client's default, makes
        # ipykernel abort a request that comes while it is still ending the failed one).
        reply = self.kc.execute_interactive("def f():\n    raise KeyError('k')\nf()", timeout=30,
                                            stop_on_error=False)
        self.assertEqual(reply["content"]["ename"], "KeyError")
        plain = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(reply["content"]["traceback"]))
        self.assertIn("raise KeyError('k')", plain)
        reply = self.kc.execute_interactive(
            "import IPython, IPython.terminal.embed as e; assert callable(IPython.embed)\n"
            "assert e.InteractiveShellEmbed.__name__ == 'InteractiveShellEmbed'", timeout=30)
        self.assertEqual(reply["content"]["status"], "ok", reply["content"])
        self.assertEqual(self.loaded("stack_data", "IPython.terminal.embed", "prompt_toolkit"),
                         ["IPython.terminal.embed", "prompt_toolkit", "stack_data"])

    def test_debugger_made_on_first_debug_request(self):
        self.assertEqual(self.loaded("debugpy", "_pydevd_bundle.pydevd_suspended_frames"), [])
        for seq, command, arguments in (
            (1, "initialize", {"clientID": "test", "adapterID": "", "pathFormat": "path",
                               "linesStartAt1": True, "columnsStartAt1": True}),
            (2, "debugInfo", {}),
        ):
            msg = self.kc.session.msg("debug_request", {
                "type": "request", "seq": seq, "command": command, "arguments": arguments})
            self.kc.control_channel.send(msg)
            reply = self.kc.get_control_msg(timeout=60)
            self.assertEqual(reply["parent_header"]["msg_id"], msg["header"]["msg_id"])
            self.assertEqual(reply["content"].get("command"), command, reply["content"])
            self.assertTrue(reply["content"].get("success"), reply["content"])
        self.assertEqual(self.loaded("debugpy", "_pydevd_bundle.pydevd_suspended_frames"),
                         ["_pydevd_bundle.pydevd_suspended_frames", "debugpy"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
