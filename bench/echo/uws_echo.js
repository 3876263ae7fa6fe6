// SPDX-License-Identifier: BSL-1.0
// uWebSockets.js echo server for the echo benchmark (npm `uwebsockets`, a repack of
// uWebSockets.js' prebuilt addons; its `source_commit` names the uWebSockets.js commit): one
// thread, permessage-deflate when started with --deflate. uWS sets TCP_NODELAY itself. wss
// (uWS.SSLApp) with --cert and --key.
//
//   node uws_echo.js PORT [--deflate [--dedicated]] [--cert FILE --key FILE]
//   node uws_echo.js --check      (only says whether the addon loads)
//
// --dedicated gives each connection its own deflate and inflate streams with context takeover
// both ways (DEDICATED_COMPRESSOR | DEDICATED_DECOMPRESSOR); without it uWS shares one of each
// per thread (its default), so it asks clients for client_no_context_takeover and sends without
// context takeover itself. The benchmark runs both and counts the cheaper.
//
// Exits with status 3 and a message on stderr if the addon does not load on this machine.
'use strict';
let uWS;
try {
  uWS = require('uwebsockets');
} catch (e) {
  // The package's own message blames the Node version; the addon's loader error says why.
  let why = String(e.message).split('\n')[0];
  try {
    const dir = require('path').join(__dirname, 'node_modules', 'uwebsockets');
    require(`${dir}/uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
  } catch (inner) {
    why = String(inner.message).split('\n')[0].replace(/ \(required by .*\)$/, '');
  }
  console.error(`uws: the addon does not load: ${why}`);
  process.exit(3);
}

if (process.argv.includes('--check')) {
  console.log('uws: the addon loads');
  process.exit(0);
}

const port = Number(process.argv[2]);
const deflate = process.argv.includes('--deflate');
const dedicated = process.argv.includes('--dedicated');
const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const cert = arg('--cert');
const key = arg('--key');
(cert && key ? uWS.SSLApp({ cert_file_name: cert, key_file_name: key }) : uWS.App())
  .ws('/*', {
    compression: !deflate ? uWS.DISABLED
      : dedicated ? uWS.DEDICATED_COMPRESSOR | uWS.DEDICATED_DECOMPRESSOR
      : uWS.SHARED_COMPRESSOR,
    maxPayloadLength: 64 * 1024 * 1024,
    maxBackpressure: 64 * 1024 * 1024,
    idleTimeout: 0,
    message: (ws, message, isBinary) => {
      ws.send(message, isBinary, deflate);
    },
  })
  .listen('127.0.0.1', port, (token) => {
    if (!token) {
      console.error(`uws: cannot listen on 127.0.0.1:${port}`);
      process.exit(1);
    }
    console.log(`listening on 127.0.0.1:${port}`);
  });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
