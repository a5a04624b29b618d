// What only the Docker Engine API backend (--backend docker) has, on each engine it is tested
// against (backend_docker.test.mjs: Podman's Docker-compatible service; backend_dockerd.test.mjs:
// the real Docker Engine): the engine named in the log, the labels app=cellgate, session_id,
// instance, session and kind, memory figures from the engine's cgroup layout, a kept session
// re-adopted by the next server, and the removal by label of a kill -9'd server's containers.
// The scenarios every backend shares are the contract (contract_docker*.test.mjs).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';

import { callExec, expectStatus, show, sleep, startRawServer, startServer } from './lib.mjs';

// How each engine names itself in the server's log (GET /version).
const ENGINE_NAME = { podman: /sandbox engine: Podman Engine 4\./, dockerd: /sandbox engine: Docker Engine 20\.10\./ };

const INIT = { jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'backend-docker', version: '1' } } };

/**
 * Registers the Docker backend's own tests on ENGINE ('podman' or 'dockerd'). opts: { skip:
 * false or why it cannot run here, start: async () => ({ socket, args, stop() }) }.
 */
export function backendDockerSuite(engineName, { skip, start }) {
  describe(`docker backend on ${engineName}`, { skip }, () => {
    let engine;
    let server;
    let client;

    // GETs PATH from the engine on its private socket; resolves with the parsed JSON.
    const get = (pathname) => new Promise((resolve, reject) => {
      const req = http.get({ socketPath: engine.socket, path: `/v1.41${pathname}` }, (res) => {
        let body = '';
        res.on('data', (chunk) => { body += chunk; });
        res.on('end', () => {
          try { resolve(body ? JSON.parse(body) : null); } catch { reject(new Error(`${pathname}: ${body}`)); }
        });
      });
      req.on('error', reject);
    });
    // The containers labelled app=cellgate and LABELS, as `docker ps -a --filter label=…` lists them.
    const labelled = (...labels) => get(`/containers/json?all=true&filters=${encodeURIComponent(JSON.stringify({ label: ['app=cellgate', ...labels] }))}`);
    const rawArgs = () => [...engine.args, '--cleanup-interval', '0'];
    const exited = (proc) => new Promise((resolve) => (proc.exitCode !== null || proc.signalCode ? resolve() : proc.once('exit', resolve)));

    before(async () => {
      engine = await start();
      server = await startServer({ name: `backend-docker-${engineName}`, args: [...engine.args, '--http-listen', '127.0.0.1:0'] });
      client = server.client;
    });

    after(async () => {
      await server?.close();
      await engine?.stop();
    });

    const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });

    test('the docker backend is chosen and the engine logged by name and version, and hello world runs', async () => {
      assert.match(server.stderrText(), /sandbox backend: docker/);
      assert.match(server.stderrText(), ENGINE_NAME[engineName]);
      const r = await callExec(client, { language: 'python', code: "print('Hello, World!')" });
      assert.equal(expectStatus(r, 'success', server).stdout, 'Hello, World!\n');
    });

    test('state across cells, and the session container is labelled', async () => {
      let r = await callExec(client, { language: 'python', code: 'x = 41', session_id: 'sess_dockerstate1' });
      expectStatus(r, 'success', server);
      r = await callExec(client, { language: 'python', code: 'print(x + 1)', session_id: 'sess_dockerstate1' });
      assert.equal(expectStatus(r, 'success', server).stdout, '42\n');
      const kinds = (await labelled()).map((c) => c.Labels['org.cellgate.kind']);
      assert.ok(kinds.includes('session'), `labels: ${JSON.stringify(kinds)}`);
      const one = (await labelled('org.cellgate.kind=session'))[0];
      assert.match(one.Labels['org.cellgate.instance'], /^[0-9a-f]{12}$/);
      assert.match(one.Labels['org.cellgate.session'], /^[0-9a-f]{12}$/);
      assert.match(one.Names[0], /^\/?cg-[0-9a-f]{12}-/);
    });

    test("label session_id=<the client's session id> finds a session's container (seed 004), pooled or not", async () => {
      await call('start_session', { language: 'python', session_id: 'sess_dockerlabel1' });
      let r = await callExec(client, { language: 'python', code: 'print(1)', session_id: 'sess_dockerlabel1' });
      expectStatus(r, 'success', server);
      const found = await labelled('session_id=sess_dockerlabel1');
      assert.equal(found.length, 1, JSON.stringify(found.map((c) => c.Labels)));
      assert.equal(found[0].Labels['org.cellgate.kind'], 'session');
      assert.equal(found[0].State, 'running');
      // A server with a warm pool: the session still gets its label.
      const pooled = await startServer({ name: `backend-docker-${engineName}-pool`, args: [...engine.args, '--pool', 'python=1', '--log-level', 'debug', '--http-listen', 'off'] });
      try {
        for (let i = 0; i < 300 && !/pool: a python sandbox is ready/.test(pooled.stderrText()); i++) await sleep(100);
        assert.match(pooled.stderrText(), /pool: a python sandbox is ready/);
        r = await callExec(pooled.client, { language: 'python', code: 'print(2)', session_id: 'sess_dockerlabel2' });
        assert.equal(expectStatus(r, 'success', pooled).stdout, '2\n');
        const mine = await labelled('session_id=sess_dockerlabel2');
        assert.equal(mine.length, 1, `${JSON.stringify((await labelled()).map((c) => c.Labels))}\n${pooled.stderrText()}`);
        // A one-shot run takes the warm sandbox; it has no session and no session_id.
        r = await callExec(pooled.client, { language: 'python', code: 'print(3)' });
        assert.equal(expectStatus(r, 'success', pooled).stdout, '3\n');
        assert.match(pooled.stderrText(), /pool: python sandbox \w+ claimed by a one-shot run/);
      } finally {
        await pooled.close();
      }
      assert.deepEqual(await labelled('session_id=sess_dockerlabel2'), [], 'the pooled server removed its session container');
    });

    test("memory figures come from the container's cgroup as the engine lays it out, and the kernel's pid is known", async () => {
      const sid = 'sess_dockermem01';
      const r = await callExec(client, { language: 'python', code: 'held = bytearray(150 * 1024 * 1024)\nfor i in range(0, len(held), 4096): held[i] = 1', session_id: sid });
      const s = expectStatus(r, 'success', server);
      assert.ok(s.memoryUsedMB >= 150, show(r, server));
      const listed = (await call('list_sessions', {})).structuredContent.sessions.find((x) => x.session_id === sid);
      assert.ok(listed.memory_mb >= 150, JSON.stringify(listed));
      // The kernel's host pid, which the engine says once the process runs (dockerd: after it
      // answered the exec's start), so that a timeout's clean-up spares it.
      assert.ok(listed.pid > 0, JSON.stringify(listed));
    });

    test('a kept session outlives a kill -9 of its server: the next one re-adopts the same container', async () => {
      const state = fs.mkdtempSync(path.join(os.tmpdir(), `cg-docker-keep-${engineName}-`));
      const args = [...rawArgs(), '--keep-sessions', 'on'];
      let instance = '';
      const run = async (srv, id, code) => {
        srv.send({ jsonrpc: '2.0', id, method: 'tools/call',
          params: { name: 'execute_code', arguments: { language: 'python', code, session_id: 'sess_dockerkeep01' } } });
        const answer = await srv.next();
        return answer.result?.structuredContent ?? answer;
      };
      let first = startRawServer(state, { args });
      first.send(INIT);
      await first.next();
      assert.equal((await run(first, 1, 'a = 41')).status, 'success', first.stderr());
      instance = `org.cellgate.instance=${fs.readdirSync(path.join(state, 'instances'))[0]}`;
      const before = (await labelled(instance)).map((c) => c.Id);
      assert.equal(before.length, 1);
      first.proc.kill('SIGKILL');
      await exited(first.proc);

      const second = startRawServer(state, { args });
      try {
        second.send(INIT);
        await second.next();
        const r = await run(second, 1, 'print(a + 1)');
        assert.equal(r.stdout, '42\n', `${JSON.stringify(r)}\n${second.stderr()}`);
        assert.equal(r.kernel_restarted, false, JSON.stringify(r));
        assert.deepEqual((await labelled(instance)).map((c) => c.Id), before, 'the same container');
        assert.match(second.stderr(), /re-adopted the sandbox/);
      } finally {
        // Without keeping, the next server's exit removes the adopted sandbox.
        second.proc.kill('SIGKILL');
        await exited(second.proc);
        const third = startRawServer(state, { args: rawArgs() });
        third.send(INIT);
        await third.next();
        third.proc.stdin.end();
        await exited(third.proc);
        fs.rmSync(state, { recursive: true, force: true });
      }
      assert.deepEqual(await labelled(instance), []);
    });

    test('after kill -9 of a server, the next start removes its containers by label', async () => {
      const state = fs.mkdtempSync(path.join(os.tmpdir(), 'cg-docker-orphans-'));
      const first = startRawServer(state, { args: rawArgs() });
      first.send(INIT);
      await first.next();
      first.send({ jsonrpc: '2.0', id: 1, method: 'tools/call',
        params: { name: 'execute_code', arguments: { language: 'python', code: 'print(1)', session_id: 'sess_dockerorph01' } } });
      const answer = await first.next();
      assert.equal(answer.result?.structuredContent?.stdout, '1\n', JSON.stringify(answer) + first.stderr());
      const instance = fs.readdirSync(path.join(state, 'instances'))[0];
      assert.match(instance, /^[0-9a-f]{12}$/);
      const mine = `org.cellgate.instance=${instance}`;
      assert.ok((await labelled(mine)).length >= 1, 'the session container is there');
      first.proc.kill('SIGKILL');
      await exited(first.proc);
      assert.ok((await labelled(mine)).length >= 1, 'a killed server cannot clean up');

      const second = startRawServer(state, { args: rawArgs() });
      second.send(INIT);
      await second.next();
      let left = await labelled(mine);
      for (let i = 0; i < 100 && left.length > 0; i++) {
        await sleep(100);
        left = await labelled(mine);
      }
      assert.deepEqual(left.map((c) => c.Names), [], second.stderr());
      second.proc.stdin.end();
      await exited(second.proc);
      assert.deepEqual(await labelled(mine), []);
      fs.rmSync(state, { recursive: true, force: true });
    });

    test("servers of other state dirs share the engine: a start leaves the other's sandboxes alone, and one whose state dir is gone is cleaned", async () => {
      // The suite's server has a session running.
      const sid = 'sess_dockershare1';
      expectStatus(await callExec(client, { language: 'python', code: 'shared = 5', session_id: sid }), 'success', server);
      const start = async (state, prefix = [], args = []) => {
        const srv = startRawServer(state, { args: [...rawArgs(), ...args], prefix });
        srv.send(INIT);
        // The start-up sweep is done before it answers.
        const answer = await Promise.race([srv.next(), exited(srv.proc).then(() => null)]);
        assert.ok(answer?.result, `${JSON.stringify(answer)}\n${srv.stderr()}`);
        return srv;
      };
      const stop = async (srv) => {
        srv.proc.stdin.end();
        await exited(srv.proc);
      };
      const states = [];
      const tempState = () => {
        states.push(fs.mkdtempSync(path.join(os.tmpdir(), 'cg-docker-share-')));
        return states.at(-1);
      };
      try {
        // 1. Same view (this mount namespace), another state dir: its sandboxes stay.
        const other = await start(tempState());
        await stop(other);
        let r = await callExec(client, { language: 'python', code: 'print(shared)', session_id: sid });
        assert.equal(expectStatus(r, 'success', server).stdout, '5\n', `${show(r, server)}\n${other.stderr()}`);
        // 2. Another mount namespace where this server's state dir looks empty (cellgate in
        // a container beside one on the host): its state is out of sight, so not judged.
        // (No workspace mounts: the engine would not see those made in a private namespace.)
        const hidden = await start(tempState(), ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
          'mount -t tmpfs cg-hidden "$0" && exec "$@"', server.stateDir], ['--workspace-mb', '0']);
        await stop(hidden);
        r = await callExec(client, { language: 'python', code: 'print(shared + 1)', session_id: sid });
        assert.equal(expectStatus(r, 'success', server).stdout, '6\n', `${show(r, server)}\n${hidden.stderr()}`);
        // 3. A server killed and its state dir gone (a test's temp dir removed): the next
        // start of any server with the same view removes its sandboxes. (Moved away, not
        // removed: the killed server's workspace mounts are below it; a server started on it
        // afterwards takes them down.)
        const goneState = tempState();
        const gone = await start(goneState);
        gone.send({ jsonrpc: '2.0', id: 1, method: 'tools/call',
          params: { name: 'execute_code', arguments: { language: 'python', code: 'print(1)', session_id: 'sess_dockergone01' } } });
        assert.equal((await gone.next()).result?.structuredContent?.stdout, '1\n', gone.stderr());
        const instance = `org.cellgate.instance=${fs.readdirSync(path.join(goneState, 'instances'))[0]}`;
        gone.proc.kill('SIGKILL');
        await exited(gone.proc);
        fs.renameSync(goneState, `${goneState}.away`);
        try {
          assert.ok((await labelled(instance)).length >= 1);
          const sweeper = await start(tempState());
          await stop(sweeper);
          assert.deepEqual((await labelled(instance)).map((c) => c.Names), [], sweeper.stderr());
        } finally {
          fs.renameSync(`${goneState}.away`, goneState);
          await stop(await start(goneState));
        }
        // 4. A server killed in another mount namespace (a server container, restarted):
        // the next server on the same state dir removes what it left, whatever its view.
        const againState = tempState();
        const before = await start(againState, ['unshare', '--mount', '--propagation', 'private'], ['--workspace-mb', '0']);
        before.send({ jsonrpc: '2.0', id: 1, method: 'tools/call',
          params: { name: 'execute_code', arguments: { language: 'python', code: 'print(2)', session_id: 'sess_dockeragain1' } } });
        assert.equal((await before.next()).result?.structuredContent?.stdout, '2\n', before.stderr());
        const left = `org.cellgate.instance=${fs.readdirSync(path.join(againState, 'instances'))[0]}`;
        before.proc.kill('SIGKILL');
        await exited(before.proc);
        assert.ok((await labelled(left)).length >= 1);
        const next = await start(againState);
        await stop(next);
        assert.deepEqual((await labelled(left)).map((c) => c.Names), [], next.stderr());
      } finally {
        for (const state of states) fs.rmSync(state, { recursive: true, force: true });
      }
    });
  });
}
