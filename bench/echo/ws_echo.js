// SPDX-License-Identifier: BSL-1.0
// Node `ws` (8.x) echo server for the echo benchmark: one process, TCP_NODELAY on (ws sets
// it), permessage-deflate when started with --deflate, wss (Node's https server) with --cert
// and --key.
//
//   node ws_echo.js PORT [--deflate] [--cert FILE --key FILE]
'use strict';
const fs = require('fs');
const https = require('https');
const { WebSocketServer } = require('ws');

const port = Number(process.argv[2]);
const deflate = process.argv.includes('--deflate');
const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const cert = arg('--cert');
const key = arg('--key');
const tls = cert && key ? https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }) : null;
const wss = new WebSocketServer({
  ...(tls ? { server: tls } : { host: '127.0.0.1', port, backlog: 4096 }),
  maxPayload: 64 * 1024 * 1024,
  // ws compresses only messages of at least `threshold` bytes (default 1024); the library
  // defaults are what a user gets, so they stay.
  perMessageDeflate: deflate,
  clientTracking: false,
});
wss.on('connection', (ws) => {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
  ws.on('error', () => {});
});
if (tls) tls.listen(port, '127.0.0.1', 4096, () => console.log(`listening on 127.0.0.1:${port}`));
else wss.on('listening', () => console.log(`listening on 127.0.0.1:${port}`));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
