// Hostile media for the image preview path (issue 23, point 2), shared by
// corpus_media.test.mjs and tests/bench/bench_attack_image.mjs: Python that the sandbox runs
// to make an image bomb with zlib and struct only and display it (IPython.display.Image), and
// the server-side measures (its own CPU time, its peak RSS, a pinger's longest gap).

import fs from 'node:fs';

/**
 * Python: a grey progressive JPEG (SOF2) of side x side pixels with `scans` empty DC scans
 * (valid headers, no entropy-coded data), displayed. Each scan costs a decoder a pass over
 * the whole image; the file is 10 bytes a scan, plus a comment of `pad` bytes (at most
 * 65533) that puts a small one over the result's image budget.
 */
export function jpegScansCode({ side = 2048, scans = 30000, pad = 0 } = {}) {
  return [
    'import struct',
    'from IPython.display import Image, display',
    'seg = lambda m, d: b"\\xff" + bytes([m]) + struct.pack(">H", len(d) + 2) + d',
    'dqt = seg(0xDB, b"\\x00" + bytes([1] * 64))',
    `sof = seg(0xC2, struct.pack(">BHHB", 8, ${side}, ${side}, 1) + b"\\x01\\x11\\x00")`,
    'dht = seg(0xC4, b"\\x00" + bytes([1] + [0] * 15) + b"\\x00")',
    'sos = seg(0xDA, b"\\x01\\x01\\x00\\x00\\x00\\x00")',
    `com = seg(0xFE, b"x" * ${pad}) if ${pad} else b""`,
    `jpeg = b"\\xff\\xd8" + com + dqt + sof + dht + sos * ${scans} + b"\\xff\\xd9"`,
    'display(Image(data=jpeg, format="jpeg"))',
    'print(len(jpeg))',
  ].join('\n');
}

/**
 * Python: a 64 x 64 grey PNG with `chunks` zTXt chunks before its pixels, each inflating to
 * `inflated` bytes (about inflated/1000 bytes compressed), displayed.
 */
export function pngZtxtCode({ chunks = 400, inflated = 7_900_000 } = {}) {
  return [
    'import struct, zlib',
    'from IPython.display import Image, display',
    'chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))',
    `z = chunk(b"zTXt", b"k\\0\\0" + zlib.compress(b"\\0" * ${inflated}, 9))`,
    'ihdr = chunk(b"IHDR", struct.pack(">IIBBBBB", 64, 64, 8, 0, 0, 0, 0))',
    'idat = chunk(b"IDAT", zlib.compress(b"\\0" * (65 * 64)))',
    `png = b"\\x89PNG\\r\\n\\x1a\\n" + ihdr + z * ${chunks} + idat + chunk(b"IEND", b"")`,
    'display(Image(data=png, format="png"))',
    'print(len(png))',
  ].join('\n');
}

/**
 * Python: a noise PNG (incompressible, w x h RGB, about 3*w*h bytes) made with zlib and
 * struct, displayed: past a small --max-message-mb the kernel saves it as
 * /mnt/data/outputs/large-*.png instead of sending it.
 */
export function noisePngCode({ w = 700, h = 500 } = {}) {
  return [
    'import os, struct, zlib',
    'from IPython.display import Image, display',
    'chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))',
    `raw = b"".join(b"\\0" + os.urandom(${w} * 3) for _ in range(${h}))`,
    `png = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", ${w}, ${h}, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b"")`,
    'display(Image(data=png, format="png"))',
    'print(len(png))',
  ].join('\n');
}

/** The CPU time (user + system, in seconds, all threads, not its children) of process pid. */
export function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime: fields 14 and 15
}

/** Resets VmHWM of pid to its current RSS (root only); false when not permitted. */
export function resetPeak(pid) {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** { rssMb, hwmMb } of pid from /proc/<pid>/status. */
export function memoryMb(pid) {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key) => Number(text.match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'))?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
}

/**
 * Pings the server (MCP ping on `client`) every `everyMs` until stop() or `maxPings` pings
 * were sent, one at a time. stop() resolves to { pings, maxGapMs, maxLatencyMs }: the
 * longest time between two answers (or from the start to the first), the longest single ping.
 */
export function startPinger(client, { everyMs = 10, maxPings = 20000 } = {}) {
  let stopped = false;
  let pings = 0;
  let maxGap = 0;
  let maxLatency = 0;
  let last = performance.now();
  const loop = (async () => {
    while (!stopped && pings < maxPings) {
      const t0 = performance.now();
      try {
        await client.ping({ timeout: 600000 });
      } catch {
        break;
      }
      const now = performance.now();
      pings += 1;
      maxLatency = Math.max(maxLatency, now - t0);
      maxGap = Math.max(maxGap, now - last);
      last = now;
      const wait = everyMs - (performance.now() - t0);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { pings, maxGapMs: maxGap, maxLatencyMs: maxLatency };
    },
  };
}
