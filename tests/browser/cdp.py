"""A small client of the Chrome DevTools Protocol for the browser tests (stdlib only).

Chromium runs headless with --remote-debugging-pipe: it reads commands on its file
descriptor 3 and writes replies and events on its descriptor 4, each message one JSON
object followed by a NUL byte. One Browser is one Chromium process (in its own process
group, with a throw-away profile); a Page is one tab attached with flatten=true, so every
message for it carries its sessionId.

A Page records what the tests assert about: every request the page started
(Network.requestWillBeSent) and every error it reported (console.error and
console.assert, uncaught exceptions, Log entries of level error). Requests to the
network are also blocked, so a page that tries one cannot reach anything.

Every wait has a deadline; a Browser is killed (its whole process group) on close(), at
interpreter exit, and when a wait fails, so a test never hangs on a browser."""
import atexit
import base64
import fcntl
import json
import os
import select
import shutil
import signal
import struct
import sys
import tempfile
import time

SKIP = 77  # ctest's SKIP_RETURN_CODE of ana_add_py_test
BLOCKED = ["http://*", "https://*", "ws://*", "wss://*", "ftp://*"]


class CdpError(Exception):
    pass


def chromium_path():
    """The Chromium to run: $ANA_CHROMIUM, else chromium (Debian) on PATH, else None."""
    env = os.environ.get("ANA_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        p = shutil.which(name)
        if p:
            return p
    return None


def require_chromium():
    """The Chromium path, or exit 77 (skipped) with a message saying how to get one. Under
    CI (CI=true), where scripts/setup --tests installs it, a missing Chromium is a failure,
    not a skip, so the browser tests cannot silently stop running."""
    p = chromium_path()
    if p is None and os.environ.get("CI") == "true":
        print("browser tests: no chromium found under CI (scripts/setup --tests installs it)",
              file=sys.stderr)
        sys.exit(1)
    if p is None:
        print("browser tests skipped: no chromium found (install the Debian package "
              "`chromium` — scripts/setup does — or set ANA_CHROMIUM to its path)",
              file=sys.stderr)
        sys.exit(SKIP)
    return p


def _high_fd(fd):
    """fd moved to a number >= 10 (close-on-exec), so that it is neither 3 nor 4 and the
    child's dup2 onto 3 and 4 cannot be a no-op that keeps close-on-exec set."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    def __init__(self, width=1280, height=800, timeout=30.0):
        self.width, self.height, self.timeout = width, height, timeout
        self.pid = self.profile = None
        exe = require_chromium()
        self.profile = tempfile.mkdtemp(prefix="ana-chromium-")
        self.log_path = os.path.join(self.profile, "chromium.log")
        self._next_id = 0
        self._buf = b""
        self.replies = {}
        self.events = []
        cmd_r, cmd_w = (_high_fd(f) for f in os.pipe())
        rep_r, rep_w = (_high_fd(f) for f in os.pipe())
        argv = [exe, "--headless=new", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
                "--no-first-run", "--no-default-browser-check",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-extensions", "--disable-dev-shm-usage",
                "--mute-audio", "--hide-scrollbars", "--host-resolver-rules=MAP * ~NOTFOUND",
                "--window-size=%d,%d" % (width, height), "about:blank"]
        actions = [(os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 1, self.log_path, os.O_WRONLY | os.O_CREAT, 0o644),
                   (os.POSIX_SPAWN_DUP2, 1, 2),
                   (os.POSIX_SPAWN_DUP2, cmd_r, 3),
                   (os.POSIX_SPAWN_DUP2, rep_w, 4)]
        try:
            # HOME too: Chromium's crash handler keeps its database under ~/.config
            env = dict(os.environ, HOME=self.profile, XDG_CONFIG_HOME=self.profile,
                       XDG_CACHE_HOME=self.profile)
            self.pid = os.posix_spawn(argv[0], argv, env, file_actions=actions,
                                      setsid=True)
        finally:
            os.close(cmd_r)
            os.close(rep_w)
        self._w, self._r = cmd_w, rep_r
        atexit.register(self.close)
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            # a test runner's SIGTERM still ends in close(), through SystemExit
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
        self.send("Target.getTargets")  # the first reply says the pipe works

    # --- the pipe ---------------------------------------------------------------------

    def log_tail(self, n=2000):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def _fail(self, why):
        tail = self.log_tail()
        self.close()
        raise CdpError(why + ("\n--- chromium's output ---\n" + tail if tail else ""))

    def _pump(self, deadline):
        """Reads what Chromium wrote, waiting at most until deadline; files replies by id
        and appends events. False when the deadline passed with nothing to read."""
        if self._r is None:
            raise CdpError("the browser is closed")
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select([self._r], [], [], left)
        if not ready:
            return False
        data = os.read(self._r, 1 << 20)
        if not data:
            self._fail("chromium closed its DevTools pipe (it exited)")
        self._buf += data
        while b"\0" in self._buf:
            raw, self._buf = self._buf.split(b"\0", 1)
            msg = json.loads(raw)
            if "id" in msg:
                self.replies[msg["id"]] = msg
            else:
                self.events.append(msg)
        return True

    def send(self, method, params=None, session=None, timeout=None):
        """Sends one command and returns its result; CdpError on an error reply or when
        no reply comes within timeout seconds."""
        if self._w is None:
            raise CdpError("the browser is closed")
        self._next_id += 1
        mid = self._next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        try:
            os.write(self._w, json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:
            self._fail("chromium closed its DevTools pipe (it exited)")
        deadline = time.monotonic() + (timeout or self.timeout)
        while mid not in self.replies:
            if not self._pump(deadline):
                self._fail("no reply to %s within %.0f s" % (method, timeout or self.timeout))
        reply = self.replies.pop(mid)
        if "error" in reply:
            raise CdpError("%s: %s" % (method, reply["error"]))
        return reply.get("result", {})

    def wait_event(self, method, session=None, pred=None, timeout=None, since=0):
        """The first event named method (of session, satisfying pred) at or after index
        since of self.events; CdpError after timeout seconds."""
        deadline = time.monotonic() + (timeout or self.timeout)
        i = since
        while True:
            while i < len(self.events):
                e = self.events[i]
                i += 1
                if e.get("method") == method and (session is None or e.get("sessionId") == session) \
                        and (pred is None or pred(e.get("params", {}))):
                    return e.get("params", {})
            if not self._pump(deadline):
                self._fail("no %s event within %.0f s" % (method, timeout or self.timeout))

    def drain(self, seconds=0.0):
        """Reads the events already sent (and those sent within seconds)."""
        deadline = time.monotonic() + seconds
        while self._pump(max(deadline, time.monotonic() + 0.001)):
            pass

    def close(self):
        for fd in (getattr(self, "_w", None), getattr(self, "_r", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._w = self._r = None
        if self.pid:
            try:
                os.killpg(self.pid, signal.SIGKILL)  # its renderers and helpers too
            except ProcessLookupError:
                pass
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = None
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)
            self.profile = None

    def new_page(self):
        return Page(self)


class Page:
    """One tab. Records requests and errors from the moment it is created."""

    def __init__(self, browser):
        self.b = browser
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.send("Target.attachToTarget",
                                    {"targetId": target, "flatten": True})["sessionId"]
        self._first_event = len(browser.events)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(domain + ".enable")
        self.send("Network.setBlockedURLs", {"urls": BLOCKED})
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": browser.width, "height": browser.height,
                   "deviceScaleFactor": 1, "mobile": False})

    def send(self, method, params=None, timeout=None):
        return self.b.send(method, params, self.session, timeout)

    def _mine(self, method):
        return [e.get("params", {}) for e in self.b.events[self._first_event:]
                if e.get("sessionId") == self.session and e.get("method") == method]

    # --- what the page did ------------------------------------------------------------

    def requests(self):
        """URLs of every request the page started, in order."""
        self.b.drain()
        return [p["request"]["url"] for p in self._mine("Network.requestWillBeSent")]

    def errors(self):
        """Every error the page reported: console.error/assert, uncaught exceptions and
        Log entries of level error, as readable strings."""
        self.b.drain()
        out = []
        for p in self._mine("Runtime.consoleAPICalled"):
            if p.get("type") in ("error", "assert"):
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"])
                out.append("console.%s: %s" % (p["type"], args))
        for p in self._mine("Runtime.exceptionThrown"):
            d = p["exceptionDetails"]
            out.append("exception: %s %s" % (d.get("text", ""),
                                             d.get("exception", {}).get("description", "")))
        for p in self._mine("Log.entryAdded"):
            if p["entry"].get("level") == "error":
                out.append("log: %s (%s)" % (p["entry"].get("text"), p["entry"].get("url", "")))
        return out

    # --- driving it ---------------------------------------------------------------------

    def goto(self, url, timeout=30.0):
        """Navigates and waits for the load event."""
        since = len(self.b.events)
        r = self.send("Page.navigate", {"url": url})
        if r.get("errorText"):
            raise CdpError("navigating to %s: %s" % (url, r["errorText"]))
        self.b.wait_event("Page.loadEventFired", self.session, timeout=timeout, since=since)

    def eval(self, expr):
        """The value of a JavaScript expression (returned by value; promises awaited)."""
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CdpError("evaluating %r: %s %s" % (expr[:200], d.get("text"),
                                                     d.get("exception", {}).get("description")))
        return r["result"].get("value")

    def wait_for(self, expr, timeout=20.0, what=None):
        """Polls expr until it is truthy; returns its value. CdpError after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            v = self.eval(expr)
            if v:
                return v
            if time.monotonic() > deadline:
                raise CdpError("timed out after %.0f s waiting for %s" % (timeout, what or expr))
            self.b.drain(0.05)

    def mouse(self, kind, x, y, **extra):
        p = {"type": kind, "x": x, "y": y}
        p.update(extra)
        self.send("Input.dispatchMouseEvent", p)

    def hover(self, x, y):
        self.mouse("mouseMoved", x, y)

    def click(self, x, y):
        """A real left click at viewport coordinates (CSS pixels)."""
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, button="left", buttons=1, clickCount=1)
        self.mouse("mouseReleased", x, y, button="left", buttons=0, clickCount=1)

    def type_text(self, text):
        """Types text into the focused element, one key at a time."""
        for ch in text:
            self.send("Input.dispatchKeyEvent", {"type": "keyDown", "text": ch, "key": ch,
                                                 "unmodifiedText": ch})
            self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": ch})

    def press_enter(self):
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent",
                      {"type": kind, "key": "Enter", "code": "Enter",
                       "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13,
                       **({"text": "\r"} if kind == "keyDown" else {})})

    def screenshot(self, path):
        """A PNG of the whole page (beyond the viewport) written to path; its bytes."""
        m = self.send("Page.getLayoutMetrics")
        size = m.get("cssContentSize") or m["contentSize"]
        clip = {"x": 0, "y": 0, "scale": 1,
                "width": max(size["width"], self.b.width),
                "height": max(size["height"], self.b.height)}
        r = self.send("Page.captureScreenshot", {"format": "png", "clip": clip,
                                                 "captureBeyondViewport": True}, timeout=60)
        data = base64.b64decode(r["data"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return data


def png_size(data):
    """(width, height) from a PNG's IHDR chunk; ValueError when data is not a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    return struct.unpack(">II", data[16:24])
