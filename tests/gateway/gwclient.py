#!/usr/bin/python3
"""A small Jupyter kernel WebSocket client (websocket-client), for the gateway's tests.

It speaks the Kernel Gateway "jupyter-websocket" protocol as Jupyter Server and notebook
front ends do: legacy JSON text messages with a `channel` field, and binary frames in
jupyter's legacy binary format (uint32 count, uint32 offsets, the JSON part, the buffers).
The same client talks to cellgate's /api/kernels/{id}/channels directly and to a Jupyter
Server's own /api/kernels/{id}/channels (which proxies to the gateway).

As a program (used by tests/e2e/gateway.test.mjs): runs cells in a kernel and prints one
JSON line per event on stdout:

    gwclient.py --url http://127.0.0.1:PORT --token T --kernel ID [--code CODE]...

    {"event": "open"}                          the WebSocket is attached
    {"event": "sent", "code": CODE}            an execute_request went out
    {"event": "busy"}                          the kernel said busy for it
    {"event": "stream", "name": "stdout", "text": "..."}
    {"event": "error", "ename": ..., "evalue": ...}
    {"event": "reply", "status": "ok"|"error"|...}
Exit status 0 when every cell's reply came, 1 otherwise (the reason on stderr).
"""

import argparse
import datetime
import json
import struct
import sys
import time
import uuid

import websocket

PROTOCOL_VERSION = "5.3"


class GatewayError(Exception):
    """A protocol failure with what was seen."""


def auth_headers(token, scheme="token"):
    return ["Authorization: %s %s" % (scheme, token)] if token else []


def ws_url(http_url, kernel_id, session_id=None):
    base = http_url.rstrip("/")
    if base.startswith("http"):
        base = "ws" + base[4:]
    url = "%s/api/kernels/%s/channels" % (base, kernel_id)
    return url + ("?session_id=%s" % session_id if session_id else "")


def decode_binary(data):
    """jupyter's legacy binary WebSocket message: n, n offsets, JSON part, buffers."""
    if len(data) < 4:
        raise GatewayError("binary frame of %d bytes" % len(data))
    (n,) = struct.unpack("!I", data[:4])
    offsets = list(struct.unpack("!%dI" % n, data[4 : 4 + 4 * n]))
    offsets.append(len(data))
    msg = json.loads(data[offsets[0] : offsets[1]].decode("utf-8"))
    msg["buffers"] = [data[offsets[i] : offsets[i + 1]] for i in range(1, n)]
    return msg


def encode_binary(msg):
    """jupyter's legacy binary message (as Jupyter Server's serialize_binary_message)."""
    msg = dict(msg)
    buffers = [bytes(b) for b in msg.pop("buffers", [])]
    parts = [json.dumps(msg).encode("utf-8")] + buffers
    offsets = [4 * (len(parts) + 1)]
    for part in parts[:-1]:
        offsets.append(offsets[-1] + len(part))
    return struct.pack("!%dI" % (len(parts) + 1), len(parts), *offsets) + b"".join(parts)


V1 = "v1.kernel.websocket.jupyter.org"
V1_PARTS = ("header", "parent_header", "metadata", "content")


def encode_v1(msg):
    """A v1.kernel.websocket.jupyter.org message (as Jupyter Server 2's
    serialize_msg_to_ws_v1): a little-endian uint64 count of offsets, the offsets (the last
    one is the end), then the channel, the four JSON parts and the buffers."""
    parts = [msg["channel"].encode("utf-8")] + [json.dumps(msg.get(k, {})).encode("utf-8") for k in V1_PARTS]
    parts += [bytes(b) for b in msg.get("buffers", [])]
    offsets = [8 * (1 + len(parts) + 1)]
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    return struct.pack("<%dQ" % (len(offsets) + 1), len(offsets), *offsets) + b"".join(parts)


