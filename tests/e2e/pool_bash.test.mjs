// One-shot bash from the warm pool (issue 13, point 1): a pooled bash sandbox holds a bash
// already started in it, waiting for the script's path on its stdin; a one-shot run then
// costs a pipe write and an exec of bash, not a runtime exec. The tests prove that path is
// taken (the server logs it at debug) and that it behaves as a fresh `bash script` does:
// stdout, stderr, exit codes, stdin (the script reads what follows the path line, and EOF
// when none was given), a timeout that kills what the script started, $0 and cwd.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { callExec, sc, sleep, startServer } from './lib.mjs';

const ARGS = ['--http-listen', 'off', '--log-level', 'debug', '--pool', 'python=0,javascript=0,bash=1'];
const count = (text, re) => (text.match(new RegExp(re, 'g')) || []).length;

async function readyCount(server, n, ms = 90000) {
  const end = Date.now() + ms;
  while (count(server.stderrText(), 'pool: a bash sandbox is ready') < n) {
    if (Date.now() > end) assert.fail(`no ${n} ready bash sandbox(es)\n${server.stderrText().slice(-3000)}`);
    await sleep(50);
  }
}

test('one-shot bash runs in the prestarted bash and behaves like a fresh one', async () => {
  const server = await startServer({ name: 'pool-bash', args: ARGS });
  let ready = 0;
  const run = async (args) => {
    await readyCount(server, ++ready);
    const before = count(server.stderrText(), 'the prestarted bash runs it');
    const r = sc(await callExec(server.client, { language: 'bash', ...args }));
    assert.equal(count(server.stderrText(), 'the prestarted bash runs it'), before + 1, 'not run by the prestarted bash');
    return r;
  };
  try {
    let r = await run({ code: 'echo out; echo err >&2; echo "$0"; pwd; exit 3' });
    assert.equal(r.exit_code, 3, JSON.stringify(r));
    assert.match(r.stdout, /^out\n\/run\/cellgate\/command-[0-9a-f]+\.sh\n\/mnt\/data\n$|^out\n.*command-[0-9a-f]+\.sh\n\/mnt\/data\n$/);
    assert.equal(r.stderr.includes('err'), true);

    r = await run({ code: 'read -r a; read -r b; echo "[$a][$b]"; cat', stdin: 'one\ntwo\nrest\n' });
    assert.equal(r.stdout, '[one][two]\nrest\n', JSON.stringify(r));

    r = await run({ code: 'if read -r x; then echo "got $x"; else echo eof; fi' });
    assert.equal(r.stdout, 'eof\n', 'no stdin given: the script reads EOF');

    r = await run({ code: 'sleep 300 & echo started; wait', timeout: 2 });
    assert.equal(r.timed_out, true, JSON.stringify(r));
    assert.equal(r.stdout, 'started\n');

    // $PPID is 0 inside (the runtime's exec parent is outside the pid namespace), as for an
    // unpooled run: `kill -9 0` kills the script's own process group, exit 137 either way.
    r = await run({ code: 'echo ppid=$PPID; kill -9 $PPID 2>/dev/null; echo alive' });
    assert.equal(r.exit_code, 137, JSON.stringify(r));
    assert.equal(r.stdout, 'ppid=0\n');

    r = await run({ code: 'echo hi > f.txt && cat f.txt' });
    assert.equal(r.stdout, 'hi\n');
  } finally {
    await server.close();
  }
});
