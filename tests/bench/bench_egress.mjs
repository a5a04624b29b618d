// The egress proxy's overhead (issue 26): a 10 MB download of a tests/netlab lab host through
// a sandbox's proxy (curl in the sandbox: 127.0.0.1:3128, the relay, squid) against the same
// download straight from the host namespace to the lab's address, in the same run, rounds
// alternating so that load from elsewhere falls on both alike. HTTP and HTTPS (a CONNECT
// tunnel; the lab's CA). curl's own time_total, so the cell's round trip is not counted.
//
//   node tests/bench/bench_egress.mjs [rounds=10] [bytes=10485760]    (root, scripts/setup.sh test)
//
// Prints each path's median, min and max in ms and the ratio of the medians.
// Not part of the test command: a benchmark, not a pass/fail check.

import { execFileSync } from 'node:child_process';

import { callExec, sc } from '../e2e/lib.mjs';
import { CA_IN_SANDBOX, labUp, skipReason, startEgressServer, uploadCa } from '../e2e/egress_lab.mjs';

const ROUNDS = Number(process.argv[2] || 10);
const BYTES = Number(process.argv[3] || 10 * 1024 * 1024);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const why = skipReason();
if (why) {
  console.error(`bench_egress: ${why}`);
  process.exit(77);
}

const lab = labUp('cg-bench-egress-');
let server;
try {
  server = await startEgressServer(lab, { allow: ['api.lab.test'], name: 'bench-egress' });
  const sid = 'sess_benchegress1';
  await uploadCa(server, lab, sid);
  const api = lab.address('api.lab.test');
  // One download in the sandbox: [size, seconds] from curl.
  const inSandbox = async (scheme) => {
    const r = await callExec(server.client, {
      language: 'bash', session_id: sid, timeout: 120,
      code: `curl -sS -o /dev/null --cacert ${CA_IN_SANDBOX} -w '%{size_download} %{time_total}' ${scheme}://api.lab.test/bytes/${BYTES}`,
    }, { timeoutMs: 180000 });
    const [size, secs] = (sc(r).stdout ?? '').trim().split(' ').map(Number);
    if (sc(r).status !== 'success' || size !== BYTES) throw new Error(`sandbox ${scheme}: ${JSON.stringify(sc(r))}`);
    return secs * 1000;
  };
  // The same from the host namespace, straight to the lab's address (no proxy).
  const direct = (scheme) => {
    const out = execFileSync('curl', ['-sS', '--noproxy', '*', '-o', '/dev/null', '--cacert', lab.ca,
      '--resolve', `api.lab.test:443:${api}`, '--resolve', `api.lab.test:80:${api}`,
      '-w', '%{size_download} %{time_total}', `${scheme}://api.lab.test/bytes/${BYTES}`], { encoding: 'utf8' });
    const [size, secs] = out.trim().split(' ').map(Number);
    if (size !== BYTES) throw new Error(`direct ${scheme}: ${out}`);
    return secs * 1000;
  };
  for (const scheme of ['http', 'https']) {
    await inSandbox(scheme); // warm: the sandbox, squid's first connection
    direct(scheme);
    const times = { direct: [], proxy: [] };
    for (let i = 0; i < ROUNDS; i++) {
      times.direct.push(direct(scheme));
      times.proxy.push(await inSandbox(scheme));
    }
    const line = (name, xs) => `${name.padEnd(28)} median ${median(xs).toFixed(1)} ms  min ${Math.min(...xs).toFixed(1)}  max ${Math.max(...xs).toFixed(1)}`;
    console.log(`${scheme.toUpperCase()}, ${BYTES} bytes, ${ROUNDS} rounds:`);
    console.log(line('  direct (host namespace)', times.direct));
    console.log(line('  through the sandbox proxy', times.proxy));
    console.log(`  ratio proxy / direct (medians): ${(median(times.proxy) / median(times.direct)).toFixed(2)}`);
  }
} finally {
  await server?.close();
  lab.down();
}
