// A raw WebSocket client of the gateway's kernel channels over a plain TCP socket, for hostile
// tests that need what a library hides: a TCP reset in the middle of the output
// (resetAndDestroy), a close frame followed at once by the end of the connection, or a
// client that stops reading. It speaks the legacy JSON framing GatewayClient uses.

import { randomBytes, randomUUID } from 'node:crypto';
import net from 'node:net';

/** One REST request to the gateway; resolves { status, body (parsed JSON or text) }. */
export function gatewayRest(port, token, method, urlPath, body) {
  return new Promise((resolve, reject) => {
    const headers = { Authorization: `token ${token}` };
    const payload = body === undefined ? null : JSON.stringify(body);
    let request = `${method} ${urlPath} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: ${headers.Authorization}\r\nConnection: close\r\n`;
    if (payload !== null) request += `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n`;
    request += `\r\n${payload ?? ''}`;
    const sock = net.connect(port, '127.0.0.1', () => sock.write(request));
    const chunks = [];
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', reject);
    sock.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const status = Number(text.match(/^HTTP\/1\.1 (\d+)/)?.[1] ?? 0);
      let rest = text.slice(text.indexOf('\r\n\r\n') + 4);
      if (/transfer-encoding: chunked/i.test(text.slice(0, text.indexOf('\r\n\r\n')))) {
        let out = '';
        while (rest.length) {
          const eol = rest.indexOf('\r\n');
          const n = parseInt(rest.slice(0, eol), 16);
          if (!n) break;
          out += rest.slice(eol + 2, eol + 2 + n);
          rest = rest.slice(eol + 2 + n + 2);
        }
        rest = out;
      }
      let parsed = rest;
      try { parsed = rest ? JSON.parse(rest) : null; } catch { /* text */ }
      resolve({ status, body: parsed });
    });
  });
}

/** A masked client frame of OPCODE with PAYLOAD (a Buffer). */
function frame(opcode, payload) {
  const mask = randomBytes(4);
  const len = payload.length;
  const head = len < 126 ? Buffer.from([0x80 | opcode, 0x80 | len])
    : len < 65536 ? Buffer.from([0x80 | opcode, 0x80 | 126, len >> 8, len & 255])
      : Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | 127]), (() => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(len)); return b; })()]);
  const body = Buffer.alloc(len);
  for (let i = 0; i < len; i++) body[i] = payload[i] ^ mask[i & 3];
  return Buffer.concat([head, mask, body]);
}

/**
 * Opens /api/kernels/{kernelId}/channels. Resolves a client, or rejects with
 * `upgrade refused: <status line>` when the gateway does not answer 101.
 * The client: { sock, messages (every JSON message so far, parsed), bytes (payload bytes
 * received), closed (a promise: the TCP connection ended), closeFrame (the server's close
 * frame's code, once it came), execute(code) -> msg_id, waitFor(pred, ms) -> message,
 * sendClose(code), reset(), end() }.
 */
export function openChannels(port, token, kernelId) {
  return new Promise((resolve, reject) => {
    const key = randomBytes(16).toString('base64');
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let upgraded = false;
    const waiters = [];
    let endClosed;
    const client = {
      sock,
      messages: [],
      bytes: 0,
      closeFrame: null,
      closed: new Promise((r) => { endClosed = r; }),
      send(obj) {
        if (!sock.destroyed) sock.write(frame(1, Buffer.from(JSON.stringify(obj))));
      },
      execute(code) {
        const msgId = randomUUID();
        client.send({
          header: { msg_id: msgId, username: 'corpus', session: randomUUID(), msg_type: 'execute_request', version: '5.3', date: new Date().toISOString() },
          parent_header: {}, metadata: {}, channel: 'shell', buffers: [],
          content: { code, silent: false, store_history: false, user_expressions: {}, allow_stdin: false, stop_on_error: true },
        });
        return msgId;
      },
      waitFor(pred, ms = 60000) {
        const found = client.messages.find(pred);
        if (found) return Promise.resolve(found);
        return new Promise((res, rej) => {
          const waiter = { pred, res, timer: setTimeout(() => { waiters.splice(waiters.indexOf(waiter), 1); rej(new Error(`no such message within ${ms} ms (${client.messages.length} seen, closed: ${client.closeFrame})`)); }, ms) };
          waiters.push(waiter);
        });
      },
      sendClose(code = 1000) {
        const p = Buffer.alloc(2);
        p.writeUInt16BE(code);
        if (!sock.destroyed) sock.write(frame(8, p));
      },
      /** Sends COUNT pings of 125 bytes (each answered by a pong), waiting while the socket's buffer is full. */
      async pings(count) {
        const one = frame(9, Buffer.alloc(125, 0x70));
        const batch = Buffer.concat(Array(1000).fill(one));
        for (let sent = 0; sent < count && !sock.destroyed; sent += 1000) {
          if (!sock.write(batch)) await new Promise((r) => { sock.once('drain', r); sock.once('close', r); });
        }
      },
      reset() { sock.resetAndDestroy(); },
      end() { sock.end(); },
    };
    const onMessage = (text) => {
      let msg;
      try { msg = JSON.parse(text); } catch { return; }
      client.messages.push(msg);
      for (const w of [...waiters]) {
        if (w.pred(msg)) {
          clearTimeout(w.timer);
          waiters.splice(waiters.indexOf(w), 1);
          w.res(msg);
        }
      }
    };
    const parse = () => {
      for (;;) {
        if (buf.length < 2) return;
        const opcode = buf[0] & 15;
        let len = buf[1] & 127;
        let at = 2;
        if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); at = 4; }
        else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); at = 10; }
        if (buf.length < at + len) return;
        const payload = buf.subarray(at, at + len);
        buf = buf.subarray(at + len);
        client.bytes += len;
        if (opcode === 1) onMessage(payload.toString('utf8'));
        else if (opcode === 8) client.closeFrame = len >= 2 ? payload.readUInt16BE(0) : 1005;
      }
    };
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      if (!upgraded) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        buf = buf.subarray(end + 4);
        if (!/^HTTP\/1\.1 101/.test(head)) {
          sock.destroy();
          reject(new Error(`upgrade refused: ${head.split('\r\n')[0]}`));
          return;
        }
        upgraded = true;
        resolve(client);
      }
      parse();
    });
    sock.on('error', (err) => { if (!upgraded) reject(err); });
    sock.on('close', () => { endClosed(); if (!upgraded) reject(new Error('connection closed before the upgrade')); });
    sock.write(`GET /api/kernels/${kernelId}/channels HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
      + `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: token ${token}\r\n\r\n`);
  });
}
