"""A Jupyter kernel started plainly by jupyter_client, with no cellgate in between: what a
stock kernel says, for the gateway tests that compare cellgate's with it."""

import json
import os
import shutil
import tempfile

import test_gateway as tg


class StockKernel:
    """Starts the kernel SPEC_OF(home) describes (a kernel.json as a dict; HOME is the
    kernel's own temporary directory, also its HOME when HOME_ENV) in a scratch directory."""

    def __init__(self, spec_of, prefix="cg-stock-", home_env=False):
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import KernelManager

        self.home = tempfile.mkdtemp(prefix=prefix)
        spec_dir = os.path.join(self.home, "kernels", "stock")
        os.makedirs(spec_dir)
        with open(os.path.join(spec_dir, "kernel.json"), "w") as f:
            json.dump(spec_of(self.home), f)
        ksm = KernelSpecManager(kernel_dirs=[os.path.join(self.home, "kernels")])
        self.km = KernelManager(kernel_spec_manager=ksm, kernel_name="stock")
        work = os.path.join(self.home, "work")
        os.makedirs(work)
        env = dict(os.environ, HOME=self.home) if home_env else None
        self.km.start_kernel(cwd=work, **({"env": env} if env else {}))
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=tg.KERNEL_START_TIMEOUT)

    def execute(self, code, timeout=60):
        """(reply content, iopub messages) of CODE run with allow_stdin false."""
        msg_id = self.kc.execute(code, allow_stdin=False, stop_on_error=False)
        iopub = []
        while True:
            m = self.kc.get_iopub_msg(timeout=timeout)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
            iopub.append(m)
        while True:
            reply = self.kc.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"], iopub

    def stop(self):
        try:
            self.kc.stop_channels()
            self.km.shutdown_kernel(now=True)
        finally:
            shutil.rmtree(self.home, ignore_errors=True)
