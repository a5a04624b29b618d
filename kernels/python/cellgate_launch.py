# cellgate's Python kernel launcher: ipykernel as `python3 -m ipykernel_launcher` starts it,
# but the connection file the server wrote into the ipc directory is read once, without
# following a link, and must be a regular file. The directory is the sandbox's to write, so
# code in the session may have swapped a link or something else in at that name; ipykernel
# would then make a configuration of its own (TCP ports) that the server can never reach,
# and the start would hang to its deadline. Here the kernel exits at once, saying why.
import asyncio
import importlib
import importlib.machinery
import importlib.util
import json
import os
import stat
import sys
import threading
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

# Modules the kernel's import names but its start never uses: jedi (IPython's completer,
# a fifth of the import) runs on the first complete_request; IPython.terminal.embed (the
# terminal shell and prompt_toolkit, behind `IPython.embed`) on the first use of it;
# stack_data (IPython's tracebacks) on the first error; ipykernel.debugger (debugpy) on
# the first debug_request (_Debugger). While the kernel imports, such a
# module is made but its code does not run: it runs, in the same module object, when code
# first reads a name the module does not hold yet. A submodule of one (jedi.api) is reached
# without running its parent's code, and jedi.settings, which IPython sets at import, is
# the real one. `IPython.embed` is a function that runs the real one.
_DEFERRED = {"jedi", "jedi.api", "jedi.api.helpers", "jedi.api.classes",
             "IPython.terminal.embed", "stack_data", "ipykernel.debugger"}
_REAL_SUBMODULES = {"jedi.settings"}
_LOCK = threading.RLock()


def _embed(**kwargs):
    from IPython.terminal.embed import embed

    return embed(**kwargs)


class _Debugger:
    """ipykernel's debugger (debugpy and its pydevd: as much of the import as IPython's own
    code), made when a debug_request first reaches it. The kernel makes one at its start and
    waits on it for stopped events, which only a started debugger has."""

    def __init__(self, *args, **kwargs):
        self._made = (args, kwargs)
        self._waiting = None  # the future handle_stopped_event awaits until then

    def _real(self):
        with _LOCK:
            if "_debugger" not in self.__dict__:
                module = importlib.import_module("ipykernel.debugger")
                _run_deferred(module)
                args, kwargs = self._made
                self._debugger = module.Debugger(*args, **kwargs)
                waiting = self._waiting
                if waiting is not None:
                    waiting.get_loop().call_soon_threadsafe(waiting.set_result, None)
        return self._debugger

    def __getattr__(self, name):
        return getattr(self._real(), name)

    async def handle_stopped_event(self):
        with _LOCK:
            waiting = None
            if "_debugger" not in self.__dict__:
                if self._waiting is None:
                    self._waiting = asyncio.get_running_loop().create_future()
                waiting = self._waiting
        if waiting is not None:
            await waiting
        await self._real().handle_stopped_event()


_PRESET = {
    "IPython.terminal.embed": {"embed": _embed},
    "ipykernel.debugger": {
        "Debugger": _Debugger,
        "_is_debugpy_available": importlib.util.find_spec("debugpy") is not None,
    },
}


def _run_deferred(module):
    with _LOCK:
        loader = module.__dict__.pop("_cellgate_loader", None)
        if loader is None:
            return  # run, or running (a name read during its own import)
        parent = sys.modules.get(module.__name__.rpartition(".")[0])
        if isinstance(parent, _Deferred):
            _run_deferred(parent)  # as a normal import runs it first
        module.__class__ = types.ModuleType
        module.__spec__.loader = module.__loader__ = loader
        loader.exec_module(module)


class _Deferred(types.ModuleType):
    def __getattr__(self, name):
        if name == "__path__":
            raise AttributeError(name)  # the import system asks whether it is a package
        sub = f"{self.__name__}.{name}"
        if sub in _DEFERRED or sub in _REAL_SUBMODULES:
            return importlib.import_module(sub)
        _run_deferred(self)
        return types.ModuleType.__getattribute__(self, name)


class _DeferringLoader:
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__dict__.update(_PRESET.get(module.__name__, {}))
        module._cellgate_loader = self.loader
        module.__class__ = _Deferred


class _DeferringFinder:
    @staticmethod
    def find_spec(name, path, target=None):
        if name not in _DEFERRED:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _DeferringLoader(spec.loader)
        return spec


_HIDE = "pkg_resources" not in sys.modules
if _HIDE:
    sys.modules["pkg_resources"] = _STAND_IN
sys.meta_path.insert(0, _DeferringFinder)
try:
    from ipykernel.kernelapp import IPKernelApp  # noqa: E402
finally:
    sys.meta_path.remove(_DeferringFinder)
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
