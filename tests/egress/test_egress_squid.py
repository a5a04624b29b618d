#!/usr/bin/python3
"""egress/'s squid configuration against real squid (ctest egress_squid, labels netlab;root).

A lab (tests/netlab) comes up; egress_tool (tests/egress/egress_tool.c: egress/'s C) writes
squid's configuration for a server list and one narrowed session, with a hosts file of the
lab's names and a few of its own (suffix names, a name on an IPv4-mapped link-local address);
`squid -N -f squid.conf` runs as a child (as root, so squid runs as its cache_effective_user,
Debian's `proxy`, which owns only the log directory). Raw sockets send a PROXY v1 line with
the session's source address (127.64.0.5: the server's list; 127.64.0.6: narrowed), then a
request, as the relay will. Every row of docs/design/egress.md's "What was checked" table is
asked again, plus suffix entries, a `:port` entry, CONNECT to a refused port and a TLS tunnel,
an IPv6 literal and metadata6.lab.test (ULA), IPv4-mapped literals and names; each answer's
status and one-line 403 body are checked, the lab's request logs show that nothing refused
arrived, and every request's access log line, read by egress/'s parser (egress_tool parse),
has the right decision, reason and bytes. Then the sessions change and `squid -k reconfigure`
puts them in force. Root, squid and ip only (exit 77 otherwise):
    CG_EGRESS_TOOL=build/tests/egress_tool /usr/bin/python3 tests/egress/test_egress_squid.py
"""

import json
import os
import pwd
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "netlab"))
import netlab  # noqa: E402

SQUID = "/usr/sbin/squid"
TOOL = os.environ.get("CG_EGRESS_TOOL", "")
SERVER_SRC, SESSION_SRC = "127.64.0.5", "127.64.0.6"
WAIT = 30  # seconds: squid's start, a line's arrival in the access log (a bound, not a figure)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port):
    """True when something listens on 127.0.0.1:PORT (read from /proc: a probe connection
    would be a request of its own in squid's access log)."""
    want = "0100007F:%04X" % port
    with open("/proc/net/tcp") as f:
        return any(line.split()[1] == want and line.split()[3] == "0A" for line in f.readlines()[1:])


def get(host, path="/"):
    return "GET http://%s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (host, path, host)


def connect(authority):
    return "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority)


