// The soak's work: a seeded generator and the cells, each printing its unique token.

/** mulberry32: a small seeded generator, the same run for the same seed. */
export class Rng {
  constructor(seed) { this.s = seed >>> 0; }
  next() {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n) { return Math.floor(this.next() * n); }
  pick(list) { return list[this.int(list.length)]; }
  shuffle(list) {
    for (let i = list.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [list[i], list[j]] = [list[j], list[i]];
    }
    return list;
  }
}

let serial = 0;
/** A new token: SOAKT<n>X, unique in the run; TOKEN_RE finds them in any output. */
export const newToken = () => `SOAKT${++serial}X`;
export const TOKEN_RE = /SOAKT\d+X/g;

export const LANGS = ['python', 'javascript', 'bash', 'r'];
// Kinds by weight; timeout and cancel only where an interrupt is prompt (Python, bash, R).
const KINDS = ['print', 'print', 'print', 'display', 'stdin', 'file', 'raise', 'timeout', 'cancel'];
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/**
 * The cell of KIND in LANG printing TOKEN: { kind, args (execute_code's, without session_id),
 * expect: 'success' | 'error' | 'timeout' | 'cancel', cancelAfterMs? }.
 */
export function cellFor(lang, kind, token) {
  const file = `f_${token.slice(5, -1)}.txt`; // no token in the name: a file a fault left is no foreign token
  if ((kind === 'timeout' || kind === 'cancel') && lang === 'javascript') kind = 'print';
  if (kind === 'display' && (lang === 'javascript' || lang === 'bash')) kind = 'print';
  const py = {
    print: `print('${token}')`,
    display: `from IPython.display import HTML, Image, display\nimport base64\ndisplay(HTML('<b>${token}</b>'))\n`
      + `display(Image(data=base64.b64decode('${PNG}')))\nprint('${token}')`,
    stdin: `print(input())`,
    file: `open('${file}', 'w').write('${token}')\nprint(open('${file}').read())\nimport os\nos.remove('${file}')`,
    raise: `print('${token}')\nraise ValueError('${token}')`,
    timeout: `import time\nprint('${token}', flush=True)\ntime.sleep(60)`,
    cancel: `import time\nprint('${token}', flush=True)\ntime.sleep(60)`,
  };
  const js = {
    print: `console.log('${token}')`,
    stdin: `console.log(require('fs').readFileSync(0, 'utf8').trim())`,
    file: `const fs = require('fs'); fs.writeFileSync('${file}', '${token}'); console.log(fs.readFileSync('${file}', 'utf8')); fs.unlinkSync('${file}')`,
    raise: `console.log('${token}'); throw new Error('${token}')`,
  };
  const sh = {
    print: `echo ${token}`,
    stdin: `cat`,
    file: `echo ${token} > ${file}; cat ${file}; rm ${file}`,
    raise: `echo ${token}; exit 3`,
    timeout: `echo ${token}; sleep 60`,
    cancel: `echo ${token}; sleep 60`,
  };
  const r = {
    print: `cat('${token}\\n')`,
    display: `IRdisplay::display_html('<b>${token}</b>')\nIRdisplay::display_png(jsonlite::base64_dec('${PNG}'))\ncat('${token}\\n')`,
    stdin: `cat(readLines('stdin'), sep = '\\n')`,
    file: `writeLines('${token}', '${file}')\ncat(readLines('${file}'), sep = '\\n')\ninvisible(file.remove('${file}'))`,
    raise: `cat('${token}\\n')\nstop('${token}')`,
    timeout: `cat('${token}\\n')\nSys.sleep(60)`,
    cancel: `cat('${token}\\n')\nSys.sleep(60)`,
  };
  const code = { python: py, javascript: js, bash: sh, r }[lang][kind];
  const args = { language: lang, code };
  if (kind === 'stdin') args.stdin = `${token}\n`;
  if (kind === 'timeout') args.timeout = 2;
  const expect = { raise: 'error', timeout: 'timeout', cancel: 'cancel' }[kind] ?? 'success';
  return { kind, args, expect, cancelAfterMs: kind === 'cancel' ? 1500 : 0 };
}

export const pickKind = (rng) => rng.pick(KINDS);
