"""Open a local page in headless Chromium with no network and read what it rendered.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages, NUL-terminated, on file descriptors 3 and 4), so a test waits in real
time for the page's own "done" condition: ``--virtual-time-budget`` runs out while
WebAssembly compiles off the main thread, which made ``--dump-dom`` a race.

No network: the browser runs in a new network namespace (``unshare -n``: only a
down loopback) where the sandbox allows one; elsewhere every host name resolves to
nothing and every connection goes to a closed proxy port. Either way each request
the page makes is recorded (``Network.requestWillBeSent``), so a test can assert that
none went out at all.

:func:`find_or_install` finds ``chromium`` on PATH, or installs Debian's package when
running as root with apt-get (CI's fresh machine), or says why it cannot.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# The browser's own background traffic (updates, time, spell-check dictionaries), off.
_QUIET = ("--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars")
_OFFLINE_FLAGS = ("--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:9",
                  "--proxy-bypass-list=<-loopback>")


def find_or_install() -> tuple[str | None, str]:
    """(the chromium executable, "") or (None, why there is none)."""
    for name in _NAMES:
        if path := shutil.which(name):
            return path, ""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return None, "no chromium on PATH, and installing Debian's needs root and apt-get"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log = []
    for cmd in (["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"],
                ["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        except subprocess.TimeoutExpired:
            return None, f"{' '.join(cmd)} ran past 600 s"
        log.append(proc.stdout[-300:] + proc.stderr[-300:])
        if cmd[1] == "install" and proc.returncode == 0 and shutil.which("chromium"):
            return shutil.which("chromium"), ""
    return None, "apt-get install chromium failed: " + " | ".join(s.strip() for s in log)[-400:]


def network_namespace_works() -> bool:
    if not shutil.which("unshare"):
        return False
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@dataclass
class Rendered:
    value: object                        # what ``done`` evaluated to, last
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    console: list[str] = field(default_factory=list)   # console messages and exceptions
    screenshot: bytes | None = None
    isolation: str = ""                  # how the network was kept away


class _Pipe:
    def __init__(self, proc: subprocess.Popen, to_browser: int, from_browser: int):
        self.proc, self.w, self.r = proc, to_browser, from_browser
        self.buf = b""
        self.next_id = 0
        self.events: list[dict] = []

    def _read_message(self, deadline: float) -> dict:
        import select

        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium sent nothing in time")
            ready, _, _ = select.select([self.r], [], [], left)
            if ready:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe (exit {self.proc.poll()})")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, deadline: float, session: str | None = None, **params) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)


def render(browser: str, page: Path | str, done: str, *, timeout: float = 45.0,
           screenshot: bool = False, size: tuple[int, int] = (1400, 1000),
           serve: list[str] | None = None, port: int | None = None) -> Rendered:
    """Open ``page`` (a file, or a URL) and evaluate the JS expression ``done`` every 0.2 s
    until it is truthy (or ``timeout`` s pass: TimeoutError); return its last value, the
    requests the page made, and a PNG when ``screenshot``.

    ``serve``: a server's command line, started first in the browser's network (in the
    namespace, with its loopback brought up), and the browser only once something listens
    on 127.0.0.1:``port``; it is stopped with the browser."""
    offline = network_namespace_works()
    isolation = "unshare -n (a network namespace with no interfaces up)" if offline else \
        "host-resolver rules that resolve nothing and a closed proxy port"
    profile = tempfile.mkdtemp(prefix="mlirhlo-chromium-")
    to_r, to_w = os.pipe()      # we write, Chromium reads on fd 3
    from_r, from_w = os.pipe()  # Chromium writes on fd 4
    argv = [browser, *_QUIET, "--remote-debugging-pipe", f"--user-data-dir={profile}",
            f"--window-size={size[0]},{size[1]}", *(() if offline else _OFFLINE_FLAGS)]
    if os.geteuid() == 0:
        argv.append("--no-sandbox")  # Chromium refuses root with its sandbox on
    # bash puts the pipes on the descriptors Chromium uses (no preexec_fn: forking with
    # JAX's threads running can deadlock; dash takes one-digit descriptors only). Moved
    # to 10 and up first, so neither can sit on 3 or 4 already.
    import fcntl

    r, w = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_r, from_w))
    os.close(to_r)
    os.close(from_w)
    to_r, from_w = r, w
    launch = f'exec "$@" 3<&{to_r} 4>&{from_w} {to_r}<&- {from_w}>&-'
    server_log = None
    if serve:
        import shlex

        # The server's own network is the browser's: the namespace's loopback, brought up.
        # Both run in one process group, ended together.
        server_log = tempfile.NamedTemporaryFile(prefix="mlirhlo-server-", suffix=".log", delete=False)
        launch = (("ip link set lo up && " if offline else "")
                  + f"{shlex.join(serve)} {to_r}<&- {from_w}>&- >{shlex.quote(server_log.name)} 2>&1 & S=$!; "
                  f"for i in $(seq {int(timeout * 10)}); do (exec 9<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && break; "
                  f"sleep 0.1; done; " + launch.replace("exec ", "", 1) + "; kill $S 2>/dev/null; wait")
    argv = ["bash", "-c", launch, "bash", *argv]
    if offline:
        argv = ["unshare", "-n", *argv]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, pass_fds=(to_r, from_w), start_new_session=True)
    os.close(to_r)
    os.close(from_w)
    pipe = _Pipe(proc, to_w, from_r)
    deadline = time.monotonic() + timeout
    try:
        target = pipe.call("Target.createTarget", deadline, url="about:blank")["targetId"]
        session = pipe.call("Target.attachToTarget", deadline, targetId=target, flatten=True)["sessionId"]
        for domain in ("Network", "Runtime", "Page"):
            pipe.call(f"{domain}.enable", deadline, session)
        url = page if isinstance(page, str) else page.resolve().as_uri()
        pipe.call("Page.navigate", deadline, session, url=url)
        value = None
        while True:
            value = pipe.call("Runtime.evaluate", deadline, session, expression=done,
                              returnByValue=True)["result"].get("value")
            if value:
                break
            if any(e.get("method") == "Runtime.exceptionThrown" for e in pipe.events):
                raise RuntimeError(f"{_name(page)} threw: {_console(pipe.events)}")
            if time.monotonic() > deadline - 0.3:
                raise TimeoutError(f"{_name(page)}: {done!r} still {value!r} after {timeout} s; "
                                   f"console: {_console(pipe.events)}" + _log(server_log))
            time.sleep(0.2)
        shot = None
        if screenshot:
            import base64

            shot = base64.b64decode(pipe.call("Page.captureScreenshot", deadline, session,
                                              format="png")["data"])
        requests = [e["params"]["request"]["url"] for e in pipe.events
                    if e.get("method") == "Network.requestWillBeSent"]
        return Rendered(value, requests, _console(pipe.events), shot, isolation)
    finally:
        try:
            pipe.call("Browser.close", time.monotonic() + 5)
        except Exception:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        try:  # the browser, and a server started with it
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        proc.wait()
        if server_log is not None:
            server_log.close()
            os.unlink(server_log.name)
        os.close(to_w)
        os.close(from_r)
        shutil.rmtree(profile, ignore_errors=True)


def _name(page: Path | str) -> str:
    return page if isinstance(page, str) else page.name


def _log(server_log) -> str:
    if server_log is None:
        return ""
    return "; server: " + Path(server_log.name).read_text(errors="replace")[-1500:]


def _console(events: list[dict]) -> list[str]:
    out = []
    for e in events:
        if e.get("method") == "Runtime.consoleAPICalled":
            out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in e["params"]["args"]))
        elif e.get("method") == "Runtime.exceptionThrown":
            d = e["params"]["exceptionDetails"]
            out.append(d.get("exception", {}).get("description") or d.get("text", ""))
    return out
