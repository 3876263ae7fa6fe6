// SPDX-License-Identifier: BSL-1.0
// Node ws client -> final_block_echo: the server's compressed messages end in a BFINAL=1
// block (RFC 7692 §7.2.3.4). ws must inflate every one of many messages in a row.
//
//   node final_block_node.js FINAL_BLOCK_ECHO CONFIG
'use strict';

const c = require('./interop_common.js');
const WebSocket = c.requireWs();

const CONFIGS = {
  final_block: { flags: [], pmd: { threshold: 0 } },
  final_block_both_no_context: { flags: [], pmd: { threshold: 0, clientNoContextTakeover: true } },
  flush_form: { flags: ['--zlib'], pmd: { threshold: 0 } },
};

const SIZES = [1, 20, 100, 500, 1024, 1024, 3000, 8000, 16384, 32768, 40000, 100000];

function jsonMessage(next, size) {
  let s = '';
  while (s.length < size) s += `{"id":${next() % 1000000},"name":"user${next() % 1000}","ok":${next() % 2 ? 'true' : 'false'}},`;
  return s.slice(0, size);
}

async function run(serverBin, config) {
  const cfg = CONFIGS[config];
  const server = await c.startProgram([serverBin, '--port', '0'].concat(cfg.flags));
  try {
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/`,
      { perMessageDeflate: cfg.pmd, maxPayload: 64 << 20, handshakeTimeout: 10000 });
    let answer;
    ws.on('upgrade', (res) => { answer = res.headers['sec-websocket-extensions']; });
    const queue = [];
    let waiting = null;
    ws.on('message', (data, isBinary) => {
      const m = { data, isBinary };
      if (waiting) { const w = waiting; waiting = null; w(m); } else queue.push(m);
    });
    const next = () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => { waiting = r; }));
    const closed = new Promise((resolve) => ws.on('close', (code) => resolve(code)));
    await new Promise((resolve, reject) => {
      ws.on('open', resolve);
      ws.on('error', (e) => reject(new c.Failure(`ws: ${e.message}`)));
    });
    c.log(`server answered Sec-WebSocket-Extensions: ${JSON.stringify(answer)}`);
    c.check(answer !== undefined && c.deflateParams(answer).has('server_no_context_takeover'),
      `the server must announce server_no_context_takeover, answered ${answer}`);
    let state = 42;
    const rnd = () => { state = (state * 1103515245 + 12345) >>> 0; return state >>> 8; };
    let count = 0;
    for (let round = 0; round < 60; round++) {
      for (const size of SIZES) {
        const m = jsonMessage(rnd, size);
        const binary = round % 2 === 1;
        ws.send(binary ? Buffer.from(m) : m, { binary });
        const got = await next();
        c.check(got.isBinary === binary && Buffer.compare(got.data, Buffer.from(m)) === 0,
          `message ${count} of ${size} bytes: echo differs`);
        count++;
      }
    }
    const burst = [];
    for (let i = 0; i < 300; i++) burst.push(jsonMessage(rnd, 1 + (rnd() % 2000)));
    for (const m of burst) ws.send(m);
    for (const m of burst) {
      const got = await next();
      c.check(Buffer.compare(got.data, Buffer.from(m)) === 0, 'burst echo differs');
    }
    count += burst.length;
    c.log(`${count} messages echoed byte-exact`);
    ws.close(1000);
    const code = await closed;
    c.check(code === 1000, `close code ${code}, expected 1000`);
  } finally {
    server.child.kill();
  }
}

if (process.argv.length !== 4 || !(process.argv[3] in CONFIGS)) {
  console.error(`usage: node final_block_node.js FINAL_BLOCK_ECHO {${Object.keys(CONFIGS).join(',')}}`);
  process.exit(2);
}
c.main(() => run(process.argv[2], process.argv[3]), 80000);