class EgressSquid(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cg-egress-squid-")
        os.chmod(cls.tmp, 0o711)  # squid's user passes through to its log directory
        cls.lab = netlab.Lab(os.path.join(cls.tmp, "lab"))
        cls.squid = None
        try:
            cls.lab.up()
            cls.info = cls.lab.info()
            cls._start_squid()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.squid and cls.squid.poll() is None:
            cls.squid.send_signal(signal.SIGTERM)
            try:
                cls.squid.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                cls.squid.kill()
                cls.squid.wait()
        cls.lab.down()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def _start_squid(cls):
        info = cls.info
        cls.dir = os.path.join(cls.tmp, "squid")
        os.makedirs(os.path.join(cls.dir, "log"))
        os.chmod(cls.dir, 0o755)
        proxy = pwd.getpwnam("proxy")
        os.chown(os.path.join(cls.dir, "log"), proxy.pw_uid, proxy.pw_gid)
        slot = info["slot"]
        pypi = info["hosts"]["pypi.lab.test"]["address"]
        cls.ula = info["hosts"]["metadata.lab.test"].get("address6")
        with open(info["hosts_file"]) as f:
            hosts = f.read()
        hosts += "%s a.pkg.lab.test\n%s b.c.pkg.lab.test\n%s pkg.lab.test\n" % (pypi, pypi, pypi)
        hosts += "::ffff:169.254.253.%d mapped.lab.test\n" % slot
        cls.hosts_file = os.path.join(cls.dir, "hosts")
        with open(cls.hosts_file, "w") as f:
            f.write(hosts)
        os.chmod(cls.hosts_file, 0o644)
        allow = ["api.lab.test", "pypi.lab.test", "other.lab.test:443", "*.pkg.lab.test",
                 "metadata.lab.test", "metadata6.lab.test", "mapped.lab.test"]
        if cls.ula:
            allow.append("[%s]" % cls.ula)
        cls.port = free_port()
        subprocess.run([TOOL, "config", cls.dir, str(cls.port), ", ".join(allow),
                        "--session", SESSION_SRC + "=pypi.lab.test:80, other.lab.test:443",
                        "--hosts-file", cls.hosts_file, "--nameservers", "127.0.0.1",
                        "--test-network", "198.18.0.0/15"], check=True)
        cls.conf = os.path.join(cls.dir, "squid.conf")
        cls.access_log = os.path.join(cls.dir, "log", "access.log")
        out = open(os.path.join(cls.tmp, "squid.out"), "w")
        cls.squid = subprocess.Popen([SQUID, "-N", "-f", cls.conf], stdin=subprocess.DEVNULL,
                                     stdout=out, stderr=out)
        out.close()
        deadline = time.monotonic() + WAIT
        while not listening(cls.port):
            if cls.squid.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("squid did not start: %s\n%s" % (
                    open(os.path.join(cls.tmp, "squid.out")).read()[-3000:],
                    cls._cache_log()[-3000:]))
            time.sleep(0.05)

    @classmethod
    def _cache_log(cls):
        try:
            with open(os.path.join(cls.dir, "log", "cache.log")) as f:
                return f.read()
        except OSError:
            return ""

    # ---- asking squid as the relay will

    def ask(self, src, request, proxy_line=True, tls_host=None):
        """Sends the PROXY v1 line for SRC, then REQUEST; returns (status line, headers, body
        and everything read). A CONNECT's answer is read to the end of its headers; with
        TLS_HOST a TLS GET / then runs through the tunnel (the lab's CA only)."""
        # Refused is tried again, as the relay does (egress/cg_egress_conn.c): squid closes
        # and reopens its port on `-k reconfigure`. Under CI's load a connect right after its
        # cache.log said "Accepting HTTP Socket connections" was refused once.
        deadline = time.monotonic() + WAIT
        while True:
            try:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        try:
            if proxy_line:
                s.sendall(("PROXY TCP4 %s 127.0.0.1 40000 %d\r\n" % (src, self.port)).encode())
            s.sendall(request.encode())
            data = b""
            tunnel = request.startswith("CONNECT")
            while True:
                if tunnel and b"\r\n\r\n" in data:
                    break
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            status = head.split(b"\r\n")[0].decode(errors="replace")
            if tls_host and " 200 " in status:
                context = ssl.create_default_context(cafile=self.info["ca"])
                with context.wrap_socket(s, server_hostname=tls_host) as tls:
                    tls.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                                 % tls_host).encode())
                    inner = b""
                    while True:
                        chunk = tls.recv(65536)
                        if not chunk:
                            break
                        inner += chunk
                    body = inner.partition(b"\r\n\r\n")[2]
            return status, body, data
        finally:
            s.close()

    def records(self, count):
        """Waits for COUNT lines in the access log and returns them as egress/'s parser reads
        them."""
        deadline = time.monotonic() + WAIT
        while True:
            with open(self.access_log) as f:
                lines = f.read().count("\n")
            if lines >= count or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        out = subprocess.run([TOOL, "parse", self.access_log], check=True, capture_output=True,
                             text=True).stdout
        return [json.loads(line) for line in out.splitlines()]

    # ---- the cases

    def check_requests(self):
        slot = self.info["slot"]
        api = self.info["hosts"]["api.lab.test"]["address"]
        other = self.info["hosts"]["other.lab.test"]["address"]
        pypi = self.info["hosts"]["pypi.lab.test"]["address"]
        host_denied = "cellgate egress: host not allowed: %s"
        address_denied = "cellgate egress: address not allowed: %s"
        port_denied = "cellgate egress: port not allowed: %s"
        session_denied = "cellgate egress: not allowed for this session: %s"
        # (label, src, request, status, body's first line or None, log host, log port,
        #  decision, reason, server address or None, TLS host or None)
        cases = [
            # The design's table, row by row.
            ("allowed host", SERVER_SRC, get("api.lab.test"), 200, "cglab api.lab.test",
             "api.lab.test", 80, "allowed", "", api, None),
            ("a host on no list", SERVER_SRC, get("registry.lab.test"), 403,
             host_denied % "registry.lab.test", "registry.lab.test", 80, "denied",
             "host not allowed", None, None),
            ("on the session's own list, from it", SESSION_SRC, get("pypi.lab.test"), 200,
             "cglab pypi.lab.test", "pypi.lab.test", 80, "allowed", "", pypi, None),
            ("an allowed name on a link-local address", SERVER_SRC, get("metadata.lab.test"), 403,
             address_denied % "metadata.lab.test", "metadata.lab.test", 80, "denied",
             "address not allowed", None, None),
            ("an allowed host's IP literal", SERVER_SRC, get(api), 403, host_denied % api, api, 80,
             "denied", "host not allowed", None, None),
            ("squid's own port", SERVER_SRC, get("127.0.0.1:%d" % self.port), 403,
             host_denied % "127.0.0.1", "127.0.0.1", self.port, "denied", "host not allowed",
             None, None),
            ("CONNECT to port 22", SERVER_SRC, connect("api.lab.test:22"), 403,
             port_denied % "api.lab.test:22", "api.lab.test", 22, "denied", "port not allowed",
             None, None),
            ("CONNECT to 443", SERVER_SRC, connect("api.lab.test:443"), 200, None,
             "api.lab.test", 443, "allowed", "", api, None),
            ("a name on no list, no DNS answer", SERVER_SRC, get("pypi.org"), 403,
             host_denied % "pypi.org", "pypi.org", 80, "denied", "host not allowed", None, None),
            # Suffix entries: any depth below, not the suffix itself.
            ("below a suffix", SERVER_SRC, get("a.pkg.lab.test"), 200, "cglab pypi.lab.test",
             "a.pkg.lab.test", 80, "allowed", "", pypi, None),
            ("two below a suffix", SERVER_SRC, get("b.c.pkg.lab.test"), 200,
             "cglab pypi.lab.test", "b.c.pkg.lab.test", 80, "allowed", "", pypi, None),
            ("the bare suffix", SERVER_SRC, get("pkg.lab.test"), 403, host_denied % "pkg.lab.test",
             "pkg.lab.test", 80, "denied", "host not allowed", None, None),
            # A :port entry: other.lab.test on 443 only; a TLS tunnel through it.
            ("a :443 entry on port 80", SERVER_SRC, get("other.lab.test"), 403,
             port_denied % "other.lab.test:80", "other.lab.test", 80, "denied",
             "port not allowed", None, None),
            ("a :443 entry, TLS through CONNECT", SERVER_SRC, connect("other.lab.test:443"), 200,
             "cglab other.lab.test", "other.lab.test", 443, "allowed", "", other, "other.lab.test"),
            # The narrowed session: its own names, its own ports.
            ("the server's host, not the session's", SESSION_SRC, get("api.lab.test"), 403,
             session_denied % "api.lab.test", "api.lab.test", 80, "denied",
             "not allowed for this session", None, None),
            ("the session's host on a port it lacks", SESSION_SRC, connect("pypi.lab.test:443"),
             403, port_denied % "pypi.lab.test:443", "pypi.lab.test", 443, "denied",
             "port not allowed", None, None),
            ("the session's :443 entry", SESSION_SRC, connect("other.lab.test:443"), 200, None,
             "other.lab.test", 443, "allowed", "", other, None),
            # IPv4-mapped: a literal is its IPv4 address to squid; a name on a mapped address.
            ("a mapped literal of an allowed host", SERVER_SRC, get("[::ffff:%s]" % api), 403,
             host_denied % api, api, 80, "denied", "host not allowed", None, None),
            ("a mapped link-local literal", SERVER_SRC, get("[::ffff:169.254.253.%d]" % slot), 403,
             host_denied % ("169.254.253.%d" % slot), "169.254.253.%d" % slot, 80, "denied",
             "host not allowed", None, None),
            ("an allowed name on a mapped link-local address", SERVER_SRC, get("mapped.lab.test"),
             403, address_denied % "mapped.lab.test", "mapped.lab.test", 80, "denied",
             "address not allowed", None, None),
            # What the server sees: no Via, no X-Forwarded-For (the client's own one deleted).
            ("the request's headers upstream", SERVER_SRC,
             "GET http://api.lab.test/headers HTTP/1.1\r\nHost: api.lab.test\r\n"
             "X-Forwarded-For: 10.0.0.1\r\nConnection: close\r\n\r\n", 200, None,
             "api.lab.test", 80, "allowed", "", api, None),
            # A download: the bytes both ways.
            ("1 MiB", SERVER_SRC, get("api.lab.test", "/bytes/1048576"), 200, None,
             "api.lab.test", 80, "allowed", "", api, None),
        ]
        if self.ula:
            cases += [
                ("an allowed IPv6 literal (ULA)", SERVER_SRC, get("[%s]" % self.ula), 403,
                 address_denied % ("[%s]" % self.ula), "[%s]" % self.ula, 80, "denied",
                 "address not allowed", None, None),
                ("metadata6.lab.test (ULA)", SERVER_SRC, get("metadata6.lab.test"), 403,
                 address_denied % "metadata6.lab.test", "metadata6.lab.test", 80, "denied",
                 "address not allowed", None, None),
            ]
        sent = []
        for label, src, request, status, first_line, *_ in cases:
            with self.subTest(label):
                answer, body, raw = self.ask(src, request, tls_host=_[-1])
                sent.append((request, raw))
                self.assertIn(" %d " % status, answer + " ", label)
                if first_line is not None:
                    self.assertEqual(body.decode(errors="replace").split("\n")[0], first_line, label)
                if status == 403:
                    self.assertEqual(body.decode().count("\n"), 1, "%s: one line: %r" % (label, body))
        # The replies name neither squid's port nor its cache; upstream, no proxy header.
        for request, raw in sent:
            head = raw.partition(b"\r\n\r\n")[0].decode(errors="replace").lower()
            self.assertNotIn("x-cache", head, request)
            self.assertNotIn(str(self.port), head, request)
        seen = json.loads([raw for request, raw in sent if "/headers" in request][0]
                          .partition(b"\r\n\r\n")[2])["headers"]
        self.assertEqual([name for name in seen if name.lower() in ("via", "x-forwarded-for",
                                                                    "forwarded")], [], seen)
        # Nothing refused arrived; what was allowed did.
        self.assertEqual(self.lab.requests("registry.lab.test"), [])
        self.assertEqual(self.lab.requests("metadata.lab.test"), [])
        self.assertEqual(len(self.lab.requests("api.lab.test")), 3)  # /, /headers, /bytes/1048576
        # No PROXY line: squid closes the connection without an answer.
        answer, body, raw = self.ask(SERVER_SRC, get("api.lab.test"), proxy_line=False)
        self.assertEqual(raw, b"", "no PROXY line: closed without an answer")
        self.assertEqual(len(self.lab.requests("api.lab.test")), 3)

        # One access log line per request, read by egress/'s parser.
        records = self.records(len(cases))
        self.assertFalse([r for r in records if r.get("malformed")], "every line parses")
        used = set()
        for (label, src, request, status, first_line, host, port, decision, reason, server,
             tls_host), (_, raw) in zip(cases, sent):
            with self.subTest("log: " + label):
                method = request.split(" ")[0]
                found = [i for i, r in enumerate(records) if i not in used and r["src"] == src
                         and r["method"] == method and r["host"] == host and r["port"] == port]
                self.assertTrue(found, "%s: no line for %s %s:%d from %s in %s" % (
                    label, method, host, port, src, records))
                used.add(found[0])
                record = records[found[0]]
                self.assertEqual((record["status"], record["decision"], record["reason"]),
                                 (status, decision, reason), label)
                self.assertEqual(record["server_addr"], server or "", label)
                if tls_host:  # the tunnel's bytes: at least the request and answer and TLS
                    self.assertGreater(record["bytes_up"], len(request) + 100, label)
                    self.assertGreater(record["bytes_down"], len(raw) + 100, label)
                else:
                    self.assertEqual(record["bytes_up"], len(request), label)
                    self.assertEqual(record["bytes_down"], len(raw), label)
                self.assertGreaterEqual(record["ms"], 0)
        # The connection without a PROXY line: denied, nothing forwarded, from the relay's
        # own address (squid never saw a session's).
        extra = [r for i, r in enumerate(records) if i not in used]
        self.assertEqual([(r["src"], r["status"], r["decision"], r["reason"]) for r in extra],
                         [("127.0.0.1", 0, "denied", "no request")], open(self.access_log).read())

    def test_requests_then_reconfigure(self):
        """The requests (check_requests), then sessions come and go as the server will make
        them: the files rewritten, `squid -k reconfigure`, session 6's narrowing gone, session
        7's in force, and the server's list changed with it."""
        self.check_requests()
        accepting = self._cache_log().count("Accepting HTTP Socket connections")
        allow = "api.lab.test, pypi.lab.test, other.lab.test:443"
        subprocess.run([TOOL, "config", self.dir, str(self.port), allow,
                        "--session", "127.64.0.7=api.lab.test:80",
                        "--hosts-file", self.hosts_file, "--nameservers", "127.0.0.1",
                        "--test-network", "198.18.0.0/15"], check=True)
        subprocess.run([SQUID, "-k", "reconfigure", "-f", self.conf], check=True)
        deadline = time.monotonic() + WAIT
        while self._cache_log().count("Accepting HTTP Socket connections") <= accepting:
            self.assertLess(time.monotonic(), deadline, "squid did not reconfigure: %s"
                            % self._cache_log()[-3000:])
            time.sleep(0.05)
        for src, request, status, first_line in [
                ("127.64.0.7", get("api.lab.test"), 200, "cglab api.lab.test"),
                ("127.64.0.7", get("pypi.lab.test"), 403,
                 "cellgate egress: not allowed for this session: pypi.lab.test"),
                ("127.64.0.7", connect("api.lab.test:443"), 403,
                 "cellgate egress: port not allowed: api.lab.test:443"),
                (SESSION_SRC, get("api.lab.test"), 200, "cglab api.lab.test"),
                (SERVER_SRC, get("a.pkg.lab.test"), 403,
                 "cellgate egress: host not allowed: a.pkg.lab.test")]:
            with self.subTest("after reconfigure: %s %s" % (src, request.split("\r\n")[0])):
                answer, body, raw = self.ask(src, request)
                self.assertIn(" %d " % status, answer + " ")
                self.assertEqual(body.decode(errors="replace").split("\n")[0], first_line)

    def test_configuration_parses(self):
        """squid -k parse on the configuration it runs: no warning but squid's own note on Via."""
        proc = subprocess.run([SQUID, "-k", "parse", "-f", self.conf], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        complaints = [line for line in (proc.stdout + proc.stderr).splitlines()
                      if ("WARNING" in line or "ERROR" in line or "FATAL" in line)
                      and "HTTP requires the use of Via" not in line]
        self.assertEqual(complaints, [])


def main():
    if os.geteuid() != 0:
        print("egress_squid: needs root (a network namespace, squid as root): skipped")
        return 77
    for need in (SQUID, shutil.which("ip") or "/nonexistent"):
        if not os.access(need, os.X_OK):
            print("egress_squid: %s is not installed: skipped" % need)
            return 77
    try:
        pwd.getpwnam("proxy")
    except KeyError:
        print("egress_squid: no user 'proxy' (Debian's squid makes it): skipped")
        return 77
    if not os.access(TOOL, os.X_OK):
        print("egress_squid: CG_EGRESS_TOOL (build/tests/egress_tool) is not set")
        return 1
    result = unittest.main(exit=False, verbosity=2).result
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
