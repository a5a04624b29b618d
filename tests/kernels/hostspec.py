"""A kernel spec from kernels/<language>/kernel.json, installed in a temporary JUPYTER_PATH
so jupyter_kernel_test can start that kernel on the host (unsandboxed, over tcp).

Paths under /opt/cellgate/kernels (where sandboxes see the repository's kernels/
directory) become the repository's kernels/; HOME_ENV=True also moves the spec's /tmp/
paths (the sandbox's home) into the test's directory.
"""

import json
import os
import shutil
import tempfile

from jupyter_client.manager import start_new_kernel

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(REPO, "kernels")
SANDBOX_KERNELS = "/opt/cellgate/kernels"


class HostKernelspec:
    def __init__(self, language, name, home_env=False):
        self.language = language
        self.name = name
        self.home_env = home_env
        self.tmp = None
        self._saved_env = {}

    def install(self):
        """Writes the spec and points JUPYTER_PATH and JUPYTER_RUNTIME_DIR at it."""
        self.tmp = tempfile.mkdtemp(prefix="cellgate-%s-kernel-" % self.language)
        with open(os.path.join(KERNELS, self.language, "kernel.json")) as f:
            spec = json.load(f)
        home = os.path.join(self.tmp, "home") + "/"
        spec["argv"] = [a.replace(SANDBOX_KERNELS, KERNELS) for a in spec["argv"]]
        spec["env"] = {
            k: (v.replace("/tmp/", home) if self.home_env else v).replace(SANDBOX_KERNELS, KERNELS)
            for k, v in spec.get("env", {}).items()
        }
        spec["display_name"] = spec.get("display_name", self.language) + " (host test)"
        kdir = os.path.join(self.tmp, "share", "kernels", self.name)
        os.makedirs(kdir)
        with open(os.path.join(kdir, "kernel.json"), "w") as f:
            json.dump(spec, f, indent=2)
        os.makedirs(os.path.join(self.tmp, "work"))
        os.makedirs(home)
        for k, v in (
            ("JUPYTER_PATH", os.path.join(self.tmp, "share")),
            # Keep jupyter_client's runtime files (connection files) out of $HOME.
            ("JUPYTER_RUNTIME_DIR", os.path.join(self.tmp, "runtime")),
        ):
            self._saved_env[k] = os.environ.get(k)
            os.environ[k] = v
        return spec

    def start(self):
        """Starts the kernel with a scratch working directory, as /mnt/data is in a sandbox.
        Returns (kernel manager, client)."""
        return start_new_kernel(kernel_name=self.name, startup_timeout=60, cwd=os.path.join(self.tmp, "work"))

    def remove(self):
        for k, v in self._saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
