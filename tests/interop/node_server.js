// SPDX-License-Identifier: BSL-1.0
// Our echo_client -> a Node ws echo server: lines of every size come back exactly, with and
// without permessage-deflate, under each compression setting the server can impose.
//
//   node node_server.js ECHO_CLIENT CONFIG     (CONFIG: one of CONFIGS below)
'use strict';

const c = require('./interop_common.js');
const WebSocket = c.requireWs();

// name -> echo_client --deflate?, ws server perMessageDeflate option, parameters answered.
const CONFIGS = {
  plain: { deflate: false, pmd: false, mustHave: null },
  declined: { deflate: true, pmd: false, mustHave: null },
  deflate_default: { deflate: true, pmd: { threshold: 0 }, mustHave: [] },
  server_no_context_takeover: { deflate: true, pmd: { serverNoContextTakeover: true, threshold: 0 },
    mustHave: ['server_no_context_takeover'] },
  server_max_window_bits: { deflate: true, pmd: { serverMaxWindowBits: 10, threshold: 0 },
    mustHave: ['server_max_window_bits=10'] },
  client_no_context_takeover: { deflate: true, pmd: { clientNoContextTakeover: true, threshold: 0 },
    mustHave: ['client_no_context_takeover'] },
  client_max_window_bits: { deflate: true, pmd: { clientMaxWindowBits: 9, threshold: 0 },
    mustHave: ['client_max_window_bits=9'] },
  client_max_window_bits_8: { deflate: true, pmd: { clientMaxWindowBits: 8, threshold: 0 },
    mustHave: ['client_max_window_bits=8'] },
};

async function run(clientBin, config) {
  const cfg = CONFIGS[config];
  const wss = new WebSocket.WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: cfg.pmd,
    maxPayload: 64 << 20 });
  await new Promise((resolve) => wss.on('listening', resolve));
  const seen = [];
  let answer;
  wss.on('headers', (headers) => {
    const h = headers.find((x) => /^sec-websocket-extensions:/i.test(x));
    answer = h ? h.replace(/^[^:]*:\s*/, '') : undefined;
  });
  wss.on('connection', (ws, req) => {
    const conn = { offer: req.headers['sec-websocket-extensions'], socket: req.socket, received: 0 };
    seen.push(conn);
    ws.on('message', (data, isBinary) => {
      conn.received += data.length;
      ws.send(data, { binary: isBinary });
    });
  });
  try {
    const lines = c.echoLines();
    const url = `ws://127.0.0.1:${wss.address().port}/`;
    const r = await c.runEchoClient(clientBin, url, cfg.deflate, lines, 40000);
    c.check(r.code === 0, `echo_client exited with ${r.code}; stderr: ${r.stderr}`);
    c.check(seen.length === 1, `the server saw ${seen.length} connections, expected 1`);
    const conn = seen[0];
    c.log(`echo_client offered ${JSON.stringify(conn.offer)}; server answered ${JSON.stringify(answer)}`);
    if (cfg.deflate) {
      c.check(conn.offer !== undefined && conn.offer.startsWith('permessage-deflate'),
        `echo_client --deflate offered ${conn.offer}`);
    } else {
      c.check(conn.offer === undefined, `echo_client without --deflate offered ${conn.offer}`);
    }
    if (cfg.mustHave === null) {
      c.check(answer === undefined, `expected no extension, the server answered ${answer}`);
    } else {
      c.check(answer !== undefined, 'the server declined the offer');
      const params = c.deflateParams(answer);
      for (const p of cfg.mustHave) c.check(params.has(p), `answer ${answer} lacks ${p}`);
    }
    c.compareLines(lines, r.lines);
    const total = lines.reduce((n, l) => n + Buffer.byteLength(l), 0);
    c.check(conn.received === total, `the server received ${conn.received} payload bytes, expected ${total}`);
    const wire = conn.socket.bytesRead;
    c.log(`${lines.length} lines (${total} bytes) echoed exactly; the server read ${wire} bytes on the socket`);
    if (cfg.mustHave !== null) {
      c.check(wire < total * 0.8, `echo_client sent ${wire} bytes for ${total} bytes of text: not compressed`);
    } else {
      c.check(wire >= total, `only ${wire} bytes on the wire for ${total} bytes of uncompressed text`);
    }
  } finally {
    wss.close();
    for (const ws of wss.clients) ws.terminate();
  }
}

if (process.argv.length !== 4 || !(process.argv[3] in CONFIGS)) {
  console.error(`usage: node node_server.js ECHO_CLIENT {${Object.keys(CONFIGS).join(',')}}`);
  process.exit(2);
}
c.log(`peer: node ${process.version}, ws ${require('ws/package.json').version}, config ${process.argv[3]}`);
c.main(() => run(process.argv[2], process.argv[3]), 60000);
