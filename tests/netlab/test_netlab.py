#!/usr/bin/python3
"""The egress tests' small internet (tests/netlab/netlab.py) on its own (ctest netlab_selftest).

A lab is brought up in a temp dir and every host is fetched from the host namespace with
urllib at the addresses lab.json gives (never the system resolver, never a proxy): the web
endpoints over HTTP and HTTPS (verified against the lab's CA only), 404s, the request logs,
the PEP 503 index with Debian's pip (`pip download` and `pip install --target`), the npm
registry layout with npm (`npm view`, `npm install` of the mirrored left-pad and of the lab's
own tarball), the decoy's link-local and ULA addresses. Then two more labs come up at once
(one through the API, one through the command line) and must not collide, and `down` must
leave no namespace, veth or process; `netlab.py gc` takes down a lab whose state dir is gone
and only that one. Root only (exit 77 otherwise):
    cd tests/netlab && /usr/bin/python3 test_netlab.py
"""

import base64
import hashlib
import http.client
import ipaddress
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.error
import urllib.request
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import netlab  # noqa: E402

NETLAB = os.path.join(HERE, "netlab.py")
LAB_V4 = ipaddress.ip_network(netlab.SUPERNET4)
DECOY_V4 = ipaddress.ip_network(netlab.DECOY4_NET)
LAB_V6 = ipaddress.ip_network(netlab.ULA_NET)


def clean_env():
    """The environment without proxies or pip/npm settings: the lab is reached directly. The
    CA bundle variables go too: requests (in pip) prefers REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE
    to pip's own --cert."""
    return {k: v for k, v in os.environ.items()
            if "proxy" not in k.lower() and "CA_BUNDLE" not in k.upper()
            and not k.lower().startswith(("npm_config_", "pip_"))}


