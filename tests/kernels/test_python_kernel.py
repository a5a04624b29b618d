"""Jupyter protocol tests of cellgate's Python kernel (ipykernel), run on the host.

    /usr/bin/python3 -m unittest tests/kernels/test_python_kernel.py -v

The kernel runs unsandboxed from a kernelspec made in a temporary JUPYTER_PATH
out of kernels/python/kernel.json (its argv and env), over tcp as
jupyter_kernel_test does. It needs python3-ipykernel and
python3-jupyter-kernel-test.
"""

import json
import os
import shutil
import tempfile
import time
import unittest

from jupyter_client.manager import start_new_kernel
import jupyter_kernel_test
from jupyter_kernel_test.msgspec_v5 import validate_message

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(REPO, "kernels")
SANDBOX_KERNELS = "/opt/cellgate/kernels"
KERNEL_NAME = "cellgate-python-test"

_tmp = None
_saved_env = {}


def setUpModule():
    global _tmp
    _tmp = tempfile.mkdtemp(prefix="cellgate-pykernel-")
    with open(os.path.join(KERNELS, "python", "kernel.json")) as f:
        spec = json.load(f)
    spec["argv"] = [a.replace(SANDBOX_KERNELS, KERNELS) for a in spec["argv"]]
    # The sandbox's paths under /tmp, moved into this test's directory.
    spec["env"] = {
        k: v.replace("/tmp/", os.path.join(_tmp, "home") + "/")
        for k, v in spec.get("env", {}).items()
    }
    kdir = os.path.join(_tmp, "share", "kernels", KERNEL_NAME)
    os.makedirs(kdir)
    with open(os.path.join(kdir, "kernel.json"), "w") as f:
        json.dump(spec, f, indent=2)
    os.makedirs(os.path.join(_tmp, "work"))
    os.makedirs(os.path.join(_tmp, "home"))
    for k, v in (
        ("JUPYTER_PATH", os.path.join(_tmp, "share")),
        ("JUPYTER_RUNTIME_DIR", os.path.join(_tmp, "runtime")),
    ):
        _saved_env[k] = os.environ.get(k)
        os.environ[k] = v


def tearDownModule():
    for k, v in _saved_env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    if _tmp:
        shutil.rmtree(_tmp, ignore_errors=True)


class PythonKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = KERNEL_NAME

    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start_new_kernel(
            kernel_name=cls.kernel_name, startup_timeout=60, cwd=os.path.join(_tmp, "work")
        )

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


if __name__ == "__main__":
    unittest.main(verbosity=2)
