#!/usr/bin/python3
"""Regenerate the Jupyter wire golden cases in tests/golden/wire/<case>/{input,expected}.

Every frame and every signature is produced by jupyter_client.session.Session itself and,
for receive cases, carried over a real ZeroMQ socket pair (ROUTER->DEALER for shell/stdin,
PUB->SUB for iopub) so the captured frames are exactly what the bridge's socket receives.
Keys, msg_ids, session ids and dates are fixed, so re-running gives identical files.

Run with Debian's Python (it has jupyter_client and pyzmq):
    /usr/bin/python3 tests/golden/wire/make_golden.py
"""

import base64
import datetime
import json
import os
import shutil
import sys

import zmq
from jupyter_client.session import DELIM, Session

HERE = os.path.dirname(os.path.abspath(__file__))

KEY = "3f6b2c1e-9a4d-4e8b-b7c5-0d2e8f1a6c94"
OTHER_KEY = "a1d0c9e8-7b6a-4f5e-8d3c-2b1a09f8e7d6"
KEY64 = "9c3e7f1a0b5d28c46e9f3a7b1d0c5e82f4a6b9c3d7e1f05a2b8c4d6e9f1a3b7c"
KERNEL_SESSION = "b2a7e0c4-5f1d-4a39-8e62-7c9d0f3b1a58"
CLIENT_SESSION = "e4c1f8a2-3b7d-4e06-9a5c-1f2d8b6e0c73"
KERNEL_IDENT = "6d0f2a9c-1e4b-4c87-a3f5-8b2e7d9c0a16"
DATE = datetime.datetime(2025, 3, 14, 15, 9, 26, 535897, tzinfo=datetime.timezone.utc)

# A real 1x1 PNG (one opaque red pixel).
PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


def s_header(msg_type, n, session=KERNEL_SESSION, username="kernel", drop=()):
    """Return a fixed, realistic message header (5.3 protocol)."""
    header = {
        "msg_id": "%s_%d_%d" % (session[:8], 4242, n),
        "msg_type": msg_type,
        "username": username,
        "session": session,
        "date": DATE + datetime.timedelta(milliseconds=n),
        "version": "5.3",
    }
    for key in drop:
        header.pop(key)
    return header


# The execute_request every reply below answers.
PARENT = s_header("execute_request", 1, session=CLIENT_SESSION, username="cellgate")
PARENT_ID = PARENT["msg_id"]


def s_session(key):
    """Return a Session that signs with key (ASCII text; empty means unsigned)."""
    return Session(
        key=key.encode("ascii"),
        signature_scheme="hmac-sha256",
        session=KERNEL_SESSION,
        username="kernel",
        check_pid=False,
    )


def s_msg(session, msg_type, n, content, parent=PARENT, metadata=None):
    """Build the nested message dict with a fixed header through Session.msg."""
    return session.msg(
        msg_type,
        content=content,
        parent=parent,
        header=s_header(msg_type, n),
        metadata=metadata,
    )


