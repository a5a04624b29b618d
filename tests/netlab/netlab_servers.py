#!/usr/bin/python3
"""The servers of a netlab host (tests/netlab/netlab.py starts them inside the lab's network
namespace: `netlab.py serve STATE_DIR NAME`). One process per host name serves HTTP (port 80)
and HTTPS (443, the lab's certificate) on the host's addresses, from what lab.json says:

    every host     GET /            its known body
                   GET /bytes/N     N bytes of pattern(N)
                   GET /slow        ?bytes=16&delay_ms=250: one "." per delay
                   GET|POST /headers  the request's headers as JSON (a POST: body length, sha256;
                                    Content-Length or chunked)
                   anything else    404; PUT, DELETE, PATCH, OPTIONS, CONNECT: 405; malformed: 400
    pypi           /simple/, /simple/<project>/ (PEP 503, #sha256= links), /packages/<wheel>
    registry       /<name> (the packument), /<name>/-/<file>.tgz (the tarball)

Each request is logged, one JSON line, to the host's log before it is answered. A TLS
handshake happens in the connection's own thread: a slow client holds only its own.
"""

import hashlib
import html
import http.server
import json
import os
import re
import signal
import socket
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse

BLOCK = bytes(range(256)) * 256  # /bytes/N sends this pattern, cut at N


