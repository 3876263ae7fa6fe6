#!/usr/bin/python3
# SPDX-License-Identifier: BSL-1.0
# Headless Chromium -> our chat_server: the browser loads the chat page, connects with
# permessage-deflate, sends messages through the page's form; a Python websockets client in
# the same room sees them, and the page shows the Python client's message. Texts must be exact.
#
#   chromium_chat.py CHAT_SERVER
import asyncio
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_common import Failure, Program, check, log, main_wrapper, skip  # noqa: E402

try:
    import websockets
    import websockets.exceptions
except ImportError:
    skip("python3-websockets is not installed (apt-get install python3-websockets)")

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-quic", "--disable-extensions", "--disable-dev-shm-usage",
                  "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1"]

# Runs before the page's own scripts: keeps every WebSocket the page opens, so the test can
# read what the browser negotiated whatever the page calls its variables.
RECORD_SOCKETS = """
(() => {
  const Native = window.WebSocket;
  window.__sockets = [];
  window.WebSocket = class extends Native {
    constructor(...args) { super(...args); window.__sockets.push(this); }
  };
})();
"""

# Fills the page's name and message fields and presses its send button (examples/chat.html:
# #name, #text, #send; a page without them falls back to its first field and button).
SEND_FROM_PAGE = """
function(name, text) {
  const field = document.querySelector('#text') || document.querySelector('input, textarea');
  const button = document.querySelector('#send') || document.querySelector('button, input[type=submit]');
  if (!field || !button) return 'no text field or send button on the page';
  if (button.disabled) return 'the send button is disabled';
  const who = document.querySelector('#name');
  if (who) who.value = name;
  field.value = text;
  field.dispatchEvent(new Event('input', {bubbles: true}));
  button.click();
  return field.value === '' ? 'sent' : 'the page did not take the message (field not cleared)';
}
"""

# Each shown message as [sender name, text]; the page shows JSON {name, text} as both, other
# text as it came.
MESSAGES_IN_PAGE = """JSON.stringify([...document.querySelectorAll('li.msg')].map(li => {
  const name = li.querySelector('.name'), text = li.querySelector('.text');
  return [name ? name.textContent : '', text ? text.textContent : li.textContent];
}))"""