class Wire:
    """Real socket pairs: kernel side (ROUTER, PUB) and bridge side (DEALER, SUB)."""

    def __init__(self):
        self.ctx = zmq.Context()
        self.router = self.ctx.socket(zmq.ROUTER)
        self.router.bind("inproc://shell")
        self.dealer = self.ctx.socket(zmq.DEALER)
        self.dealer.setsockopt(zmq.IDENTITY, b"cellgate-bridge")
        self.dealer.connect("inproc://shell")
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.bind("inproc://iopub")
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        self.sub.connect("inproc://iopub")
        self._handshake()

    def _handshake(self):
        """Let the ROUTER learn the DEALER and the PUB learn the subscription."""
        self.dealer.send_multipart([b"hello"])
        assert self.router.recv_multipart() == [b"cellgate-bridge", b"hello"]
        for _ in range(500):
            self.pub.send_multipart([b"probe"])
            if self.sub.poll(10):
                self.sub.recv_multipart()
                break
        else:
            sys.exit("make_golden: iopub subscription never arrived")
        while self.sub.poll(50):  # drain any extra probes
            self.sub.recv_multipart()

    def _recv(self, sock):
        if not sock.poll(2000):
            sys.exit("make_golden: message did not arrive")
        return sock.recv_multipart()

    def shell(self, session, msg, buffers=None):
        """Send msg ROUTER->DEALER with Session.send; return the frames the DEALER got."""
        session.send(self.router, msg, ident=[b"cellgate-bridge"], buffers=buffers)
        return self._recv(self.dealer)

    def iopub(self, session, msg, topic, buffers=None):
        """Send msg PUB->SUB with Session.send; return the frames the SUB got."""
        session.send(self.pub, msg, ident=topic, buffers=buffers)
        return self._recv(self.sub)

    def raw_shell(self, frames):
        """Carry already built frames ROUTER->DEALER (for malformed messages)."""
        self.router.send_multipart([b"cellgate-bridge"] + frames)
        return self._recv(self.dealer)

    def close(self):
        self.ctx.destroy(linger=0)


def s_topic(name):
    return ("kernel.%s.%s" % (KERNEL_IDENT, name)).encode()


def s_b64(frames):
    return [base64.b64encode(bytes(f)).decode("ascii") for f in frames]


