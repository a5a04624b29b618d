#!/usr/bin/python3
"""The egress tests' own small internet (issue 26): test hosts in a network namespace.

A lab is one network namespace (`cgl-<8 hex>`, from the state dir's path) joined to the host
namespace by one veth pair, with addresses only from 198.18.0.0/15 (RFC 2544 benchmarking,
never routed on the internet), the IPv4 link-local block 169.254.253.0/24 and the IPv6 ULA
fd63:676c:6162::/48 (decoys), and no default route anywhere. Inside it run, each on its own
address, ports 80 (HTTP) and 443 (HTTPS, a certificate from the lab's own CA):

    api.lab.test       the web host: /, /bytes/N, /slow, /headers
    other.lab.test     a second web host (a different body), to tell hosts apart
    pypi.lab.test      a PEP 503 simple index (/simple/) with two wheels the lab builds
    registry.lab.test  an npm registry layout of tests/e2e/npm-mirror and one tarball of its own
    metadata.lab.test  the decoy: a link-local IPv4, a ULA and a link-local IPv6 address,
                       all ranges an egress policy must refuse

Every host serves the web endpoints and logs each request (one JSON line: scheme, method,
path, Host) to STATE_DIR/<host>.log. STATE_DIR/hosts (hosts(5)) and STATE_DIR/lab.json name
the hosts; the lab never touches /etc/hosts or /etc/resolv.conf.

    netlab.py up STATE_DIR      (root) make the lab, start its servers, print lab.json
    netlab.py down STATE_DIR    stop the servers, delete the namespace and veth (idempotent)
    netlab.py check STATE_DIR   the self-check against a lab that is up (exit 1 on a problem)
    netlab.py info STATE_DIR    print lab.json
    netlab.py gc                take down the labs whose state dir is gone

From Python: `with netlab.Lab(state_dir) as lab: lab.info()`, `lab.opener()` (a urllib
opener that dials the lab's addresses for its names), `lab.requests(host)` (the log).
Standard library only, plus the ip(8) and openssl(1) commands.
"""

import base64
import contextlib
import fcntl
import gzip
import hashlib
import http.client
import http.server
import io
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab_servers import pattern  # noqa: E402,F401 (the API: what /bytes/N sends)
import netlab_servers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NPM_MIRROR = os.path.join(HERE, "..", "e2e", "npm-mirror")
LOCK = "/run/lock/cellgate-netlab.lock"
REGISTRY = "/run/cellgate-netlab"  # <netns> -> the state dir of each lab up, for gc

SUPERNET4 = "198.18.0.0/15"  # every lab's own block, 198.18.<slot>.0/28, lies in it
DECOY4_NET = "169.254.253.0/24"  # the decoy's link-local IPv4, 169.254.253.<slot>
ULA_NET = "fd63:676c:6162::/48"  # the lab's IPv6, fd63:676c:6162:<slot>::/64
SLOTS = range(1, 255)
READY_TIMEOUT = 30

# name -> (log name, index of the address in the lab's /28, role)
HOSTS = {
    "api.lab.test": ("api", 2, "web"),
    "other.lab.test": ("other", 3, "web"),
    "pypi.lab.test": ("pypi", 4, "index"),
    "registry.lab.test": ("registry", 5, "registry"),
    "metadata.lab.test": ("metadata", None, "decoy"),
}

# The wheels the index serves: (name, version, requirements, module source).
WHEELS = [
    ("cglab-dep", "1.0", [], 'VALUE = "cglab-dep 1.0"\n'),
    ("cglab-hello", "1.0", ["cglab-dep==1.0"],
     "from cglab_dep import VALUE\n\n\ndef hello():\n    return \"hello from cglab-hello 1.0 with \" + VALUE\n"),
]
# The registry's own tarball, served beside the mirrored ones.
NPM_OWN = ("cglab-npm-hello", "1.0.0", "module.exports = () => 'hello from cglab-npm-hello';\n")


def body_of(name):
    """The known body of GET / on a lab host."""
    if name == "metadata.lab.test":
        return "cglab decoy metadata.lab.test: a refused destination answered\n"
    return "cglab %s\n" % name


# ---------------------------------------------------------------- commands


