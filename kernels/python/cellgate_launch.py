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

if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]  # as ipykernel_launcher: the launcher's folder is no module path

from ipykernel.kernelapp import IPKernelApp  # noqa: E402


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