class Devtools:
    """A minimal DevTools protocol client over one page target."""

    def __init__(self, ws):
        self.ws = ws
        self.ids = itertools.count(1)
        self.pending = {}
        self.reader = asyncio.create_task(self._read())

    async def _read(self):
        async for raw in self.ws:
            msg = json.loads(raw)
            fut = self.pending.pop(msg.get("id"), None)
            if fut and not fut.done():
                fut.set_result(msg)

    async def call(self, method, **params):
        """Sends one command; returns its result or raises Failure with the protocol error."""
        i = next(self.ids)
        fut = asyncio.get_running_loop().create_future()
        self.pending[i] = fut
        await self.ws.send(json.dumps({"id": i, "method": method, "params": params}))
        msg = await asyncio.wait_for(fut, 15)
        if "error" in msg:
            raise Failure(f"DevTools {method}: {msg['error']}")
        return msg["result"]

    async def eval(self, expression):
        """The JSON value of `expression` in the page."""
        r = await self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                            awaitPromise=True)
        if "exceptionDetails" in r:
            raise Failure(f"page threw evaluating {expression!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    async def wait_for(self, expression, what, timeout=10.0):
        """Polls `expression` until it is truthy; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            v = await self.eval(expression)
            if v:
                return v
            if time.monotonic() > deadline:
                raise Failure(f"timed out after {timeout} s waiting for {what}")
            await asyncio.sleep(0.05)

    def close(self):
        self.reader.cancel()


class Chromium:
    """Headless Chromium with a fresh profile, ended (with all its children) on exit."""

    def __init__(self, binary):
        self.profile = tempfile.mkdtemp(prefix="corows-chromium-")
        argv = [binary] + CHROMIUM_FLAGS + [f"--user-data-dir={self.profile}", "about:blank"]
        self.log_file = open(os.path.join(self.profile, "stderr.log"), "w+b")
        # Its own process group, so its helper processes end with it.
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.log_file,
                                     stderr=self.log_file, start_new_session=True)

    def devtools_port(self, timeout=30.0):
        path = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(path):
                with open(path) as f:
                    first = f.readline().strip()
                if first.isdigit():
                    return int(first)
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise Failure(f"chromium did not open its DevTools port within {timeout} s "
                      f"(exit code {self.proc.poll()}); log: {self.log_tail()}")

    def log_tail(self):
        self.log_file.flush()
        self.log_file.seek(0)
        return self.log_file.read().decode(errors="replace")[-1500:]

    def version(self):
        try:
            return subprocess.run([self.proc.args[0], "--version"], capture_output=True, text=True,
                                  timeout=20).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"

    def close(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                pass
        self.log_file.close()
        shutil.rmtree(self.profile, ignore_errors=True)


def short(messages):
    """A readable form of a list of [name, text] with long texts cut."""
    return repr([[n, t if len(t) < 60 else t[:57] + "..."] for n, t in messages])


def page_socket_url(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
        targets = json.load(r)
    pages = [t for t in targets if t.get("type") == "page"]
    check(pages, f"chromium has no page target: {targets}")
    return pages[0]["webSocketDebuggerUrl"]


async def run(server_bin, chromium_bin):
    with Program([server_bin, "--port", "0"]) as server:
        base = f"http://127.0.0.1:{server.port}/"
        try:
            with urllib.request.urlopen(base, timeout=10) as r:
                html = r.read().decode("utf-8", errors="replace")
                ctype = r.headers.get("Content-Type", "")
        except OSError as e:
            raise Failure(f"GET {base} failed: {e}")
        check("html" in ctype, f"GET / answered Content-Type {ctype!r}")
        log(f"GET / served {len(html)} bytes of {ctype}")

        # The Python member of the room, connected before the browser.
        py = await websockets.connect(f"ws://127.0.0.1:{server.port}/chat", open_timeout=10,
                                      ping_interval=None, max_size=1 << 20)
        log(f"python client joined /chat; server answered extensions "
            f"{py.response_headers.get('Sec-WebSocket-Extensions')!r}")

        browser = Chromium(chromium_bin)
        devtools = None
        try:
            log(f"peer: {browser.version()}")
            port = browser.devtools_port()
            cdp = await websockets.connect(page_socket_url(port), max_size=None, ping_interval=None,
                                           open_timeout=10)
            devtools = Devtools(cdp)
            await devtools.call("Page.enable")
            await devtools.call("Page.addScriptToEvaluateOnNewDocument", source=RECORD_SOCKETS)
            await devtools.call("Page.navigate", url=base)
            await devtools.wait_for("window.__sockets && window.__sockets.length > 0 && "
                                    "window.__sockets[0].readyState === 1",
                                    "the page's WebSocket to open")
            url, ext = await devtools.eval("[__sockets[0].url, __sockets[0].extensions]")
            log(f"the page connected to {url}; negotiated extensions {ext!r}")
            check(url == f"ws://127.0.0.1:{server.port}/chat", f"the page connected to {url}")
            check(ext.startswith("permessage-deflate"),
                  f"chat_server did not accept the browser's permessage-deflate (extensions {ext!r})")

            me = "chromium 🌐"
            sent = ["hello from chromium ü 日本 😀",
                    "<b>not bold</b> & <script>x</script>",
                    # Compressible and well above the deflate threshold, within the chat
                    # server's 64 KiB message limit.
                    # (The page trims what it sends, so no trailing space.)
                    "long" + " lorem ipsum dolor sit amet" * 1500]
            for i, text in enumerate(sent):
                r = await devtools.eval(f"({SEND_FROM_PAGE})({json.dumps(me)}, {json.dumps(text)})")
                check(r == "sent", f"sending from the page: {r}")
                await devtools.wait_for(f"document.querySelectorAll('li.msg').length >= {i + 1}",
                                        f"message {i + 1} in the page")
            shown = json.loads(await devtools.eval(MESSAGES_IN_PAGE))
            expected = [[me, t] for t in sent]
            check(shown == expected, "the page shows " + short(shown) + ", expected " + short(expected))
            markup = await devtools.eval("document.querySelectorAll('li.msg b, li.msg script').length")
            check(markup == 0, "a message was inserted as HTML, not as text")
            log(f"the page shows its {len(sent)} messages exactly (as text, up to {len(sent[2])} "
                "characters), with the sender's name")

            for text in sent:
                raw = await asyncio.wait_for(py.recv(), 10)
                check(isinstance(raw, str), f"the python client received a binary message {raw[:40]!r}")
                got = json.loads(raw)
                check(got == {"name": me, "text": text},
                      f"the python client received {raw[:100]!r}, expected name {me!r} text {text[:60]!r}")
            log("the python client received the browser's messages exactly, in order")

            replies = [("", "plain text from python ✓ — ½"),
                       ("python", "json from python: 𝄞 \"quoted\" \\ done")]
            for name, text in replies:
                raw = json.dumps({"name": name, "text": text}) if name else text
                await py.send(raw)
                got = await asyncio.wait_for(py.recv(), 10)
                check(got == raw, f"the python client's own message came back as {got!r}")
            total = len(sent) + len(replies)
            await devtools.wait_for(f"document.querySelectorAll('li.msg').length >= {total}",
                                    "the python client's messages in the page")
            shown = json.loads(await devtools.eval(MESSAGES_IN_PAGE))
            want = expected + [list(r) for r in replies]
            check(shown == want, f"the page's last messages are {short(shown[-2:])}, expected "
                                 f"{short(want[-2:])}")
            log("the page shows the python client's plain and JSON messages exactly")
        finally:
            if devtools:
                devtools.close()
            browser.close()
        await py.close()
        check(py.close_code == 1000, f"python client closed with {py.close_code}")
        check(server.alive(), "chat_server exited")


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} CHAT_SERVER")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        skip("chromium is not installed (apt-get install chromium)")
    log(f"peers: {chromium}, python websockets {websockets.__version__}")

    async def bounded():
        try:
            await asyncio.wait_for(run(sys.argv[1], chromium), 90)
        except asyncio.TimeoutError:
            raise Failure("the test did not finish within 90 s")
        except websockets.exceptions.WebSocketException as e:
            raise Failure(f"websockets reported {type(e).__name__}: {e}")
        except OSError as e:
            raise Failure(f"connection failed: {e}")

    main_wrapper(lambda: asyncio.run(bounded()))


if __name__ == "__main__":
    main()