def run(*argv, check=True):
    """Runs a command; its output, or a RuntimeError naming it and its stderr."""
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv), proc.returncode, proc.stderr.strip()))
    return proc.stdout


def ipv6_enabled():
    try:
        with open("/proc/sys/net/ipv6/conf/all/disable_ipv6") as f:
            return f.read().strip() == "0"
    except OSError:
        return False


def netns_list():
    return [line.split()[0] for line in run("ip", "netns", "list").splitlines() if line.strip()]


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def link_exists(name):
    return os.path.exists("/sys/class/net/%s" % name)


# ---------------------------------------------------------------- the things the lab serves


def _zip_write(archive, path, data):
    info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    archive.writestr(info, data)


def build_wheel(out_dir, name, version, requires, source):
    """A valid pure-Python wheel (METADATA, WHEEL, RECORD with sha256), byte for byte the same
    on every run; returns (file name, sha256 hex)."""
    dist = re.sub(r"[-_.]+", "_", name)
    info = "%s-%s.dist-info" % (dist, version)
    files = [
        ("%s/__init__.py" % dist, source.encode()),
        ("%s/METADATA" % info, ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
                                "Summary: cellgate netlab test package\n" % (name, version)
                                + "".join("Requires-Dist: %s\n" % r for r in requires)).encode()),
        ("%s/WHEEL" % info, b"Wheel-Version: 1.0\nGenerator: cellgate-netlab\n"
                            b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        ("%s/top_level.txt" % info, (dist + "\n").encode()),
    ]
    record = ""
    for path, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += "%s,sha256=%s,%d\n" % (path, digest, len(data))
    record += "%s/RECORD,,\n" % info
    files.append(("%s/RECORD" % info, record.encode()))
    file_name = "%s-%s-py3-none-any.whl" % (dist, version)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files:
            _zip_write(archive, path, data)
    with open(os.path.join(out_dir, file_name), "wb") as f:
        f.write(buffer.getvalue())
    return file_name, hashlib.sha256(buffer.getvalue()).hexdigest()


