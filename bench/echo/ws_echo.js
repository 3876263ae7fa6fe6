// Node `ws` (8.x) echo server for the echo benchmark: one process, TCP_NODELAY on (ws sets
// it), permessage-deflate when started with --deflate.
//
//   node ws_echo.js PORT [--deflate]
'use strict';
const { WebSocketServer } = require('ws');

const port = Number(process.argv[2]);
const deflate = process.argv.includes('--deflate');
const wss = new WebSocketServer({
  host: '127.0.0.1',
  port,
  backlog: 4096,
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
wss.on('listening', () => console.log(`listening on 127.0.0.1:${port}`));
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