def pattern(n):
    """The N bytes /bytes/N sends."""
    return (BLOCK * (n // len(BLOCK) + 1))[:n]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "cglab/1"
    timeout = 120

    def setup(self):
        if self.server.tls is not None:
            self.request.settimeout(30)
            self.request = self.server.tls.wrap_socket(self.request, server_side=True)
        super().setup()

    def log_message(self, *args):
        pass

    def _log(self):
        record = {"t": round(time.time(), 3), "scheme": "https" if self.server.tls else "http",
                  "method": self.command, "path": self.path, "host": self.headers.get("Host"),
                  "client": self.client_address[0]}
        self.server.lab.log(record)

    def _send(self, status, body, content_type="text/plain; charset=utf-8", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _body(self):
        """The request's body, by Content-Length or chunked; ValueError when malformed."""
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            body = b""
            while True:
                size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"x", 16)
                if size == 0:
                    while self.rfile.readline(8192).strip():  # trailers
                        pass
                    return body
                body += self.rfile.read(size)
                if self.rfile.readline(3).strip():
                    raise ValueError("chunk longer than its size")
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _answer(self, route):
        """Logs the request, then answers it; a malformed one gets a 400."""
        self._log()
        try:
            route()
        except ValueError as e:
            self.close_connection = True
            self._send(400, ("bad request: %s\n" % e).encode())

    def do_GET(self):
        self._answer(lambda: self._route(b""))

    do_HEAD = do_GET

    def do_POST(self):
        self._answer(lambda: self._route(self._body()))

    def _refuse(self):
        def refuse():
            self._body()
            self._send(405, b"method not allowed\n", headers=[("Allow", "GET, HEAD, POST")])
        self._answer(refuse)

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_CONNECT = _refuse

    def _route(self, body):
        url = urllib.parse.urlsplit(self.path)
        path, query = url.path, urllib.parse.parse_qs(url.query)
        lab = self.server.lab
        if lab.role == "index" and (path.startswith("/simple") or path.startswith("/packages/")):
            return self._index(path)
        if lab.role == "registry" and lab.registry_route(self, path):
            return None
        if path == "/":
            return self._send(200, lab.body.encode())
        match = re.fullmatch(r"/bytes/(\d{1,12})", path)
        if match:
            return self._bytes(int(match.group(1)))
        if path == "/slow":
            return self._slow(int(query.get("bytes", ["16"])[0]), int(query.get("delay_ms", ["250"])[0]))
        if path == "/headers":
            echo = {"method": self.command, "path": self.path,
                    "headers": {k: ", ".join(self.headers.get_all(k)) for k in dict.fromkeys(self.headers.keys())},
                    "header_list": [[k, v] for k, v in self.headers.items()]}
            if self.command == "POST":
                echo.update(body_length=len(body), body_sha256=hashlib.sha256(body).hexdigest())
            return self._send(200, json.dumps(echo, indent=1).encode() + b"\n", "application/json")
        return self._send(404, b"not found\n")

    def _bytes(self, n):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        if self.command == "HEAD":
            return
        sent = 0
        while sent < n:
            chunk = BLOCK[: min(len(BLOCK), n - sent)]
            self.wfile.write(chunk)
            sent += len(chunk)

    def _slow(self, n, delay_ms):
        """n dots, one every delay_ms (the egress tests' slow server)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        if self.command == "HEAD":
            return
        for _ in range(n):
            time.sleep(delay_ms / 1000)
            self.wfile.write(b".")
            self.wfile.flush()

    def _index(self, path):
        lab = self.server.lab
        if path in ("/simple", "/simple/"):
            links = "".join('<a href="/simple/%s/">%s</a>\n' % (n, n) for n in sorted(lab.projects))
            return self._send(200, _page("Simple index", links), "text/html; charset=utf-8")
        match = re.fullmatch(r"/simple/([^/]+)/?", path)
        if match:
            project = re.sub(r"[-_.]+", "-", match.group(1)).lower()
            if project not in lab.projects:
                return self._send(404, b"no such project\n")
            links = "".join('<a href="/packages/%s#sha256=%s" data-requires-python="&gt;=3">%s</a>\n' % (
                w["file"], w["sha256"], w["file"]) for w in lab.projects[project])
            return self._send(200, _page("Links for " + project, links), "text/html; charset=utf-8")
        wheel = lab.files.get(path[len("/packages/"):])
        if wheel is None:
            return self._send(404, b"no such file\n")
        with open(wheel, "rb") as f:
            return self._send(200, f.read(), "application/octet-stream")


def _page(title, links):
    return ('<!DOCTYPE html>\n<html><head><meta name="pypi:repository-version" content="1.0">'
            "<title>%s</title></head><body><h1>%s</h1>\n%s</body></html>\n" % (
                html.escape(title), html.escape(title), links)).encode()


class LabServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address, tls, lab):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.tls, self.lab = tls, lab
        super().__init__(address, Handler)

    def server_bind(self):
        if self.address_family == socket.AF_INET6:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        super().server_bind()

    def handle_error(self, request, client_address):
        # A client gone or a failed TLS handshake: one line, not a traceback.
        sys.stderr.write("%s: %s\n" % (client_address, sys.exc_info()[1]))


class HostState:
    """What one lab host serves, read from lab.json."""

    def __init__(self, state, name):
        with open(os.path.join(state, "lab.json")) as f:
            info = json.load(f)
        self.name, self.host = name, info["hosts"][name]
        self.role, self.body = self.host["role"], self.host["body"]
        self._log_lock = threading.Lock()
        self.projects, self.files = {}, {}
        for wheel in info["wheels"]:
            self.projects.setdefault(wheel["name"], []).append(wheel)
            self.files[wheel["file"]] = os.path.join(state, "wheels", wheel["file"])
        self.npm = {}
        with open(os.path.join(state, "npm.json")) as f:
            for package in json.load(f):
                self.npm.setdefault(package["name"], []).append(package)

    def log(self, record):
        line = json.dumps(record) + "\n"
        with self._log_lock, open(self.host["log"], "a") as f:
            f.write(line)

    def registry_route(self, handler, path):
        """The npm registry layout: GET /<name> (a scoped name may come as @scope%2fname) is
        the packument, GET /<name>/-/<file> the tarball. False when the path is neither."""
        path = urllib.parse.unquote(path)
        if "/-/" in path:
            name, _, file_name = path[1:].partition("/-/")
            for package in self.npm.get(name, []):
                if package["file"] == file_name or file_name == "%s-%s.tgz" % (name.split("/")[-1], package["version"]):
                    with open(package["path"], "rb") as f:
                        handler._send(200, f.read(), "application/octet-stream")
                    return True
            handler._send(404, b"no such tarball\n")
            return True
        name = path[1:].rstrip("/")
        if name not in self.npm:
            return False
        scheme = "https" if handler.server.tls else "http"
        origin = "%s://%s" % (scheme, handler.headers.get("Host") or handler.server.server_address[0])
        versions = {}
        for package in self.npm[name]:
            tarball = "%s/%s/-/%s-%s.tgz" % (origin, name, name.split("/")[-1], package["version"])
            versions[package["version"]] = dict(package["manifest"], _id="%s@%s" % (name, package["version"]),
                                                dist={"tarball": tarball, "shasum": package["sha1"],
                                                      "integrity": package["integrity"]})
        latest = max(versions, key=lambda v: [int(x) if x.isdigit() else 0 for x in re.split(r"[.+-]", v)])
        doc = {"_id": name, "name": name, "dist-tags": {"latest": latest}, "versions": versions}
        handler._send(200, json.dumps(doc).encode(), "application/json")
        return True


def serve(state, name):
    """Runs one lab host's HTTP and HTTPS servers (inside the lab's namespace)."""
    lab = HostState(state, name)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(os.path.join(state, "server.pem"), os.path.join(state, "server.key"))
    tls.set_alpn_protocols(["http/1.1"])
    addresses = [lab.host["address"]] + (["::"] if "address6" in lab.host else [])
    servers = []
    for address in addresses:
        servers.append(LabServer((address, lab.host["http"]), None, lab))
        servers.append(LabServer((address, lab.host["https"]), tls, lab))
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    ready = os.path.splitext(lab.host["log"])[0] + ".ready"
    with open(ready + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.replace(ready + ".tmp", ready)
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    while True:
        signal.pause()