def build_npm_tarball(out_dir, name, version, source):
    """An npm tarball (package/package.json, package/index.js) as npm pack makes, byte for
    byte the same on every run; returns its file name."""
    members = [
        ("package/package.json", json.dumps({"name": name, "version": version, "main": "index.js",
                                             "license": "MIT"}, indent=2).encode() + b"\n"),
        ("package/index.js", source.encode()),
    ]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, data in members:
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 499162500  # npm's fixed date
            tar.addfile(info, io.BytesIO(data))
    file_name = "%s-%s.tgz" % (name.split("/")[-1].lstrip("@"), version)
    with open(os.path.join(out_dir, file_name), "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
            gz.write(raw.getvalue())
    return file_name


def npm_manifest(path):
    """package.json of an npm tarball."""
    with tarfile.open(path, "r:gz") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 2 and parts[1] == "package.json":
                return json.load(tar.extractfile(member))
    raise ValueError("%s: no package.json" % path)


def npm_packages(mirror, out_dir):
    """The registry's packages: every tarball of the mirror and the lab's own, each
    {name, version, file, path, sha1, integrity, manifest}."""
    paths = [os.path.join(out_dir, build_npm_tarball(out_dir, *NPM_OWN))]
    if mirror and os.path.isdir(mirror):
        paths += sorted(os.path.join(mirror, f) for f in os.listdir(mirror) if f.endswith(".tgz"))
    packages = []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        manifest = npm_manifest(path)
        packages.append({
            "name": manifest["name"], "version": manifest["version"],
            "file": os.path.basename(path), "path": os.path.abspath(path),
            "sha1": hashlib.sha1(data).hexdigest(),
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
            "manifest": manifest,
        })
    return packages


OPENSSL_CONFIG = """[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[leaf_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid,issuer
subjectAltName = @alt
[alt]
"""


def make_certificates(state, names, addresses, label):
    """The lab's CA (ca.pem, ca.key) and one server certificate for every name and address
    (server.pem, server.key), by openssl(1)."""
    alt = ["DNS.%d = %s" % (i + 1, n) for i, n in enumerate(names)]
    alt += ["IP.%d = %s" % (i + 1, a) for i, a in enumerate(addresses)]
    config = os.path.join(state, "openssl.cnf")
    with open(config, "w") as f:
        f.write(OPENSSL_CONFIG + "\n".join(alt) + "\n")
    p = lambda name: os.path.join(state, name)  # noqa: E731
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("openssl", "req", "-x509", "-config", config, "-extensions", "ca_ext", *key,
        "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "30",
        "-subj", "/CN=cellgate netlab test CA %s" % label)
    run("openssl", "req", "-new", "-config", config, *key, "-keyout", p("server.key"),
        "-out", p("server.csr"), "-subj", "/CN=%s" % names[0])
    run("openssl", "x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
        "-set_serial", "0x" + os.urandom(8).hex(), "-days", "30", "-extfile", config,
        "-extensions", "leaf_ext", "-out", p("server.pem"))
    os.chmod(p("ca.key"), 0o600)
    os.chmod(p("server.key"), 0o600)


# ---------------------------------------------------------------- the lab


class Lab:
    """One lab, named after its state dir: up(), down(), info(); a context manager."""

    def __init__(self, state_dir, npm_mirror=None):
        self.state = os.path.realpath(state_dir)
        self.npm_mirror = os.path.realpath(npm_mirror or NPM_MIRROR)
        tag = hashlib.sha256(self.state.encode()).hexdigest()[:8]
        self.tag = tag
        self.netns = "cgl-" + tag
        self.veth_host = "cglh-" + tag
        self.veth_lab = "cgln-" + tag
        self.lab_json = os.path.join(self.state, "lab.json")
        self._info = None
        self._procs = []  # the servers this object started, reaped by down()

    def __enter__(self):
        self.up()
        return self

    def __exit__(self, *exc):
        self.down()

    def path(self, name):
        return os.path.join(self.state, name)

    def info(self):
        """lab.json: names to addresses and ports, the CA, the netns, wheels and tarballs."""
        if self._info is None:
            with open(self.lab_json) as f:
                self._info = json.load(f)
        return self._info

    # ---- bringing it up

    def up(self):
        if os.geteuid() != 0:
            raise PermissionError("netlab: up needs root (network namespaces)")
        os.makedirs(self.state, exist_ok=True)
        self.down()  # what a previous run of this state dir left
        self._info = None
        os.makedirs(REGISTRY, exist_ok=True)
        with open(os.path.join(REGISTRY, self.netns), "w") as f:
            f.write(self.state + "\n")
        try:
            slot = self._network()
            self._write_info(slot)
            self._start_servers()
        except BaseException:
            self.down()
            raise
        return self.info()

    def _choose_slot(self):
        """The first free slot from the one the state dir's hash names: free when no address
        or route of the host namespace lies in its blocks (called under LOCK)."""
        used = run("ip", "-o", "-4", "addr", "show") + run("ip", "-4", "route", "show", "table", "all")
        preferred = int(self.tag, 16) % len(SLOTS)
        for i in range(len(SLOTS)):
            slot = SLOTS[(preferred + i) % len(SLOTS)]
            if not re.search(r"(198\.18\.%d\.|169\.254\.253\.%d[/ ])" % (slot, slot), used):
                return slot
        raise RuntimeError("netlab: every slot is taken (%d labs up?)" % len(SLOTS))

    def _network(self):
        """The namespace, the veth pair, the addresses and routes; returns the slot. Also
        makes sure the lab's blocks are unreachable from the host when no lab holds them, so
        a test that reaches for a lab that is down never sends a packet off the machine."""
        v6 = ipv6_enabled()
        run("ip", "route", "add", "unreachable", SUPERNET4, check=False)
        run("ip", "route", "add", "unreachable", DECOY4_NET, check=False)
        if v6:
            run("ip", "-6", "route", "add", "unreachable", ULA_NET, check=False)
        ns, host, lab = self.netns, self.veth_host, self.veth_lab
        fd = os.open(LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            slot = self._choose_slot()
            run("ip", "netns", "add", ns)
            run("ip", "link", "add", host, "type", "veth", "peer", "name", lab, "netns", ns)
            run("ip", "addr", "add", "198.18.%d.1/28" % slot, "dev", host)
        finally:
            os.close(fd)
        nsip = ("ip", "-n", ns)
        run(*nsip, "link", "set", "lo", "up")
        run(*nsip, "link", "set", lab, "addrgenmode", "none")
        run(*nsip, "addr", "add", "198.18.%d.2/28" % slot, "dev", lab)
        for index in (3, 4, 5, 6):
            run(*nsip, "addr", "add", "198.18.%d.%d/32" % (slot, index), "dev", lab)
        run(*nsip, "addr", "add", "169.254.253.%d/32" % slot, "dev", lab)
        if v6:
            run(*nsip, "addr", "add", "%s::2/64" % self._ula(slot), "dev", lab, "nodad")
            run(*nsip, "addr", "add", "fe80::2/64", "dev", lab, "nodad")
        run(*nsip, "link", "set", lab, "up")
        run("ip", "link", "set", host, "addrgenmode", "none")
        if v6:
            run("ip", "addr", "add", "%s::1/64" % self._ula(slot), "dev", host, "nodad")
            run("ip", "addr", "add", "fe80::1/64", "dev", host, "nodad")
        run("ip", "link", "set", host, "up")
        run("ip", "route", "add", "169.254.253.%d/32" % slot, "dev", host, "src", "198.18.%d.1" % slot)
        return slot

    @staticmethod
    def _ula(slot):
        return "fd63:676c:6162:%x" % slot

    def _write_info(self, slot):
        v6 = ipv6_enabled()
        wheels_dir, npm_dir = self.path("wheels"), self.path("npm")
        os.makedirs(wheels_dir, exist_ok=True)
        os.makedirs(npm_dir, exist_ok=True)
        wheels = []
        for name, version, requires, source in WHEELS:
            file_name, sha256 = build_wheel(wheels_dir, name, version, requires, source)
            wheels.append({"name": name, "version": version, "file": file_name, "sha256": sha256,
                           "requires": requires})
        packages = npm_packages(self.npm_mirror, npm_dir)
        hosts = {}
        for name, (log, index, role) in HOSTS.items():
            host = {"role": role, "http": 80, "https": 443, "log": self.path(log + ".log"),
                    "body": body_of(name)}
            if index is not None:
                host["address"] = "198.18.%d.%d" % (slot, index)
            else:
                host["address"] = "169.254.253.%d" % slot
                if v6:
                    host["address6"] = "%s::2" % self._ula(slot)
                    host["link_local6"] = "fe80::2%%%s" % self.veth_host
            hosts[name] = host
        addresses = [h["address"] for h in hosts.values()] + [h["address6"] for h in hosts.values() if "address6" in h]
        make_certificates(self.state, list(HOSTS), addresses, self.netns)
        info = {
            "netns": self.netns, "slot": slot, "state_dir": self.state,
            "veth": {"host": self.veth_host, "lab": self.veth_lab},
            "net": {"ipv4": "198.18.%d.0/28" % slot, "host_address": "198.18.%d.1" % slot,
                    "ipv6": "%s::/64" % self._ula(slot) if v6 else None,
                    "host_address6": "%s::1" % self._ula(slot) if v6 else None},
            "hosts": hosts,
            "hosts_file": self.path("hosts"),
            "ca": self.path("ca.pem"),
            "index_url": "http://pypi.lab.test/simple/",
            "registry_url": "http://registry.lab.test/",
            "wheels": wheels,
            "npm": [{k: v for k, v in p.items() if k != "manifest"} for p in packages],
        }
        lines = ["# cellgate netlab %s (%s): test hosts only; never in /etc/hosts" % (self.netns, self.state)]
        for name, host in hosts.items():
            lines.append("%s %s" % (host["address"], name))
            if "address6" in host:
                lines.append("%s %s" % (host["address6"], name))
                lines.append("%s %s" % (host["address6"], name.replace("metadata.", "metadata6.")))
        with open(self.path("hosts"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(self.path("npm.json"), "w") as f:
            json.dump(packages, f)
        tmp = self.lab_json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(info, f, indent=2)
        os.replace(tmp, self.lab_json)

    def _start_servers(self):
        info = self.info()
        procs = {}
        for name, host in info["hosts"].items():
            ready = self.path(HOSTS[name][0] + ".ready")
            with contextlib.suppress(FileNotFoundError):
                os.unlink(ready)
            with open(host["log"], "w"):
                pass
            err = open(self.path(HOSTS[name][0] + ".err"), "w")
            procs[name] = subprocess.Popen(
                ["ip", "netns", "exec", self.netns, sys.executable, os.path.abspath(__file__),
                 "serve", self.state, name],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
            err.close()
            self._procs.append(procs[name])
        deadline = time.monotonic() + READY_TIMEOUT
        waiting = dict(procs)
        while waiting:
            for name, proc in list(waiting.items()):
                if os.path.exists(self.path(HOSTS[name][0] + ".ready")):
                    del waiting[name]
                elif proc.poll() is not None:
                    raise RuntimeError("netlab: the %s server exited %d: %s" % (
                        name, proc.returncode, read(self.path(HOSTS[name][0] + ".err"))[-2000:]))
            if waiting and time.monotonic() > deadline:
                raise RuntimeError("netlab: servers not ready after %d s: %s" % (READY_TIMEOUT, ", ".join(waiting)))
            time.sleep(0.02)

    # ---- taking it down

    def processes(self):
        """The pids of the lab: every process in its namespace and every server it
        recorded that still runs."""
        pids = set()
        if self.netns in netns_list():
            pids |= {int(p) for p in run("ip", "netns", "pids", self.netns, check=False).split()}
        for log, _, _ in HOSTS.values():
            with contextlib.suppress(OSError, ValueError):
                pid = int(read(self.path(log + ".ready")).split()[0])
                cmdline = read("/proc/%d/cmdline" % pid, "rb").split(b"\0")
                if b"serve" in cmdline and self.state.encode() in cmdline:
                    pids.add(pid)
        return pids

    def down(self):
        """Stops the servers, deletes the veth pair and the namespace; nothing to do is fine."""
        pids = self.processes()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while pids and time.monotonic() < deadline:
            pids = {p for p in pids if _alive(p)}
            time.sleep(0.02)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for proc in self._procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self._procs = []
        if link_exists(self.veth_host):
            run("ip", "link", "del", self.veth_host, check=False)
        if self.netns in netns_list():
            run("ip", "netns", "del", self.netns)
        for log, _, _ in HOSTS.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path(log + ".ready"))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(REGISTRY, self.netns))

    # ---- using it

    def address(self, name):
        return self.info()["hosts"][name]["address"]

    def requests(self, name):
        """The requests the host logged, oldest first: dicts of scheme, method, path, host."""
        with open(self.info()["hosts"][name]["log"]) as f:
            return [json.loads(line) for line in f if line.strip()]

    def ssl_context(self):
        """A client context that trusts the lab's CA only."""
        return ssl.create_default_context(cafile=self.info()["ca"])

    def opener(self):
        """A urllib opener that dials the lab's address for each lab name (never the system
        resolver nor a proxy) and verifies HTTPS against the lab's CA; addresses work too."""
        names = {n: h["address"] for n, h in self.info()["hosts"].items()}
        context = self.ssl_context()

        def dial(host, port, timeout):
            return socket.create_connection((names.get(host, host), port), timeout)

        class Plain(http.client.HTTPConnection):
            def connect(self):
                self.sock = dial(self.host, self.port, self.timeout)

        class Tls(http.client.HTTPSConnection):
            def connect(self):
                self.sock = context.wrap_socket(dial(self.host, self.port, self.timeout), server_hostname=self.host)

        class PlainHandler(urllib.request.HTTPHandler):
            def http_open(self, req):
                return self.do_open(Plain, req)

        class TlsHandler(urllib.request.HTTPSHandler):
            def https_open(self, req):
                return self.do_open(Tls, req)

        return urllib.request.build_opener(urllib.request.ProxyHandler({}), PlainHandler, TlsHandler)

    def check(self):
        """The self-check of a lab that is up: a list of problems, empty when all is well."""
        problems = []
        info, opener = self.info(), self.opener()

        def expect(what, test):
            try:
                result = test()
                if result is not True:
                    problems.append("%s: %s" % (what, result))
            except Exception as e:  # noqa: BLE001 (a self-check reports every failure)
                problems.append("%s: %s: %s" % (what, type(e).__name__, e))

        def get(url, headers=None):
            with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=30) as r:
                return r.status, r.read()

        for name, host in info["hosts"].items():
            for scheme in ("http", "https"):
                base = "%s://%s" % (scheme, name)
                expect(base + "/", lambda: get(base + "/") == (200, host["body"].encode()) or "wrong body")
                expect(base + "/bytes/100000", lambda: len(get(base + "/bytes/100000")[1]) == 100000 or "wrong size")
                expect(base + "/headers", lambda: json.loads(get(base + "/headers", {"Authorization": "lab"})[1])
                       ["headers"].get("Authorization") == "lab" or "header not echoed")
                expect(base + "/slow", lambda: get(base + "/slow?bytes=3&delay_ms=10")[1] == b"..." or "wrong body")
                expect(base + "/no-such-path", lambda: _status(opener, base + "/no-such-path") == 404 or "not 404")
            expect(name + " log", lambda: any(r["path"] == "/headers" and r["host"] == name
                                               for r in self.requests(name)) or "no /headers logged")
        index = "https://pypi.lab.test/simple/"
        for wheel in info["wheels"]:
            page = lambda: get(index + wheel["name"] + "/")[1].decode()  # noqa: E731
            expect("index " + wheel["name"], lambda: ("#sha256=" + wheel["sha256"]) in page() or "no hash link")
            expect("wheel " + wheel["file"], lambda: hashlib.sha256(
                get("https://pypi.lab.test/packages/" + wheel["file"])[1]).hexdigest() == wheel["sha256"] or "hash")
        for package in info["npm"]:
            def packument():
                doc = json.loads(get("http://registry.lab.test/" + urllib.parse.quote(package["name"], safe="@"))[1])
                dist = doc["versions"][package["version"]]["dist"]
                data = get(dist["tarball"])[1]
                return hashlib.sha1(data).hexdigest() == dist["shasum"] == package["sha1"] or "shasum"
            expect("registry " + package["name"], packument)
        for family in ("", "-6"):
            expect("default route " + (family or "-4"), lambda: "default" not in run(
                "ip", "-n", self.netns, *([family] if family else []), "route", "show", "table", "all")
                or "the lab has a default route")
        return problems


def gc():
    """Takes down every lab whose state dir is gone (a test killed before its clean-up);
    returns their namespaces. A lab whose state dir is there is left alone."""
    gone = []
    with contextlib.suppress(FileNotFoundError):
        for netns in sorted(os.listdir(REGISTRY)):
            with contextlib.suppress(FileNotFoundError):
                state = read(os.path.join(REGISTRY, netns)).strip()
                # The state dir, not lab.json: a lab coming up has written its entry and made
                # its namespace before its lab.json (a gc then took down a test's lab mid-up).
                if not os.path.isdir(state):
                    Lab(state).down()
                    gone.append(netns)
    return gone


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        if read("/proc/%d/stat" % pid).split(")")[-1].split()[0] == "Z":
            return False
    return True


def _status(opener, url):
    try:
        with opener.open(url, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


# ---------------------------------------------------------------- command line


def main(argv):
    usage = "usage: netlab.py up|down|check|info STATE_DIR, or netlab.py gc"
    if argv[1:] == ["gc"]:
        for netns in gc():
            print("netlab gc: took down", netns)
        return 0
    if len(argv) < 3:
        print(usage, file=sys.stderr)
        return 2
    command, state = argv[1], argv[2]
    if command == "serve" and len(argv) == 4:
        netlab_servers.serve(os.path.realpath(state), argv[3])
        return 0
    lab = Lab(state)
    if command in ("info", "check") and not os.path.exists(lab.lab_json):
        print("netlab: no lab at %s (netlab.py up %s first)" % (lab.state, state), file=sys.stderr)
        return 1
    if command == "up":
        print(json.dumps(lab.up(), indent=2))
    elif command == "down":
        lab.down()
    elif command == "info":
        print(json.dumps(lab.info(), indent=2))
    elif command == "check":
        problems = lab.check()
        for problem in problems:
            print("netlab check:", problem)
        print("netlab check:", "ok" if not problems else "%d problem(s)" % len(problems))
        return 1 if problems else 0
    else:
        print(usage, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
