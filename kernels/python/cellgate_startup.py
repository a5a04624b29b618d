# cellgate: run by ipykernel at start (--IPKernelApp.exec_files), in the sandbox.
#
# The server refuses any message from a kernel over --max-message-mb (it is told here as
# CELLGATE_MAX_MESSAGE_BYTES), which bounds its memory. Two things keep ordinary outputs
# under that limit, so nothing a cell legitimately produces is lost:
#
# - streams: ipykernel sends what a cell prints once per flush interval (0.2 s) as one
#   message, so a fast print loop (or one huge print) becomes a message of tens or hundreds
#   of MB. Writes are cut into pieces and flushed once a megabyte is buffered.
# - rich outputs: a display (or a cell's value) whose data would not fit in a message has
#   its large parts saved as files in /mnt/data/outputs/ and replaced by a short note naming
#   them; the server lists the files among the run's artifacts with download links.
#
# Those two apply to every request: the limit holds for a Jupyter front end's too.
#
# The rest is agent behaviour, for the requests the server sends for MCP tool calls only
# (their metadata carries "cellgate_agent": true; the gateway removes it from what a front
# end sends), so a notebook attached through the gateway sees the stock kernel. For the
# agent, errors read as they would in a script, without the kernel's machinery:
#
# - input() in a call without stdin (the server then says allow_stdin false) raises
#   StdinNotImplementedError "input() needs stdin: pass `stdin` with the call", and input()
#   past the end of stdin EOFError "EOF when reading a line" (getpass() too); either is
#   shown as one line.
# - sys.exit(n) shows nothing (a message for a non-numeric n) and no "To exit: use 'exit'"
#   warning; the server turns the SystemExit into exit code n.
# - tracebacks leave out the frames of ipykernel, IPython and this file; a cell's code is
#   named "Cell In [n]" (in warnings, SyntaxErrors and traceback.print_exc() too) instead of
#   ipykernel's /tmp/ipykernel_<pid>/<hash>.py.
#
# and a cell's dict or list value also comes as JSON (application/json) beside its repr.


def _cellgate_agent_check():
    # A function telling whether the request being run came from an MCP tool: the parent
    # of the current cell (ipykernel 6: kernel.get_parent()) carries the server's mark.
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)

    def from_agent():
        parent = kernel.get_parent("shell") if kernel is not None else None
        metadata = parent.get("metadata") if isinstance(parent, dict) else None
        return isinstance(metadata, dict) and metadata.get("cellgate_agent") is True

    return from_agent


def _cellgate_bound_messages():
    import base64
    import itertools
    import json
    import os

    import ipykernel.iostream as iostream
    from IPython import get_ipython

    limit = int(os.environ.get("CELLGATE_MAX_MESSAGE_BYTES") or 0) or (8 << 20)
    piece = min(1 << 20, limit // 8)
    write = iostream.OutStream.write

    def bounded_write(self, string):
        if self.pub_thread is None or not isinstance(string, str):
            return write(self, string)
        for start in range(0, max(len(string), 1), piece):
            write(self, string[start:start + piece])
            if self._buffer.tell() >= piece:
                self.flush()
        return len(string)

    iostream.OutStream.write = bounded_write

    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:
        return
    session = kernel.session
    send = session.send
    numbers = itertools.count(1)
    binary = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif",
              "image/webp": "webp", "application/pdf": "pdf"}
    text = {"image/svg+xml": "svg", "text/html": "html", "text/markdown": "md",
            "text/latex": "tex", "application/json": "json", "text/plain": "txt"}

    def size(value):
        if isinstance(value, bytes):
            return (len(value) + 2) // 3 * 4
        if isinstance(value, str):
            return len(value)
        return len(json.dumps(value, default=str))

    def save(data):
        n = next(numbers)
        kept, notes = {}, []
        os.makedirs("/mnt/data/outputs", exist_ok=True)
        for mime, value in data.items():
            if size(value) <= 65536:
                kept[mime] = value
                continue
            ext = binary.get(mime) or text.get(mime) or "out"
            path = f"/mnt/data/outputs/large-{os.getpid()}-{n}.{ext}"
            if isinstance(value, bytes):
                raw = value
            elif mime in binary and isinstance(value, str):
                try:
                    raw = base64.b64decode(value, validate=False)
                except ValueError:
                    raw = value.encode("utf-8", "surrogatepass")
            elif isinstance(value, str):
                raw = value.encode("utf-8", "surrogatepass")
            else:
                raw = json.dumps(value, default=str).encode()
            with open(path, "wb") as f:
                f.write(raw)
            notes.append(f"[{mime} output of {len(raw)} bytes saved to {path}: too large to send "
                         f"(a message may carry {limit} bytes)]")
        note = "\n".join(notes)
        kept["text/plain"] = f"{kept['text/plain']}\n{note}" if isinstance(kept.get("text/plain"), str) else note
        return kept

    def bounded_send(stream, msg_or_type, content=None, *args, **kwargs):
        msg = msg_or_type if isinstance(msg_or_type, dict) else None
        kind = msg["header"]["msg_type"] if msg else msg_or_type
        body = msg["content"] if msg else content
        if (kind in ("display_data", "update_display_data", "execute_result")
                and isinstance(body, dict) and isinstance(body.get("data"), dict)
                and sum(size(v) for v in body["data"].values()) > limit - (256 << 10)):
            body = dict(body, data=save(body["data"]))
            if msg:
                msg_or_type = dict(msg, content=body)
            else:
                content = body
        return send(stream, msg_or_type, content, *args, **kwargs)

    session.send = bounded_send


