# cellgate's Python kernel launcher: ipykernel as `python3 -m ipykernel_launcher` starts it,
# but the connection file the server wrote into the ipc directory is read once, without
# following a link, and must be a regular file. The directory is the sandbox's to write, so
# code in the session may have swapped a link or something else in at that name; ipykernel
# would then make a configuration of its own (TCP ports) that the server can never reach,
# and the start would hang to its deadline. Here the kernel exits at once, saying why.
import json
import os
import stat
import sys
import types

if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]  # as ipykernel_launcher: the launcher's folder is no module path

# ipykernel imports debugpy for its debugger, and debugpy's plugin packages call
# pkg_resources.declare_namespace, whose import scans every installed distribution: 100-150 ms
# of a kernel's cold start. For the kernel's own import a stand-in takes its place, whose
# declare_namespace leaves a package's path as it is (what the real one gives where no other
# distribution declares the namespace, as here); code in the kernel imports the real one.
_STAND_IN = types.ModuleType("pkg_resources")
_STAND_IN.declare_namespace = lambda name: None
_HIDE = "pkg_resources" not in sys.modules
if _HIDE:
    sys.modules["pkg_resources"] = _STAND_IN
try:
    from ipykernel.kernelapp import IPKernelApp  # noqa: E402
finally:
    if _HIDE and sys.modules.get("pkg_resources") is _STAND_IN:
        del sys.modules["pkg_resources"]


class CellgateKernelApp(IPKernelApp):
    def init_connection_file(self):
        path = os.path.abspath(self.connection_file)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, encoding="utf-8") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    raise OSError("not a regular file")
                info = json.load(f)
        except (OSError, ValueError) as e:
            print(f"cellgate: connection file {path}: {e}", file=sys.stderr, flush=True)
            self.exit(1)
        self.connection_file = path
        self.load_connection_info(info)


if __name__ == "__main__":
    CellgateKernelApp.launch_instance()
