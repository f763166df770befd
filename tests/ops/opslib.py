"""Helpers for the operations tests: run build/vkserve under a fake service manager.

FakeManager binds a unix datagram socket (the $NOTIFY_SOCKET systemd would pass) and
records every notification with its arrival time; start_server() launches
`vkserve serve`, optionally with a listening socket passed as fd 3 (LISTEN_FDS), the way
systemd's socket activation does. Tests exit 77 (skip) when the server cannot run here.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time


class FakeManager:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="vks-notify-")
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages = []  # (monotonic time, "KEY=VALUE")
        self.lock = threading.Lock()
        self.quit = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.quit:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            now = time.monotonic()
            with self.lock:
                for line in data.decode().split("\n"):
                    if line:
                        self.messages.append((now, line))

    def lines(self, prefix=""):
        with self.lock:
            return [(t, m) for t, m in self.messages if m.startswith(prefix)]

    def wait_for(self, line, count=1, timeout=120.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if len([m for _, m in self.lines() if m == line]) >= count:
                return True
            time.sleep(0.05)
        return False

    def close(self):
        self.quit = True
        self.thread.join()
        self.sock.close()
        os.unlink(self.path)
        os.rmdir(self.dir)


class Server:
    def __init__(self, proc, port, log_path):
        self.proc, self.port, self.log_path = proc, port, log_path

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def request(self, method, path, body=None, timeout=120):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=json.dumps(body) if body is not None else None,
                      headers={"Content-Type": "application/json"} if body is not None else {})
            r = c.getresponse()
            return r.status, r.read().decode(errors="replace")
        finally:
            c.close()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def binary():
    if len(sys.argv) < 2:
        sys.exit("usage: test.py path/to/vkserve")
    return sys.argv[1]


def start_server(args, env_extra, activated=True, log_name="server.log"):
    """Starts `vkserve serve ARGS`; with `activated`, on a socket passed as fd 3."""
    env = dict(os.environ)
    env.update(env_extra)
    log_path = os.path.join(tempfile.mkdtemp(prefix="vks-ops-"), log_name)
    log = open(log_path, "w")
    cmd = [binary(), "serve", "--bidi-port", "-1"] + args
    if activated:
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(64)
        port = lsock.getsockname()[1]
        n = lsock.fileno()
        dup = n == 3  # the wrapper moves it to 3: start elsewhere
        if dup:
            n = os.dup(n)
        # As systemd does: the socket at fd 3, LISTEN_PID = the server's pid ($$ before exec).
        wrapper = f'exec 3<&{n} {n}<&-; LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"'
        proc = subprocess.Popen(["bash", "-c", wrapper, "bash"] + cmd, env=env, stdout=log,
                                stderr=subprocess.STDOUT, pass_fds=(n,))
        lsock.close()
        if dup:
            os.close(n)
    else:
        proc = subprocess.Popen(cmd + ["--port", "0"], env=env, stdout=log, stderr=subprocess.STDOUT)
        port = None
        for _ in range(600):
            with open(log_path) as f:
                for line in f:
                    if "listening on http://" in line:
                        port = int(line.rsplit(":", 1)[1].split()[0])
            if port or proc.poll() is not None:
                break
            time.sleep(0.05)
    return Server(proc, port, log_path)


def wait_ready(srv, timeout=120.0):
    """Waits until /ping answers 200; exits 77 when the server could not start here."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if srv.proc.poll() is not None:
            text = srv.log()
            if "vulkan" in text.lower() or "device" in text.lower():
                print("SKIP: the server cannot start here (no Vulkan device?)\n" + text)
                sys.exit(77)
            fail(srv, "server exited before serving")
        try:
            if srv.port and srv.request("GET", "/ping", timeout=2)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    fail(srv, "server not ready in time")


def fail(srv, msg):
    print("FAIL: " + msg)
    if srv is not None:
        print("--- server log\n" + srv.log())
        srv.kill()
    sys.exit(1)


def check(cond, srv, msg):
    if not cond:
        fail(srv, msg)
