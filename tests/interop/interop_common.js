// SPDX-License-Identifier: BSL-1.0
// Shared by the Node interop scripts: payloads, our example programs, reporting.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');

/** Meson's exit code for a skipped test. */
const SKIP = 77;

/** Message sizes that cross every length-encoding boundary of RFC 6455 §5.2. */
const ECHO_SIZES = [0, 1, 125, 126, 65535, 65536, 1 << 20, 8 << 20];

/** Lines sent through our echo_client. */
const LINE_SIZES = [0, 1, 125, 126, 127, 1000, 65535, 65536, 65537, 1 << 20];

/** A check that did not hold. */
class Failure extends Error {}

/** Throws Failure(what) unless cond. */
function check(cond, what) {
  if (!cond) throw new Failure(what);
}

/** Prints one progress line. */
function log(...args) {
  console.log(...args);
}

/** The ws module, or a skip when it cannot be installed here. */
function requireWs() {
  try {
    return require('ws');
  } catch (e) {
    log(`SKIP: the ws module is not installed (npm install in ${__dirname}): ${e.message}`);
    process.exit(SKIP);
  }
}

/** A deterministic generator of 32-bit values (mulberry32). */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** Valid UTF-8 text of exactly `size` bytes with 2-, 3- and 4-byte characters. */
function textPayload(size, seed) {
  const r = rng(seed);
  const words = ['frame', 'masque', 'naïve', 'Grüße', '€uro', '日本語', '😀ok', 'deflate',
    'window', 'ключ', 'payload', 'ω', 'x'];
  const parts = [];
  let n = 0;
  while (n < size) {
    const chunk = [];
    for (let i = 0; i < 3000; i++) chunk.push(words[r() % words.length]);
    const buf = Buffer.from(chunk.join(' '));
    for (let k = 0; k < 8 && n < size; k++) {
      const tag = Buffer.from(String(r()));
      parts.push(buf, tag);
      n += buf.length + tag.length;
    }
  }
  let data = Buffer.concat(parts).subarray(0, size);
  // Cut back to a character boundary, then pad with ASCII to the exact size.
  let end = data.length;
  while (end > 0 && (data[end - 1] & 0xc0) === 0x80) end--;
  if (end > 0 && data[end - 1] >= 0xc0) end--;
  data = Buffer.concat([data.subarray(0, end), Buffer.alloc(size - end, 'a')]);
  const s = data.toString('utf8');
  if (Buffer.byteLength(s) !== size) throw new Error('textPayload: bad size');
  return s;
}

/** `size` bytes: alternating 4 KiB blocks of noise and of one repeated byte. */
function binaryPayload(size, seed) {
  const r = rng(seed);
  const out = Buffer.alloc(size);
  for (let off = 0, block = 0; off < size; off += 4096, block++) {
    const end = Math.min(size, off + 4096);
    if (block % 2 === 0) for (let i = off; i < end; i++) out[i] = r() & 0xff;
    else out.fill(r() & 0xff, off, end);
  }
  return out;
}

/** The lines our echo_client sends: every boundary size, then 200 short ones. */
function echoLines() {
  const lines = LINE_SIZES.map((n, i) => textPayload(n, 1000 + i));
  for (let i = 0; i < 200; i++) lines.push(`message ${i} — ü ${'z'.repeat(i % 40)}`);
  return lines;
}

/** Fails unless `program` is an executable file. */
function checkExecutable(program) {
  try {
    fs.accessSync(program, fs.constants.X_OK);
  } catch (e) {
    throw new Failure(`${program} is missing or not executable (build it first)`);
  }
}

/** Starts `argv` and resolves with {child, port} once it prints `listening on 127.0.0.1:PORT`. */
function startProgram(argv, timeoutMs = 10000) {
  checkExecutable(argv[0]);
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Failure(`${argv.join(' ')} did not print its port within ${timeoutMs} ms; ` +
        `stdout ${JSON.stringify(out)}, stderr ${JSON.stringify(err)}`));
    }, timeoutMs);
    child.stderr.on('data', (d) => { err += d; });
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on 127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, port: Number(m[1]), stderr: () => err });
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Failure(`${argv.join(' ')} exited with ${code} before listening; stderr ${err}`));
    });
  });
}

/** Runs our echo_client on `url` with `lines` on stdin; resolves with {code, lines, stderr}. */
function runEchoClient(client, url, deflate, lines, timeoutMs) {
  checkExecutable(client);
  const argv = ['--url', url].concat(deflate ? ['--deflate'] : []);
  return new Promise((resolve, reject) => {
    const child = spawn(client, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    let err = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Failure(`echo_client did not finish within ${timeoutMs} ms; stderr ${err.slice(-1000)}`));
    }, timeoutMs);
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => { err += d; });
    child.stdin.on('error', () => {}); // a client that died early is reported by its exit code
    child.on('close', (code) => {
      clearTimeout(timer);
      const got = Buffer.concat(out).toString('utf8').split('\n');
      if (got.length && got[got.length - 1] === '') got.pop();
      resolve({ code, lines: got, stderr: err.slice(-2000) });
    });
    child.stdin.end(lines.map((l) => l + '\n').join(''));
  });
}

/** Fails with the first difference between sent and echoed lines. */
function compareLines(sent, got) {
  check(got.length === sent.length, `echo_client printed ${got.length} lines, expected ${sent.length}`);
  for (let i = 0; i < sent.length; i++) {
    check(sent[i] === got[i], `line ${i} (${Buffer.byteLength(sent[i])} bytes) came back different ` +
      `(${Buffer.byteLength(got[i])} bytes)`);
  }
}

/** The parameters of a permessage-deflate header element, as a Set of "name" / "name=value". */
function deflateParams(header) {
  const parts = header.split(';').map((p) => p.trim());
  check(parts[0] === 'permessage-deflate', `negotiated ${JSON.stringify(header)}, not permessage-deflate`);
  return new Set(parts.slice(1));
}

/** Runs `fn` with an overall limit; prints PASS or FAIL and exits. */
function main(fn, limitMs) {
  const timer = setTimeout(() => {
    log(`FAIL: did not finish within ${limitMs} ms`);
    process.exit(1);
  }, limitMs);
  fn().then(() => {
    clearTimeout(timer);
    log('PASS');
    process.exit(0);
  }, (e) => {
    log('FAIL:', e instanceof Failure ? e.message : e.stack || String(e));
    process.exit(1);
  });
}

module.exports = {
  SKIP, ECHO_SIZES, LINE_SIZES, Failure, check, log, requireWs, textPayload, binaryPayload,
  echoLines, startProgram, runEchoClient, compareLines, deflateParams, main,
};