def _cellgate_plain_errors(from_agent):
    import os
    import re
    import sys

    import IPython
    import IPython.core.interactiveshell as interactiveshell
    import ipykernel
    import warnings
    from IPython import get_ipython
    from IPython.core.error import StdinNotImplementedError

    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return
    here = sys._getframe().f_code.co_filename
    internal = tuple(os.path.dirname(m.__file__) + os.sep for m in (ipykernel, IPython))
    ansi = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
    frame_file = re.compile(r"File (.+?):\d+, in ")

    def stdin_reader(name, read):
        def cell_input(*args, **kwargs):
            if not kernel._allow_stdin:
                raise StdinNotImplementedError(f"{name}() needs stdin: pass `stdin` with the call")
            try:
                return read(kernel, *args, **kwargs)
            except EOFError:
                raise EOFError("EOF when reading a line") from None
        return cell_input

    readers = {"raw_input": stdin_reader("input", type(kernel).raw_input),
               "getpass": stdin_reader("getpass", type(kernel).getpass)}
    execute_request = kernel.shell_handlers["execute_request"]

    def agent_execute_request(stream, ident, parent):
        # ipykernel hands input() and getpass() to the cell from these attributes: the
        # agent's readers for its requests, the kernel's own methods (nothing of this
        # file in their tracebacks) for a front end's.
        agent = from_agent()
        for attribute, reader in readers.items():
            if agent:
                setattr(kernel, attribute, reader)
            else:
                vars(kernel).pop(attribute, None)
        return execute_request(stream, ident, parent)

    kernel.shell_handlers["execute_request"] = agent_execute_request

    def internal_frame(text):
        found = frame_file.match(ansi.sub("", text).lstrip())
        return found is not None and (found.group(1).startswith(internal)
                                      or found.group(1) == here)

    def input_failure(tb):
        # (raised by input() itself, where in the cells it was called) or None.
        at = innermost = None
        while tb is not None:
            innermost = tb.tb_frame.f_code.co_filename
            number = shell.compile._filename_map.get(innermost)
            if number:
                at = f"Cell In [{number}], line {tb.tb_lineno}"
            tb = tb.tb_next
        if innermost is None or not (innermost == here or innermost.startswith(internal)):
            return None
        return (at,)

    show = shell._showtraceback

    def plain_showtraceback(etype, evalue, stb):
        if not from_agent():
            return show(etype, evalue, stb)
        if issubclass(etype, SystemExit):
            code = evalue.code
            if code is None or isinstance(code, int):
                shell._last_traceback = []
                return None
            stb = [str(code)]
        elif (issubclass(etype, (StdinNotImplementedError, EOFError))
              and (failure := input_failure(evalue.__traceback__))):
            at = failure[0]
            stb = [f"{etype.__name__}: {evalue}" + (f" ({at})" if at else "")]
        else:
            stb = [text for text in stb if not internal_frame(text)]
        return show(etype, evalue, stb)

    shell._showtraceback = plain_showtraceback

    warn = interactiveshell.warn

    def quiet_warn(message, category=None, stacklevel=1, source=None):
        if str(message).startswith("To exit: use") and from_agent():
            return
        warn(message, category, stacklevel + 1, source)

    interactiveshell.warn = quiet_warn

    code_name = shell.compile.get_code_name

    def cell_name(raw_code, transformed_code, number):
        if number and from_agent():
            return f"Cell In [{number}]"
        return code_name(raw_code, transformed_code, number)

    shell.compile.get_code_name = cell_name


def _cellgate_json_values(from_agent):
    # For an MCP tool's request, a cell's dict or list value also comes as application/json,
    # so that the result's returnValue is JSON, not Python's repr: only when it is plain
    # JSON data (str keys, no NaN, no objects) and at most 64 KB of it; else just the repr.
    import json

    from IPython import get_ipython
    from IPython.utils.dir2 import get_real_method

    shell = get_ipython()
    if shell is None:
        return
    formatter = shell.display_formatter.formatters["application/json"]

    def as_json(value):
        if not from_agent():  # as stock IPython: the value's own _repr_json_, if any
            own = get_real_method(value, formatter.print_method)
            return own() if own is not None else None
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            return None
        return json.loads(text) if len(text) <= 65536 else None

    for kind in (dict, list):
        formatter.for_type(kind, as_json)


def _cellgate_working_dir():
    # A kernel a Jupyter front end started through the gateway may name its working
    # directory (KERNEL_WORKING_DIR): a path relative to the workspace is used when it
    # exists; an absolute one is the front end's own path, meaningless here.
    import os

    wanted = os.environ.get("KERNEL_WORKING_DIR", "")
    target = os.path.join("/mnt/data", wanted)
    if wanted and not wanted.startswith("/") and ".." not in wanted and os.path.isdir(target):
        os.chdir(target)


_cellgate_bound_messages()
_cellgate_plain_errors(_cellgate_agent_check())
_cellgate_json_values(_cellgate_agent_check())
_cellgate_working_dir()
del _cellgate_bound_messages, _cellgate_agent_check, _cellgate_plain_errors, _cellgate_json_values
del _cellgate_working_dir
