# A null Jupyter kernel for measuring the bridge's own cost (issue 29, point 3): it answers
# every shell and control request at once with a correct wire-protocol reply (HMAC-SHA256
# signed, status busy/idle on iopub around it) and runs nothing. Standard library plus pyzmq
# only, so it runs in a sandbox with the host's /usr. It is a benchmark tool, never offered
# by default: bench_bridge.py puts its source inline into a kernel.json (python3 -c SOURCE
# {connection_file}) in a temporary --kernelspecs directory, so nothing needs to be bound
# into the sandbox beyond what every session has.
#
#     python3 null_kernel.py CONNECTION_FILE        (or: python3 -c "$(cat null_kernel.py)" FILE)
import hashlib
import hmac
import json
import os
import sys
import uuid
from datetime import datetime, timezone

import zmq

DELIM = b"<IDS|MSG>"


def main(path):
    with open(path, encoding="utf-8") as f:
        info = json.load(f)
    key = info["key"].encode()
    session = uuid.uuid4().hex

    def endpoint(port):
        if info.get("transport", "tcp") == "ipc":
            return "ipc://%s-%s" % (info["ip"], port)
        return "tcp://%s:%s" % (info["ip"], port)

    ctx = zmq.Context()
    shell, control, stdin = (ctx.socket(zmq.ROUTER) for _ in range(3))
    iopub, hb = ctx.socket(zmq.PUB), ctx.socket(zmq.REP)
    for sock, name in ((shell, "shell_port"), (control, "control_port"), (stdin, "stdin_port"),
                       (iopub, "iopub_port"), (hb, "hb_port")):
        sock.linger = 0
        sock.bind(endpoint(info[name]))
    counter = [0]

    def send(sock, msg_type, content, parent, idents=()):
        header = {"msg_id": "%s_%d" % (session, counter[0]), "msg_type": msg_type, "username": "null",
                  "session": session, "date": datetime.now(timezone.utc).isoformat(), "version": "5.3"}
        counter[0] += 1
        parts = [json.dumps(p).encode() for p in (header, parent, {}, content)]
        sig = hmac.new(key, b"".join(parts), hashlib.sha256).hexdigest().encode()
        sock.send_multipart(list(idents) + [DELIM, sig] + parts)

    def status(state, parent):
        send(iopub, "status", {"execution_state": state}, parent)

    count = [0]

    def reply(msg_type, content):
        if msg_type == "execute_request":
            if not content.get("silent"):
                count[0] += 1
            return {"status": "ok", "execution_count": count[0], "user_expressions": {}, "payload": []}
        if msg_type == "kernel_info_request":
            return {"status": "ok", "protocol_version": "5.3", "implementation": "null",
                    "implementation_version": "1", "banner": "null kernel",
                    "language_info": {"name": "python", "version": sys.version.split()[0],
                                      "file_extension": ".py", "mimetype": "text/x-python"}}
        if msg_type == "complete_request":
            return {"status": "ok", "matches": [], "cursor_start": 0, "cursor_end": 0, "metadata": {}}
        if msg_type == "inspect_request":
            return {"status": "ok", "found": False, "data": {}, "metadata": {}}
        if msg_type == "is_complete_request":
            return {"status": "complete"}
        if msg_type == "comm_info_request":
            return {"status": "ok", "comms": {}}
        if msg_type == "history_request":
            return {"status": "ok", "history": []}
        return {"status": "ok"}

    def handle(sock):
        frames = sock.recv_multipart()
        if DELIM not in frames:
            return True
        at = frames.index(DELIM)
        idents, rest = frames[:at], frames[at + 1:]
        if len(rest) < 5:
            return True
        want = hmac.new(key, b"".join(rest[1:5]), hashlib.sha256).hexdigest().encode()
        if not hmac.compare_digest(want, rest[0]):
            return True
        header = json.loads(rest[1])
        content = json.loads(rest[4])
        msg_type = header.get("msg_type", "")
        if not msg_type.endswith("_request"):
            return True
        status("busy", header)
        if msg_type == "execute_request":
            send(iopub, "execute_input", {"code": content.get("code", ""), "execution_count": count[0] + 1}, header)
        send(sock, msg_type[: -len("_request")] + "_reply", reply(msg_type, content), header, idents)
        status("idle", header)
        return msg_type != "shutdown_request"

    poller = zmq.Poller()
    for sock in (shell, control, stdin, hb):
        poller.register(sock, zmq.POLLIN)
    running = True
    while running:
        for sock, _ in poller.poll():
            if sock is hb:
                hb.send(hb.recv())
            elif sock is stdin:
                sock.recv_multipart()  # no input_request is ever sent: nothing to answer
            else:
                running = handle(sock) and running
    ctx.destroy(linger=0)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: null_kernel.py CONNECTION_FILE")
    os.environ.pop("PYTHONSTARTUP", None)
    main(sys.argv[1])