def tool(*argv, cwd=None, timeout=120):
    proc = subprocess.run(argv, cwd=cwd, env=clean_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError("%s: exit %d\n%s\n%s" % (" ".join(argv), proc.returncode, proc.stdout, proc.stderr))
    return proc.stdout


def has_pip():
    return subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class LabTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="netlab-test-")
        cls.lab = netlab.Lab(os.path.join(cls.tmp, "lab"))
        cls.info = cls.lab.up()
        cls.opener = cls.lab.opener()

    @classmethod
    def tearDownClass(cls):
        cls.lab.down()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def fetch(self, url, data=None, headers=None, method=None):
        """(status, headers, body) of a request through the lab's opener."""
        request = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
        try:
            with self.opener.open(request, timeout=60) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def workdir(self, name):
        path = os.path.join(self.tmp, name)
        os.makedirs(path)
        return path

    def test_addresses_stay_on_this_machine(self):
        info = self.info
        self.assertRegex(info["netns"], r"^cgl-[0-9a-f]{8}$")
        self.assertIn(info["netns"], netlab.netns_list())
        net = ipaddress.ip_network(info["net"]["ipv4"])
        self.assertTrue(net.subnet_of(LAB_V4), net)
        for name, host in info["hosts"].items():
            address = ipaddress.ip_address(host["address"])
            if host["role"] == "decoy":
                self.assertTrue(address.is_link_local and address in DECOY_V4, address)
            else:
                self.assertIn(address, net, name)
            # The host routes every lab address into the lab's veth, never out of the machine.
            route = netlab.run("ip", "route", "get", host["address"])
            self.assertIn("dev %s " % info["veth"]["host"], route, route)
        decoy = info["hosts"]["metadata.lab.test"]
        if "address6" in decoy:
            self.assertIn(ipaddress.ip_address(decoy["address6"]), LAB_V6)
            route = netlab.run("ip", "-6", "route", "get", decoy["address6"])
            self.assertIn("dev %s " % info["veth"]["host"], route, route)
        # The hosts file names exactly what lab.json names.
        pairs = set()
        with open(info["hosts_file"]) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    address, name = line.split()
                    pairs.add((name, address))
        for name, host in info["hosts"].items():
            self.assertIn((name, host["address"]), pairs)
        self.assertTrue(all(n.endswith(".lab.test") for n, _ in pairs), pairs)

    def test_no_default_route_in_the_lab(self):
        for family in ("-4", "-6"):
            routes = netlab.run("ip", "-n", self.info["netns"], family, "route", "show", "table", "all")
            self.assertNotIn("default", routes, routes)
        links = netlab.run("ip", "-n", self.info["netns"], "-o", "link", "show")
        self.assertEqual(len(links.strip().splitlines()), 2, links)  # lo and the veth end

    def test_web_endpoints_over_http_and_https(self):
        for name, host in self.info["hosts"].items():
            for scheme in ("http", "https"):
                base = "%s://%s" % (scheme, name)
                with self.subTest(base=base):
                    self.assertEqual(self.fetch(base + "/")[::2], (200, host["body"].encode()))
                    for n in (0, 1, 65536, 1000003):
                        status, headers, body = self.fetch("%s/bytes/%d" % (base, n))
                        self.assertEqual((status, headers["Content-Length"], body), (200, str(n), netlab.pattern(n)))
                    self.assertEqual(self.fetch(base + "/slow?bytes=5&delay_ms=20")[::2], (200, b"....."))
                    status, _, body = self.fetch(base + "/headers", headers={"Authorization": "Bearer lab-secret",
                                                                              "X-Cglab": "1"})
                    echo = json.loads(body)
                    headers = {k.lower(): v for k, v in echo["headers"].items()}
                    self.assertEqual(status, 200)
                    self.assertEqual(headers["authorization"], "Bearer lab-secret")
                    self.assertEqual(headers["host"], name)
                    self.assertIn(["x-cglab", "1"], [[k.lower(), v] for k, v in echo["header_list"]])
                    status, _, body = self.fetch(base + "/headers", data=b"abc")
                    self.assertEqual(json.loads(body)["body_length"], 3)
                    # A chunked body (as a streaming client sends) is read whole.
                    status, _, body = self.fetch(base + "/headers", data=iter([b"ab", b"cde"]),
                                                 headers={"Transfer-Encoding": "chunked"})
                    echo = json.loads(body)
                    self.assertEqual((echo["body_length"], echo["body_sha256"]), (5, hashlib.sha256(b"abcde").hexdigest()))
                    self.assertEqual(self.fetch(base + "/slow?bytes=x")[0], 400)
                    self.assertEqual(self.fetch(base + "/no-such-path")[0], 404)
                    self.assertEqual(self.fetch(base + "/bytes/x")[0], 404)
                    self.assertEqual(self.fetch(base + "/", data=b"", method="PUT")[0], 405)

    def test_https_trusts_only_the_lab_ca(self):
        api = self.info["hosts"]["api.lab.test"]["address"]
        with self.assertRaises(ssl.SSLCertVerificationError):  # the system's CAs do not know it
            with socket.create_connection((api, 443), 30) as sock:
                ssl.create_default_context().wrap_socket(sock, server_hostname="api.lab.test")
        with self.assertRaises(ssl.SSLCertVerificationError):  # a name the certificate lacks
            with socket.create_connection((api, 443), 30) as sock:
                self.lab.ssl_context().wrap_socket(sock, server_hostname="example.com")
        # By address, verified: the certificate names every address too.
        self.assertEqual(self.fetch("https://%s/" % api)[0], 200)
        self.assertTrue(os.path.exists(self.info["ca"]))

    def test_each_request_is_logged_by_its_host(self):
        path = "/headers?marker=%s" % os.urandom(4).hex()
        self.fetch("https://other.lab.test" + path)
        logged = [r for r in self.lab.requests("other.lab.test") if r["path"] == path]
        self.assertEqual(len(logged), 1, logged)
        self.assertEqual((logged[0]["method"], logged[0]["host"], logged[0]["scheme"]),
                         ("GET", "other.lab.test", "https"))
        self.assertEqual([r for r in self.lab.requests("api.lab.test") if r["path"] == path], [])

    def test_simple_index(self):
        status, _, body = self.fetch("http://pypi.lab.test/simple/")
        self.assertEqual(status, 200)
        for wheel in self.info["wheels"]:
            self.assertIn('href="/simple/%s/"' % wheel["name"], body.decode())
            # Names are normalized (PEP 503): CgLab_Hello is cglab-hello.
            odd = wheel["name"].replace("-", "_").title()
            status, _, page = self.fetch("https://pypi.lab.test/simple/%s/" % odd)
            self.assertEqual(status, 200)
            link = re.search(r'href="([^"#]+)#sha256=([0-9a-f]{64})"', page.decode())
            self.assertEqual(link.group(2), wheel["sha256"])
            status, _, data = self.fetch("https://pypi.lab.test" + link.group(1))
            self.assertEqual(hashlib.sha256(data).hexdigest(), wheel["sha256"])
            path = os.path.join(self.tmp, "check-" + wheel["file"])
            with open(path, "wb") as f:
                f.write(data)
            self.assert_valid_wheel(path, wheel)
        self.assertEqual(self.fetch("http://pypi.lab.test/simple/no-such-project/")[0], 404)
        self.assertEqual(self.fetch("http://pypi.lab.test/packages/no-such.whl")[0], 404)

    def assert_valid_wheel(self, path, wheel):
        with zipfile.ZipFile(path) as archive:
            info = "%s-%s.dist-info/" % (wheel["name"].replace("-", "_"), wheel["version"])
            metadata = archive.read(info + "METADATA").decode()
            self.assertIn("Name: %s\n" % wheel["name"], metadata)
            for requirement in wheel["requires"]:
                self.assertIn("Requires-Dist: %s\n" % requirement, metadata)
            self.assertIn("Tag: py3-none-any", archive.read(info + "WHEEL").decode())
            record = archive.read(info + "RECORD").decode().splitlines()
            self.assertEqual(sorted(r.split(",")[0] for r in record), sorted(archive.namelist()))
            for line in record:
                name, digest, size = line.split(",")
                if name.endswith("RECORD"):
                    continue
                data = archive.read(name)
                expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, int(size)), ("sha256=" + expected, len(data)), name)

    def test_pip_downloads_and_installs_from_the_index(self):
        if not has_pip():
            self.skipTest("%s -m pip: pip is not installed (Debian: python3-pip)" % sys.executable)
        pypi = self.info["hosts"]["pypi.lab.test"]["address"]
        pip = [sys.executable, "-m", "pip", "--isolated", "--no-cache-dir", "--disable-pip-version-check"]
        wheels = {w["file"]: w["sha256"] for w in self.info["wheels"]}
        logged = len(self.lab.requests("pypi.lab.test"))
        # pip download over HTTP (--trusted-host): cglab-hello and its dependency.
        out = self.workdir("pip-download")
        tool(*pip, "download", "cglab-hello", "--index-url", "http://%s/simple/" % pypi,
             "--trusted-host", pypi, "-d", out)
        self.assertEqual({f: sha256_file(os.path.join(out, f)) for f in os.listdir(out)}, wheels)
        # pip install --target over HTTPS verified against the lab's CA (--cert).
        target = self.workdir("pip-target")
        tool(*pip, "install", "cglab-hello", "--index-url", "https://%s/simple/" % pypi,
             "--cert", self.info["ca"], "--target", target)
        said = tool(sys.executable, "-c", "import sys; sys.path.insert(0, %r); import cglab_hello; "
                    "print(cglab_hello.hello())" % target)
        self.assertEqual(said.strip(), "hello from cglab-hello 1.0 with cglab-dep 1.0")
        files = [r["path"] for r in self.lab.requests("pypi.lab.test")[logged:] if r["path"].startswith("/packages/")]
        self.assertEqual(sorted(files), sorted(["/packages/" + f for f in wheels] * 2))

    def npm(self, *args, cwd=None):
        configs = [os.path.join(self.tmp, "npmrc-%s-empty" % which) for which in ("user", "global")]
        for config in configs:
            open(config, "a").close()
        return tool("npm", "--userconfig", configs[0], "--globalconfig", configs[1],
                    "--cache", os.path.join(self.tmp, "npm-cache-" + os.urandom(4).hex()),
                    "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel", "error", *args, cwd=cwd)

    def test_npm_installs_from_the_registry_layout(self):
        if shutil.which("npm") is None:
            self.skipTest("npm is not installed (Debian: npm)")
        registry = self.info["hosts"]["registry.lab.test"]["address"]
        names = {p["name"]: p for p in self.info["npm"]}
        # The lab's own tarball, over HTTPS verified against the lab's CA.
        project = self.workdir("npm-own")
        self.npm("install", "cglab-npm-hello", "--registry", "https://%s/" % registry,
                 "--cafile", self.info["ca"], "--prefix", project)
        said = tool("node", "-e", "console.log(require('cglab-npm-hello')())", cwd=project)
        self.assertEqual(said.strip(), "hello from cglab-npm-hello")
        # A tarball the set-up mirrored (tests/e2e/npm-mirror), over HTTP.
        if "left-pad" not in names:
            self.skipTest("tests/e2e/npm-mirror has no left-pad tarball: run scripts/setup.sh test")
        url = "http://%s/" % registry
        self.assertEqual(self.npm("view", "left-pad", "version", "--registry", url).strip(), names["left-pad"]["version"])
        project = self.workdir("npm-mirrored")
        self.npm("install", "left-pad", "--registry", url, "--prefix", project)
        with open(os.path.join(project, "node_modules", "left-pad", "package.json")) as f:
            self.assertEqual(json.load(f)["version"], names["left-pad"]["version"])
        tarball = "/left-pad/-/left-pad-%s.tgz" % names["left-pad"]["version"]
        self.assertIn(tarball, [r["path"] for r in self.lab.requests("registry.lab.test")])
        _, _, body = self.fetch("http://registry.lab.test/left-pad")
        dist = json.loads(body)["versions"][names["left-pad"]["version"]]["dist"]
        self.assertEqual(dist["tarball"], "http://registry.lab.test" + tarball)  # the name asked for
        self.assertEqual((dist["shasum"], dist["integrity"]), (names["left-pad"]["sha1"], names["left-pad"]["integrity"]))
        self.assertEqual(self.fetch("http://registry.lab.test/no-such-package/-/x-1.0.0.tgz")[0], 404)

    def test_decoy_answers_on_refused_ranges(self):
        decoy = self.info["hosts"]["metadata.lab.test"]
        body = decoy["body"].encode()
        self.assertEqual(self.fetch("http://metadata.lab.test/")[::2], (200, body))
        self.assertTrue(ipaddress.ip_address(decoy["address"]).is_link_local)
        if "address6" not in decoy:
            self.skipTest("IPv6 is disabled on this machine: the decoy has no IPv6 address")
        for address in (decoy["address6"], decoy["link_local6"]):
            with self.subTest(address=address):
                self.assertTrue(ipaddress.ip_address(address.split("%")[0]).is_private)
                connection = http.client.HTTPConnection("[%s]:80" % address, timeout=30)
                connection.request("GET", "/headers")
                response = connection.getresponse()
                self.assertEqual(response.status, 200)
                self.assertEqual(json.loads(response.read())["path"], "/headers")
                connection.close()
        clients = {r["client"] for r in self.lab.requests("metadata.lab.test")}
        self.assertIn(self.info["net"]["host_address6"], clients)
        self.assertTrue(any(c.startswith("fe80::1") for c in clients), clients)

    def test_check_command(self):
        proc = subprocess.run([sys.executable, NETLAB, "check", self.lab.state], capture_output=True, text=True,
                              timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("netlab check: ok", proc.stdout)


class TwoLabsTest(unittest.TestCase):
    def test_two_labs_at_once_then_down_leaves_nothing(self):
        watched = ["/etc/hosts", "/etc/resolv.conf"]
        before = {p: sha256_file(p) for p in watched if os.path.exists(p)}
        tmp = tempfile.mkdtemp(prefix="netlab-two-")
        self.addCleanup(shutil.rmtree, tmp, True)
        a, b = netlab.Lab(os.path.join(tmp, "a")), netlab.Lab(os.path.join(tmp, "b"))
        self.addCleanup(a.down)
        self.addCleanup(b.down)
        errors = []

        def up_api():
            try:
                a.up()
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        def up_cli():
            proc = subprocess.run([sys.executable, NETLAB, "up", b.state], capture_output=True, text=True, timeout=120)
            if proc.returncode != 0:
                errors.append(proc.stderr)

        threads = [threading.Thread(target=up_api), threading.Thread(target=up_cli)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        ia, ib = a.info(), b.info()
        self.assertNotEqual(ia["netns"], ib["netns"])
        self.assertNotEqual(ia["slot"], ib["slot"])
        self.assertFalse(ipaddress.ip_network(ia["net"]["ipv4"]).overlaps(ipaddress.ip_network(ib["net"]["ipv4"])))
        addresses = lambda i: {h["address"] for h in i["hosts"].values()}  # noqa: E731
        self.assertEqual(addresses(ia) & addresses(ib), set())
        for lab, other in ((a, b), (b, a)):
            marker = "/headers?lab=%s" % lab.netns
            with lab.opener().open("https://api.lab.test" + marker, timeout=60) as r:
                self.assertEqual(r.status, 200)
            self.assertIn(marker, [r["path"] for r in lab.requests("api.lab.test")])
            self.assertNotIn(marker, [r["path"] for r in other.requests("api.lab.test")])
        pids = a.processes() | b.processes()
        self.assertEqual(len(pids), 2 * len(netlab.HOSTS), pids)
        a.down()
        subprocess.run([sys.executable, NETLAB, "down", b.state], check=True, timeout=60)
        for lab, info in ((a, ia), (b, ib)):
            self.assertNotIn(info["netns"], netlab.netns_list())
            self.assertFalse(netlab.link_exists(info["veth"]["host"]))
            self.assertEqual(lab.processes(), set())
            # With the lab gone its addresses are unreachable, not routed off the machine.
            for host in info["hosts"].values():
                route = subprocess.run(["ip", "route", "get", host["address"]], capture_output=True, text=True)
                self.assertTrue(route.returncode != 0 or route.stdout.startswith("unreachable"),
                                host["address"] + ": " + route.stdout)
        self.assertEqual([p for p in pids if netlab._alive(p)], [])
        ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
        self.assertNotIn(tmp, ps)
        a.down()  # idempotent
        subprocess.run([sys.executable, NETLAB, "down", b.state], check=True, timeout=60)
        self.assertEqual({p: sha256_file(p) for p in watched if os.path.exists(p)}, before)


class GcTest(unittest.TestCase):
    def test_gc_takes_down_a_lab_whose_state_dir_is_gone(self):
        tmp = tempfile.mkdtemp(prefix="netlab-gc-")
        self.addCleanup(shutil.rmtree, tmp, True)
        lost = netlab.Lab(os.path.join(tmp, "lost"))
        self.addCleanup(lost.down)
        with netlab.Lab(os.path.join(tmp, "kept")) as kept:
            info = lost.up()
            pids = lost.processes()
            shutil.rmtree(lost.state)  # a test killed before its clean-up, its temp dir removed
            out = subprocess.run([sys.executable, NETLAB, "gc"], capture_output=True, text=True, check=True,
                                 timeout=60).stdout
            self.assertIn("took down %s" % info["netns"], out)
            self.assertNotIn(info["netns"], netlab.netns_list())
            self.assertFalse(netlab.link_exists(info["veth"]["host"]))
            self.assertEqual([p for p in pids if netlab._alive(p)], [])
            # The lab whose state dir is there is left alone.
            self.assertNotIn(kept.netns, out)
            self.assertEqual(len(kept.processes()), len(netlab.HOSTS))
            with kept.opener().open("http://api.lab.test/", timeout=60) as r:
                self.assertEqual(r.read(), kept.info()["hosts"]["api.lab.test"]["body"].encode())
            # A lab coming up (its entry and state dir made, lab.json not yet) is left alone.
            coming = netlab.Lab(os.path.join(tmp, "coming"))
            os.makedirs(coming.state)
            entry = os.path.join(netlab.REGISTRY, coming.netns)
            with open(entry, "w") as f:
                f.write(coming.state + "\n")
            self.addCleanup(coming.down)
            out = subprocess.run([sys.executable, NETLAB, "gc"], capture_output=True, text=True, check=True,
                                 timeout=60).stdout
            self.assertNotIn(coming.netns, out)
            self.assertTrue(os.path.exists(entry), "gc removed the entry of a lab coming up")
        # Leaving the with block took the kept lab down.
        self.assertNotIn(kept.netns, netlab.netns_list())
        self.assertEqual(kept.processes(), set())


def main():
    if os.geteuid() != 0:
        print("netlab_selftest: skipped, network namespaces need root")
        return 77
    for command in ("ip", "openssl"):
        if shutil.which(command) is None:
            print("netlab_selftest: skipped, no %s command" % command)
            return 77
    program = unittest.main(exit=False, verbosity=2)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