def decode_v1(data):
    (n,) = struct.unpack("<Q", data[:8])
    offsets = struct.unpack("<%dQ" % n, data[8 : 8 * (n + 1)])
    segments = [data[offsets[i] : offsets[i + 1]] for i in range(n - 1)]
    msg = {"channel": segments[0].decode("utf-8")}
    for key, part in zip(V1_PARTS, segments[1:5]):
        msg[key] = json.loads(part.decode("utf-8"))
    msg["msg_type"] = msg["header"].get("msg_type")
    msg["buffers"] = segments[5:]
    return msg


class KernelSocket:
    """One WebSocket attached to a kernel's channels (protocol "legacy", or "v1": the
    v1.kernel.websocket.jupyter.org subprotocol offered and used)."""

    def __init__(self, http_url, kernel_id, token=None, scheme="token", session_id=None, timeout=60, origin=None,
                 protocol="legacy"):
        self.session = session_id or uuid.uuid4().hex
        self.kernel_id = kernel_id
        self.protocol = protocol
        self.url = ws_url(http_url, kernel_id, self.session)
        # websocket-client sends Origin: http://host:port (this listener) unless told another.
        self.ws = websocket.create_connection(self.url, timeout=timeout, header=auth_headers(token, scheme), origin=origin,
                                              subprotocols=[V1] if protocol == "v1" else None)
        self.pending = []  # messages read while waiting for something else

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass

    def new_msg(self, msg_type, content, channel):
        return {
            "header": {
                "msg_id": uuid.uuid4().hex,
                "username": "gwtest",
                "session": self.session,
                "msg_type": msg_type,
                "version": PROTOCOL_VERSION,
                "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            },
            "parent_header": {},
            "metadata": {},
            "content": content,
            "channel": channel,
            "buffers": [],
        }

    def send(self, msg):
        """Sends MSG: v1 binary, legacy binary when it has buffers, else legacy JSON text."""
        if self.protocol == "v1":
            self.ws.send(encode_v1(msg), websocket.ABNF.OPCODE_BINARY)
        elif msg.get("buffers"):
            self.ws.send(encode_binary(msg), websocket.ABNF.OPCODE_BINARY)
        else:
            self.ws.send(json.dumps(msg))
        return msg["header"]["msg_id"]

    def recv(self, timeout):
        """The next message (pending first); raises GatewayError on timeout or close."""
        if self.pending:
            return self.pending.pop(0)
        self.ws.settimeout(max(0.01, timeout))
        try:
            opcode, data = self.ws.recv_data()
        except websocket.WebSocketTimeoutException as e:
            raise GatewayError("no message within %.1f s" % timeout) from e
        except websocket.WebSocketConnectionClosedException as e:
            raise GatewayError("the WebSocket was closed") from e
        if opcode == websocket.ABNF.OPCODE_TEXT:
            return json.loads(data.decode("utf-8"))
        if opcode == websocket.ABNF.OPCODE_BINARY:
            return decode_v1(data) if self.protocol == "v1" else decode_binary(data)
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else None
            raise GatewayError("the WebSocket was closed by the server (%s %r)" % (code, data[2:].decode("utf-8", "replace")))
        return self.recv(timeout)

    def request(self, msg_type, content=None, channel="shell", timeout=60):
        """Send a request; return its reply (the first message on `channel` whose parent it is)."""
        msg_id = self.send(self.new_msg(msg_type, content or {}, channel))
        deadline = time.monotonic() + timeout
        kept = []
        try:
            while True:
                msg = self.recv(deadline - time.monotonic())
                if msg.get("channel") == channel and msg.get("parent_header", {}).get("msg_id") == msg_id:
                    return msg
                kept.append(msg)
        finally:
            self.pending = kept + self.pending

    def wait_ready(self, timeout=60):
        """kernel_info_request until a reply comes (after a start or restart)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                return self.request("kernel_info_request", channel="shell", timeout=min(5, deadline - time.monotonic()))
            except GatewayError as e:
                last = e
        raise GatewayError("no kernel_info_reply within %.0f s: %s" % (timeout, last))

    def execute(self, code, timeout=60, on_input=None, on_message=None, allow_stdin=None, msg_id_cb=None):
        """Run code; return Result (reply, iopub messages) once both the execute_reply and
        the iopub status idle for it have come. on_input(prompt, password) answers an
        input_request (the reply is sent on stdin); on_message(msg) sees every message."""
        msg = self.new_msg(
            "execute_request",
            {
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": bool(on_input) if allow_stdin is None else allow_stdin,
                "stop_on_error": False,
            },
            "shell",
        )
        msg_id = self.send(msg)
        if msg_id_cb:
            msg_id_cb(msg_id)
        result = Result(msg_id)
        deadline = time.monotonic() + timeout
        kept = []
        try:
            while result.reply is None or not result.idle:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise GatewayError("cell %r: reply %s, idle %s within %.0f s; seen: %s"
                                       % (code[:60], result.reply is not None, result.idle, timeout,
                                          [m.get("msg_type") for m in result.iopub]))
                m = self.recv(left)
                if m.get("parent_header", {}).get("msg_id") != msg_id:
                    kept.append(m)
                    continue
                if on_message:
                    on_message(m)
                channel = m.get("channel")
                if channel == "shell" and m.get("msg_type") == "execute_reply":
                    result.reply = m
                elif channel == "iopub":
                    result.iopub.append(m)
                    if m.get("msg_type") == "status" and m["content"].get("execution_state") == "idle":
                        result.idle = True
                elif channel == "stdin" and m.get("msg_type") == "input_request":
                    result.input_requests.append(m)
                    if on_input is None:
                        raise GatewayError("unexpected input_request: %r" % m["content"])
                    value = on_input(m["content"].get("prompt", ""), m["content"].get("password", False))
                    reply = self.new_msg("input_reply", {"value": value}, "stdin")
                    reply["parent_header"] = m["header"]
                    self.send(reply)
        finally:
            self.pending = kept + self.pending
        return result


class Result:
    def __init__(self, msg_id):
        self.msg_id = msg_id
        self.reply = None
        self.idle = False
        self.iopub = []
        self.input_requests = []

    @property
    def status(self):
        return self.reply["content"].get("status") if self.reply else None

    def of_type(self, msg_type):
        return [m for m in self.iopub if m.get("msg_type") == msg_type]

    def stdout(self):
        return "".join(m["content"]["text"] for m in self.of_type("stream") if m["content"].get("name") == "stdout")

    def summary(self):
        return "status %s; iopub %s" % (
            self.status,
            json.dumps([{"type": m.get("msg_type"), "content": m.get("content")} for m in self.iopub], default=str)[:3000],
        )


def main():
    p = argparse.ArgumentParser(description="run cells in a gateway kernel, one JSON line per event")
    p.add_argument("--url", required=True)
    p.add_argument("--token", default="")
    p.add_argument("--kernel", required=True)
    p.add_argument("--code", action="append", default=[])
    p.add_argument("--timeout", type=float, default=60)
    args = p.parse_args()

    def emit(**event):
        print(json.dumps(event), flush=True)

    try:
        ks = KernelSocket(args.url, args.kernel, args.token, timeout=args.timeout)
    except Exception as e:
        print("gwclient: cannot attach: %r" % e, file=sys.stderr)
        return 1
    emit(event="open")
    try:
        for code in args.code:

            def seen(m):
                t, c = m.get("msg_type"), m.get("content", {})
                if t == "status" and c.get("execution_state") == "busy":
                    emit(event="busy")
                elif t == "stream":
                    emit(event="stream", name=c.get("name"), text=c.get("text"))
                elif t == "error":
                    emit(event="error", ename=c.get("ename"), evalue=c.get("evalue"))
                elif t == "execute_reply":
                    emit(event="reply", status=c.get("status"))

            ks.execute(code, timeout=args.timeout, on_message=seen, msg_id_cb=lambda _id, code=code: emit(event="sent", code=code))
    except GatewayError as e:
        print("gwclient: %s" % e, file=sys.stderr)
        return 1
    finally:
        ks.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
