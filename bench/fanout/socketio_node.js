// SPDX-License-Identifier: BSL-1.0
// One Socket.IO 4 node of the fan-out benchmark: WebSocket transport only, every client in
// room "bench", and every "msg" a client emits sent to the whole room (the sender included),
// on every node through @socket.io/redis-adapter: what corows' chat_server does with --redis.
//
//   node socketio_node.js PORT [REDIS_HOST:PORT]     (without Redis: this node alone)
//   node socketio_node.js --check                    (exits 0 if the packages load)
//
// Prints "listening on 127.0.0.1:PORT" once clients can connect, after the adapter's Redis
// connections are up.
'use strict';
const http = require('http');

let modules;
try {
  modules = {
    Server: require('socket.io').Server,
    createAdapter: require('@socket.io/redis-adapter').createAdapter,
    createClient: require('redis').createClient,
  };
} catch (e) {
  console.error(`socketio_node: ${e.message.split('\n')[0]} (run bench/fanout/setup_peers.sh)`);
  process.exit(1);
}
if (process.argv[2] === '--check') process.exit(0);

async function main() {
  const port = Number(process.argv[2]);
  const redis = process.argv[3];
  if (!Number.isInteger(port)) throw new Error('usage: socketio_node.js PORT [REDIS_HOST:PORT]');
  // Polling off: the load generator speaks the WebSocket transport only, as corows' clients
  // do. Compression stays off (Socket.IO's default); the page is not served.
  const io = new modules.Server({ transports: ['websocket'], serveClient: false, perMessageDeflate: false });
  if (redis) {
    const pub = modules.createClient({ url: `redis://${redis}` });
    const sub = pub.duplicate();
    for (const c of [pub, sub]) c.on('error', (e) => console.error(`socketio_node: redis: ${e.message}`));
    await Promise.all([pub.connect(), sub.connect()]);
    io.adapter(modules.createAdapter(pub, sub));
  }
  io.on('connection', (socket) => {
    socket.join('bench');
    socket.on('msg', (text) => io.to('bench').emit('msg', text));
  });
  const server = http.createServer();
  io.attach(server);
  // A thousand clients connect in a few hundred milliseconds.
  server.listen({ port, host: '127.0.0.1', backlog: 4096 }, () => console.log(`listening on 127.0.0.1:${port}`));
  // Exit at once on SIGTERM: there is nothing to drain in a benchmark.
  process.on('SIGTERM', () => process.exit(0));
}

main().catch((e) => {
  console.error(`socketio_node: ${e.message}`);
  process.exit(1);
});
