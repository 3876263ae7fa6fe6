// SPDX-License-Identifier: BSL-1.0
// Node ws client -> our echo_server: every size, text and binary, whole and fragmented, with
// and without permessage-deflate; echoes must be byte-exact.
//
//   node node_client.js ECHO_SERVER CONFIG     (CONFIG: one of CONFIGS below)
'use strict';

const c = require('./interop_common.js');
const WebSocket = c.requireWs();

// name -> server flags, ws perMessageDeflate option, parameters the response must carry.
const CONFIGS = {
  plain: { flags: [], pmd: false, mustHave: null },
  deflate_default: { flags: ['--deflate'], pmd: { threshold: 0 }, mustHave: [] },
  server_no_context_takeover: { flags: ['--deflate'],
    pmd: { serverNoContextTakeover: true, threshold: 0 }, mustHave: ['server_no_context_takeover'] },
  client_no_context_takeover: { flags: ['--deflate'],
    pmd: { clientNoContextTakeover: true, threshold: 0 }, mustHave: [] },
  window_bits: { flags: ['--deflate'],
    pmd: { serverMaxWindowBits: 10, clientMaxWindowBits: 9, threshold: 0 },
    mustHave: ['server_max_window_bits=10'] },
  window_bits_8: { flags: ['--deflate'],
    pmd: { serverMaxWindowBits: 8, clientMaxWindowBits: 8, serverNoContextTakeover: true, threshold: 0 },
    mustHave: ['server_max_window_bits=8', 'server_no_context_takeover'] },
};

/** Messages as they arrive, awaited one at a time. */
class Inbox {
  constructor(ws) {
    this.queue = [];
    this.waiting = null;
    ws.on('message', (data, isBinary) => {
      const m = { data, isBinary };
      if (this.waiting) {
        const w = this.waiting;
        this.waiting = null;
        w(m);
      } else {
        this.queue.push(m);
      }
    });
  }

  next() {
    if (this.queue.length) return Promise.resolve(this.queue.shift());
    return new Promise((resolve) => { this.waiting = resolve; });
  }
}

function same(got, payload, what) {
  const isText = typeof payload === 'string';
  c.check(got.isBinary === !isText, `${what}: came back as ${got.isBinary ? 'binary' : 'text'}`);
  const want = isText ? Buffer.from(payload) : payload;
  c.check(Buffer.compare(got.data, want) === 0,
    `${what}: echo differs (${got.data.length} bytes back for ${want.length})`);
}

async function run(serverBin, config) {
  const cfg = CONFIGS[config];
  const server = await c.startProgram([serverBin, '--port', '0'].concat(cfg.flags));
  try {
    const url = `ws://127.0.0.1:${server.port}/`;
    const ws = new WebSocket(url, { perMessageDeflate: cfg.pmd, maxPayload: 64 << 20, handshakeTimeout: 10000 });
    let answer;
    ws.on('upgrade', (res) => { answer = res.headers['sec-websocket-extensions']; });
    const inbox = new Inbox(ws);
    const closed = new Promise((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise((resolve, reject) => {
      ws.on('open', resolve);
      ws.on('error', (e) => reject(new c.Failure(`ws: ${e.message}`)));
    });
    c.log(`server answered Sec-WebSocket-Extensions: ${JSON.stringify(answer)}; ws.extensions ${JSON.stringify(ws.extensions)}`);
    if (cfg.mustHave === null) {
      c.check(answer === undefined, `no extension offered, but the server answered ${answer}`);
    } else {
      c.check(answer !== undefined, 'permessage-deflate was offered and the server declined it');
      const params = c.deflateParams(answer);
      for (const p of cfg.mustHave) c.check(params.has(p), `answer ${answer} lacks ${p}`);
    }
    const sock = ws._socket;
    const read0 = sock.bytesRead;
    let total = 0;
    for (let i = 0; i < c.ECHO_SIZES.length; i++) {
      const n = c.ECHO_SIZES[i];
      for (const payload of [c.textPayload(n, i), c.binaryPayload(n, 100 + i)]) {
        ws.send(payload, { binary: typeof payload !== 'string' });
        same(await inbox.next(), payload, `${typeof payload === 'string' ? 'text' : 'binary'} message of ${n} bytes`);
        total += n;
      }
    }
    const wire = sock.bytesRead - read0;
    c.log(`echoed text and binary messages of sizes ${c.ECHO_SIZES.join(', ')}: ${total} bytes, byte-exact; ` +
      `${wire} bytes received on the socket`);
    if (cfg.mustHave !== null) {
      // The payloads are about half compressible: the echoes must have come back compressed.
      c.check(wire < total * 0.8, `echoes took ${wire} bytes on the wire for ${total} bytes: not compressed`);
    } else {
      c.check(wire >= total, `only ${wire} bytes on the wire for ${total} bytes of uncompressed echoes`);
    }
    // Fragmented messages: 16 frames each (compressed frame by frame when deflate is on).
    for (const payload of [c.textPayload(1 << 20, 7), c.binaryPayload(1 << 20, 8)]) {
      const bytes = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
      const step = 65536;
      for (let off = 0; off < bytes.length; off += step) {
        ws.send(bytes.subarray(off, off + step),
          { binary: Buffer.isBuffer(payload), fin: off + step >= bytes.length });
      }
      same(await inbox.next(), payload, `fragmented ${Buffer.isBuffer(payload) ? 'binary' : 'text'} message of 1 MiB`);
    }
    c.log('echoed fragmented text and binary messages of 1 MiB (16 frames each), byte-exact');
    const small = [];
    for (let i = 0; i < 500; i++) small.push(`burst ${i} ${'é'.repeat(i % 50)}`);
    for (const m of small) ws.send(m);
    for (const m of small) same(await inbox.next(), m, `burst message ${JSON.stringify(m)}`);
    c.log('echoed a burst of 500 small text messages in order');
    await new Promise((resolve) => { ws.once('pong', resolve); ws.ping(Buffer.from('interop')); });
    c.log('ping answered with a pong');
    ws.close(1000, 'done');
    const code = await closed;
    c.check(code === 1000, `close code ${code}, expected 1000`);
    c.log('closed cleanly with 1000');
    c.check(server.child.exitCode === null, 'echo_server exited after the connection closed');
  } catch (e) {
    if (server.stderr().trim()) c.log(`stderr of echo_server: ${server.stderr().trim().slice(-1500)}`);
    throw e;
  } finally {
    server.child.kill();
  }
}

if (process.argv.length !== 4 || !(process.argv[3] in CONFIGS)) {
  console.error(`usage: node node_client.js ECHO_SERVER {${Object.keys(CONFIGS).join(',')}}`);
  process.exit(2);
}
c.log(`peer: node ${process.version}, ws ${require('ws/package.json').version}, config ${process.argv[3]}`);
c.main(() => run(process.argv[2], process.argv[3]), 60000);