def s_write(name, input_obj, expected_obj, cases):
    """Write one case directory; keep the list of written names for stale cleanup."""
    path = os.path.join(HERE, name)
    os.makedirs(path, exist_ok=True)
    for fname, obj in (("input", input_obj), ("expected", expected_obj)):
        with open(os.path.join(path, fname), "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, ensure_ascii=False)
            f.write("\n")
    cases.append(name)


def s_check_accept(key, frames, content, nbuf):
    """jupyter_client itself must accept the frames and parse the same content."""
    session = s_session(key)
    _, msg_list = session.feed_identities(frames)
    msg = session.deserialize(msg_list)
    assert msg["content"] == json.loads(json.dumps(content, default=str)), msg["content"]
    assert len(msg["buffers"]) == nbuf


def s_check_reject(key, frames):
    """jupyter_client itself must refuse the frames (signature-level rejects only)."""
    session = s_session(key)
    try:
        _, msg_list = session.feed_identities(frames)
        session.deserialize(msg_list)
    except (ValueError, TypeError, KeyError):
        return
    raise AssertionError("jupyter_client accepted a reject case")


def accept(cases, name, frames, msg, nbuf=0, key=KEY):
    parent = msg["parent_header"]
    expected = {
        "verdict": "accept",
        "msg_type": msg["header"]["msg_type"],
        "msg_id": msg["header"]["msg_id"],
        "parent_msg_id": parent.get("msg_id") if parent else None,
        "content": msg["content"],
        "buffers": nbuf,
    }
    s_check_accept(key, frames, msg["content"], nbuf)
    s_write(name, {"key": key, "frames": s_b64(frames)}, expected, cases)


def reject(cases, name, frames, reason, key=KEY, check=False):
    if check:
        s_check_reject(key, frames)
    s_write(name, {"key": key, "frames": s_b64(frames)}, {"verdict": "reject", "reason": reason}, cases)


def accept_cases(wire, cases):
    ses = s_session(KEY)
    m = s_msg(ses, "status", 2, {"execution_state": "busy"})
    accept(cases, "accept_iopub_status_busy", wire.iopub(ses, m, s_topic("status")), m)
    m = s_msg(ses, "status", 3, {"execution_state": "idle"})
    accept(cases, "accept_iopub_status_idle", wire.iopub(ses, m, s_topic("status")), m)
    m = s_msg(ses, "stream", 4, {"name": "stdout", "text": "hello\nworld\n"})
    accept(cases, "accept_iopub_stream_stdout", wire.iopub(ses, m, b"stream.stdout"), m)
    m = s_msg(
        ses,
        "display_data",
        5,
        {
            "data": {"image/png": PNG_1X1, "text/plain": "<Figure size 640x480 with 1 Axes>"},
            "metadata": {"image/png": {"width": 1, "height": 1}},
            "transient": {},
        },
    )
    accept(cases, "accept_iopub_display_data_png", wire.iopub(ses, m, b"display_data"), m)
    m = s_msg(
        ses,
        "execute_result",
        6,
        {
            "execution_count": 7,
            "data": {
                "text/plain": "{'a': 1, 'b': [True, None, 2.5]}",
                "application/json": {"a": 1, "b": [True, None, 2.5]},
            },
            "metadata": {},
        },
    )
    accept(cases, "accept_iopub_execute_result", wire.iopub(ses, m, s_topic("execute_result")), m)
    traceback = [
        "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
        "\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)",
        "Cell \x1b[0;32mIn[3], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[38;5;241m1\x1b[39m\x1b[38;5;241m/\x1b[39m\x1b[38;5;241m0\x1b[39m\n",
        "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
    ]
    err = {"ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": traceback}
    m = s_msg(ses, "error", 7, err)
    accept(cases, "accept_iopub_error_traceback", wire.iopub(ses, m, s_topic("error")), m)
    m = s_msg(ses, "clear_output", 8, {"wait": True})
    accept(cases, "accept_iopub_clear_output", wire.iopub(ses, m, b"display_data"), m)
    m = s_msg(
        ses,
        "update_display_data",
        9,
        {"data": {"text/plain": "step 2/3"}, "metadata": {}, "transient": {"display_id": "d0c5a1e2f3b4"}},
    )
    accept(cases, "accept_iopub_update_display_data", wire.iopub(ses, m, b"display_data"), m)
    m = s_msg(
        ses,
        "stream",
        10,
        {"name": "stdout", "text": "naïve café 🐍🚀 数据科学 データ 한국어 \u00e9\u0301 Ω≈ç√\n"},
    )
    accept(cases, "accept_iopub_stream_unicode", wire.iopub(ses, m, b"stream.stdout"), m)
    m = s_msg(
        ses,
        "comm_msg",
        11,
        {
            "comm_id": "0f1e2d3c4b5a69788796a5b4c3d2e1f0",
            "data": {"method": "update", "state": {}, "buffer_paths": [["x"], ["y"]]},
        },
        metadata={"version": "2.1.0"},
    )
    bufs = [bytes(range(256)), b"\x00\x00\x80\x3f\x00\x00\x00\x40\xff\xfe"]
    frames = wire.iopub(ses, m, b"comm-0f1e2d3c4b5a69788796a5b4c3d2e1f0", buffers=bufs)
    accept(cases, "accept_iopub_comm_msg_two_buffers", frames, m, nbuf=2)
    m = s_msg(ses, "status", 12, {"execution_state": "idle"})
    accept(cases, "accept_iopub_no_topic", wire.iopub(ses, m, None), m)

    m = s_msg(
        ses,
        "execute_reply",
        13,
        {"status": "ok", "execution_count": 7, "user_expressions": {}, "payload": []},
        metadata={"started": "2025-03-14T15:09:26.540000Z", "dependencies_met": True, "engine": KERNEL_IDENT, "status": "ok"},
    )
    accept(cases, "accept_shell_execute_reply_ok", wire.shell(ses, m), m)
    m = s_msg(ses, "execute_reply", 14, dict(err, status="error", execution_count=8))
    accept(cases, "accept_shell_execute_reply_error", wire.shell(ses, m), m)
    kinfo_parent = s_header("kernel_info_request", 15, session=CLIENT_SESSION, username="cellgate")
    m = s_msg(
        ses,
        "kernel_info_reply",
        16,
        {
            "status": "ok",
            "protocol_version": "5.3",
            "implementation": "ipython",
            "implementation_version": "8.5.0",
            "language_info": {
                "name": "python",
                "version": "3.11.2",
                "mimetype": "text/x-python",
                "codemirror_mode": {"name": "ipython", "version": 3},
                "pygments_lexer": "ipython3",
                "nbconvert_exporter": "python",
                "file_extension": ".py",
            },
            "banner": "Python 3.11.2 (main) \nType 'copyright', 'credits' or 'license' for more information\n",
            "help_links": [{"text": "Python Reference", "url": "https://docs.python.org/3.11"}],
            "debugger": False,
        },
        parent=kinfo_parent,
    )
    accept(cases, "accept_shell_kernel_info_reply", wire.shell(ses, m), m)
    m = s_msg(ses, "input_request", 17, {"prompt": "Your name: ", "password": False})
    accept(cases, "accept_stdin_input_request", wire.shell(ses, m), m)
    m = s_msg(ses, "status", 18, {"execution_state": "starting"}, parent=None)
    accept(cases, "accept_iopub_status_no_parent", wire.iopub(ses, m, s_topic("status")), m)


def s_signed_parts(key, header, parent, metadata, content):
    """Return [DELIM, signature, parts...] signed by Session over the given bytes."""
    parts = [header, parent, metadata, content]
    return [DELIM, s_session(key).sign(parts)] + parts


def reject_cases(wire, cases):
    ses = s_session(KEY)
    status = s_msg(ses, "status", 20, {"execution_state": "idle"})
    good = wire.iopub(ses, status, s_topic("status"))
    sig_at = good.index(DELIM) + 1

    forged = list(good)
    sig = bytearray(forged[sig_at])
    sig[17] = ord("0") if sig[17] != ord("0") else ord("1")
    forged[sig_at] = bytes(sig)
    reject(cases, "reject_forged_signature_one_digit", forged, "bad_signature", check=True)

    reject(cases, "reject_wrong_key", good, "bad_signature", key=OTHER_KEY, check=True)

    tampered = list(good)
    tampered[sig_at + 4] = tampered[sig_at + 4].replace(b"idle", b"busy")
    assert tampered[sig_at + 4] != good[sig_at + 4]
    reject(cases, "reject_tampered_content", tampered, "bad_signature", check=True)

    tampered = list(good)
    tampered[sig_at + 1] = tampered[sig_at + 1].replace(b'"status"', b'"stream"')
    assert tampered[sig_at + 1] != good[sig_at + 1]
    reject(cases, "reject_tampered_header", tampered, "bad_signature", check=True)

    no_delim = [f for f in good if f != DELIM]
    reject(cases, "reject_missing_delimiter", no_delim, "no_delimiter")

    reply = s_msg(ses, "execute_reply", 21, {"status": "ok", "execution_count": 1, "user_expressions": {}, "payload": []})
    shell = wire.shell(ses, reply)
    reject(cases, "reject_three_frames_after_delimiter", wire.raw_shell(shell[:4]), "too_few_frames")
    reject(cases, "reject_only_delimiter", wire.raw_shell([DELIM]), "too_few_frames")

    unsigned = s_session("")
    reject(cases, "reject_unsigned_empty_signature", wire.shell(unsigned, reply), "bad_signature_length", check=True)

    short = list(shell)
    short[1] = short[1][:63]
    reject(cases, "reject_signature_63_chars", wire.raw_shell(short), "bad_signature_length", check=True)
    long_sig = list(shell)
    long_sig[1] = long_sig[1] + b"0"
    reject(cases, "reject_signature_65_chars", wire.raw_shell(long_sig), "bad_signature_length", check=True)
    nonhex = list(shell)
    nonhex[1] = nonhex[1][:40] + b"g" + nonhex[1][41:]
    assert len(nonhex[1]) == 64
    reject(cases, "reject_signature_non_hex", wire.raw_shell(nonhex), "bad_signature_length", check=True)

    header = ses.pack(s_header("execute_reply", 22))
    parent = ses.pack(PARENT)
    frames = s_signed_parts(KEY, header, parent, b"{}", b"[1,2]")
    reject(cases, "reject_content_not_object", wire.raw_shell(frames), "bad_json")
    frames = s_signed_parts(KEY, header, parent, b"{}", b'{"a":')
    reject(cases, "reject_content_invalid_json", wire.raw_shell(frames), "bad_json")
    frames = s_signed_parts(KEY, b"[]", parent, b"{}", b"{}")
    reject(cases, "reject_header_not_object", wire.raw_shell(frames), "bad_json")
    frames = s_signed_parts(KEY, header, parent, b"{}", b"\xff\xfe{}")
    reject(cases, "reject_content_invalid_utf8", wire.raw_shell(frames), "bad_json")

    no_type = {"header": s_header("execute_reply", 23, drop=("msg_type",)), "parent_header": PARENT, "metadata": {}, "content": {"status": "ok"}}
    reject(cases, "reject_header_without_msg_type", wire.raw_shell(ses.serialize(no_type)), "bad_header")
    no_id = {"header": s_header("execute_reply", 24, drop=("msg_id",)), "parent_header": PARENT, "metadata": {}, "content": {"status": "ok"}}
    reject(cases, "reject_header_without_msg_id", wire.raw_shell(ses.serialize(no_id)), "bad_header")
    int_id = s_header("execute_reply", 25)
    int_id["msg_id"] = 12345
    bad_id = {"header": int_id, "parent_header": PARENT, "metadata": {}, "content": {"status": "ok"}}
    reject(cases, "reject_header_msg_id_not_string", wire.raw_shell(ses.serialize(bad_id)), "bad_header")


def sign_cases(cases):
    """Signatures computed by Session.sign over exact byte strings."""
    ses = s_session(KEY)
    compact = [
        ses.pack(s_header("execute_request", 30, session=CLIENT_SESSION, username="cellgate")).decode(),
        "{}",
        "{}",
        ses.pack({"code": "x=1", "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}).decode(),
    ]
    spaced = [
        '{ "msg_id" : "m1", "msg_type" : "status",\n  "username": "k", "session": "s", "date": "2025-03-14T15:09:26.535897Z", "version": "5.3" }',
        '{"msg_id": "p1", "msg_type": "execute_request"}',
        "{ }",
        '{"execution_state":"idle"}',
    ]
    unicode_parts = [
        ses.pack(s_header("stream", 31)).decode(),
        ses.pack(PARENT).decode(),
        "{}",
        ses.pack({"name": "stdout", "text": "🐍 数据 データ 한국어 café — “quotes”\n"}).decode(),
    ]
    for name, key, parts in (
        ("sign_execute_request", KEY, compact),
        ("sign_exact_bytes_with_whitespace", KEY, spaced),
        ("sign_key_64_bytes", KEY64, compact),
        ("sign_unicode_content", KEY, unicode_parts),
        ("sign_empty_objects", KEY, ["{}", "{}", "{}", "{}"]),
    ):
        sig = s_session(key).sign([p.encode("utf-8") for p in parts]).decode("ascii")
        assert len(sig) == 64 and sig == sig.lower()
        inp = {"key": key, "header": parts[0], "parent_header": parts[1], "metadata": parts[2], "content": parts[3]}
        s_write(name, inp, {"signature": sig}, cases)


def s_remove_stale(cases):
    for entry in os.listdir(HERE):
        path = os.path.join(HERE, entry)
        if os.path.isdir(path) and entry not in cases and os.path.exists(os.path.join(path, "expected")):
            shutil.rmtree(path)


def main():
    cases = []
    wire = Wire()
    try:
        accept_cases(wire, cases)
        reject_cases(wire, cases)
    finally:
        wire.close()
    sign_cases(cases)
    assert len(cases) == len(set(cases))
    s_remove_stale(cases)
    print("make_golden: wrote %d cases to %s" % (len(cases), HERE))


if __name__ == "__main__":
    main()
