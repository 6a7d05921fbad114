#!/usr/bin/python3
"""`run --webhook-listen` (CONTRACT §11) against Debian's docker-registry configured to notify
it (`notifications.endpoints` with `Authorization: Bearer TOKEN`). Every interval is 1h, so
only the first pass and webhook-started passes run: a push of a newer tag is committed within
seconds; a wrong or missing token is 401 and starts no pass; a burst of 50 pushes gives one
pass (passes counted in run's log: each lists the one repository once); 3,000 wrong tokens are
3,000 x 401, all counted in imageguard_webhook_rejected_total and logged at most once; a pull (a
real manifest GET, which the registry reports as a pull event) does nothing; bad bodies are 400
(413 announced over 1 MiB, 411 chunked, both from the headers; 408 for a body trickled past
10 s, then the stream ends; each counted by reason) while
/healthz keeps answering; imageguard_webhook_requests_total and
imageguard_push_to_commit_seconds are exposed. SIGTERM while clients hold connections (between
passes: half-sent headers, an authenticated POST whose body stops short of its Content-Length,
an idle keep-alive connection after GET /metrics and a half-sent GET on --listen; and during a pass stalled on a
registry, with a held webhook connection): exit 0 within a hang bound, the stop logged, every
held socket closed by the server. The held clients keep trickling bytes, so the listeners' idle
timeout (5 s) cannot be what closes them."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.environ.get("IMAGEGUARD_SRC", "."), "test", "fixtures"))
from guard_env import Env, Checks, marker_file, wait_for  # noqa: E402
import registry  # noqa: E402

t = Checks()
TOKEN = "wh-" + os.urandom(12).hex()


def request(port, path, body=None, headers=None, method=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body,
                                 headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def hook(port, body, token=TOKEN):
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    return request(port, "/hooks/registry", body, headers, "POST")[0]


def announced_oversize(port, size=(1 << 20) + 2):
    """The status of a POST whose Content-Length announces size bytes, of which only the first
    KiB is sent: the listener answers from the header, before any more of the body is read
    (urllib would keep sending and race the server's close)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(("POST /hooks/registry HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Content-Type: application/json\r\nAuthorization: Bearer %s\r\n"
                   "Content-Length: %d\r\n\r\n" % (TOKEN, size)).encode() + b"{" + b" " * 1023)
        head = b""
        while b"\r\n" not in head:
            chunk = c.recv(4096)
            if not chunk:
                break
            head += chunk
    parts = head.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def raw_post(port, headers, body=b"", trickle_for=0.0):
    """(status, rest) of an authenticated POST sent on a raw socket: headers (extra lines), then
    body; with trickle_for, one more body byte a second until an answer comes or trickle_for
    seconds pass. rest is what followed the status line until the server ended the stream
    (None when it did not within 10 s)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        c.sendall(("POST /hooks/registry HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Authorization: Bearer %s\r\n%s\r\n" % (TOKEN, headers)).encode() + body)
        end = time.time() + trickle_for
        got = b""
        c.settimeout(1)
        while True:
            try:
                chunk = c.recv(4096)
            except socket.timeout:
                if time.time() < end:
                    c.sendall(b" ")
                    continue
                return None, None
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
    parts = got.split(b" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return status, got


def passes(log):
    with open(log) as f:
        return sum(1 for line in f if "reconcile.pass" in line and "decisions" in line)


def rejected_lines(log):
    with open(log) as f:
        return sum(1 for line in f if "webhook.rejected" in line)


def metric(port, name):
    for line in request(port, "/metrics")[1].splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    return 0.0


STOP_BOUND = 5  # seconds: a hang bound for SIGTERM, not a benchmark


class Held:
    """Client connections held open while `run` is signalled. The webhook ones keep sending a
    byte a second (another header line, another body byte), as does the half GET on --listen,
    so no idle timeout closes them."""

    def __init__(self):
        self.socks, self.stop = [], threading.Event()
        self.thread = threading.Thread(target=self.trickle, daemon=True)

    def open(self, port, data, trickle=None):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(data)
        self.socks.append((s, trickle))
        return s

    def start(self):
        self.thread.start()

    def trickle(self):
        while not self.stop.wait(1):
            for s, data in self.socks:
                if data:
                    try:
                        s.sendall(data)
                    except OSError:
                        pass

    def closed_by_server(self, timeout=STOP_BOUND):
        """Which held sockets the server closed (EOF or reset) within timeout, by index."""
        self.stop.set()
        deadline = time.time() + timeout
        closed = []
        for i, (s, _) in enumerate(self.socks):
            while True:
                left = deadline - time.time()
                if left <= 0:
                    break
                s.settimeout(left)
                try:
                    if not s.recv(65536):
                        closed.append(i)
                        break
                except socket.timeout:
                    break
                except OSError:  # reset
                    closed.append(i)
                    break
        return closed

    def close(self):
        self.stop.set()
        for s, _ in self.socks:
            s.close()


def half_headers(hook_port, held):
    """(1) a POST's headers without the final blank line; trickles more header lines."""
    return held.open(hook_port, b"POST /hooks/registry HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Authorization: Bearer " + TOKEN.encode() + b"\r\n",
                     trickle=b"X-Slow: 1\r\n")


def short_body(hook_port, held):
    """(2) an authenticated POST whose body stops far short of its Content-Length."""
    return held.open(hook_port, b"POST /hooks/registry HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
                     b'{"events": [', trickle=b" ")


def idle_keepalive(port, held):
    """(3) GET /metrics answered in full on a keep-alive connection, then nothing."""
    s = held.open(port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    f = s.makefile("rb")
    status = f.readline()
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    body = f.read(length)
    return status.startswith(b"HTTP/1.1 200") and b"imageguard_" in body


def half_get(port, held):
    """(3b) a GET's headers without the final blank line on --listen; trickles header lines."""
    return held.open(port, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                     trickle=b"X-Slow: 1\r\n")


def sigterm(proc, log, at):
    """Sends SIGTERM; returns (rc, seconds, stop logged). Kills after STOP_BOUND + 25 s."""
    with open(log) as f:
        f.seek(at)
        before = f.read().count("stopping")
    t0 = time.time()
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(STOP_BOUND + 25)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    took = time.time() - t0
    with open(log) as f:
        f.seek(at)
        text = f.read()
    stopped = [line for line in text.splitlines() if "run.stop" in line and "stopping" in line]
    return rc, took, len(stopped) == 1 and before == 0, text


def scenario(env, hook_port, port, log):
    env.push("team/app", ["1.0.0"])
    env.seed({"app.yaml": marker_file(env.image("team/app") + ":1.0.0", "app")})
    env.config(env.repository("app", "team/app", interval="1h")
               + env.policy("app", "app", semver=">=1.0.0")
               + env.automation(interval="1h"))
    token_file = os.path.join(env.secrets, "webhook-token")
    with open(token_file, "w") as f:
        f.write(TOKEN + "\n")
    # flag errors: one line, exit 2, before anything starts
    bad = env.imageguard("run", "--webhook-listen", "127.0.0.1:%d" % hook_port)
    t.check(bad.rc == 2 and "--webhook-token-file" in bad.err,
            "--webhook-listen without --webhook-token-file: exit 2", bad)
    missing = os.path.join(env.dir, "no-such-token")
    bad = env.imageguard("run", "--webhook-listen", "127.0.0.1:%d" % hook_port,
                         "--webhook-token-file", missing)
    t.check(bad.rc == 2 and missing in bad.err, "a missing token file: exit 2 naming it", bad)
    errlog = open(log, "w+")
    proc = subprocess.Popen(env.args("run", "--listen", "127.0.0.1:%d" % port,
                                     "--webhook-listen", "127.0.0.1:%d" % hook_port,
                                     "--webhook-token-file", token_file),
                            stdout=subprocess.DEVNULL, stderr=errlog)
    try:
        registry.wait_for_port(hook_port, proc)
        t.check(wait_for(lambda: request(port, "/readyz")[0] == 200), "first pass completes")
        t.check(passes(log) == 1, "one pass at start (intervals are 1h)", passes(log))
        time.sleep(1)  # the first pass's own manifest reads come back as pull events
        # The registry retries the notification of the setup push (made before imageguard
        # listened) until it is delivered: an early pass that finds nothing new, after which
        # the repository's next early pass waits WEBHOOK_REPEAT_MS (10 s, as documented). Let
        # it come and its hold run out, so that the push below is timed on its own.
        if wait_for(lambda: metric(port, 'imageguard_webhook_requests_total{result="accepted"}')
                    >= 1, timeout=10):
            wait_for(lambda: passes(log) >= 2, timeout=5)
            time.sleep(10.5)

        # a push of a newer tag: the registry notifies, a pass commits it within seconds
        t0 = time.time()
        env.push("team/app", ["1.1.0"])
        t.check(wait_for(lambda: "1.1.0 #" in env.remote_file("app.yaml"), timeout=15),
                "a pushed newer tag is committed without the 1h interval elapsing")
        elapsed = time.time() - t0
        t.check(elapsed < 10, "push to commit within seconds", "%.2fs" % elapsed)
        print("push to commit: %.2fs" % elapsed)
        t.check(wait_for(lambda: metric(port, "imageguard_push_to_commit_seconds_count") >= 1),
                "imageguard_push_to_commit_seconds observed the commit")
        t.check(metric(port, 'imageguard_webhook_requests_total{result="accepted"}') >= 1,
                "accepted requests counted")
        time.sleep(1.5)
        n = passes(log)

        # wrong and missing tokens: 401, no pass
        good = json.dumps({"image": env.image("team/app")}).encode()
        t.check(hook(hook_port, good, token="wrong") == 401, "a wrong token gets 401")
        t.check(hook(hook_port, good, token=None) == 401, "a missing token gets 401")
        time.sleep(1.5)
        t.check(passes(log) == n, "a wrong token starts no pass", passes(log) - n)
        t.check(metric(port, 'imageguard_webhook_requests_total{result="unauthorized"}') == 2,
                "unauthorized requests counted")

        # 3,000 unauthenticated requests from one address: each counted, logged once a minute
        before = rejected_lines(log)
        t0 = time.time()
        codes = [hook(hook_port, good, token="wrong%d" % i) for i in range(3000)]
        took = time.time() - t0
        lines = rejected_lines(log) - before
        t.check(codes.count(401) == 3000, "3,000 wrong tokens: 3,000 x 401", set(codes))
        t.check(metric(port, 'imageguard_webhook_rejected_total{reason="unauthorized"}') == 3002,
                "imageguard_webhook_rejected_total counts every one")
        t.check(rejected_lines(log) - before <= 1 and rejected_lines(log) >= 1,
                "at most one log line for them (one per minute per client address)", lines)
        print("3000 unauthenticated requests in %.1fs: %d new log line(s), %d in all"
              % (took, lines, rejected_lines(log)))

        # bad bodies: 400; an unknown repository is ignored; /healthz keeps answering
        t.check(hook(hook_port, b"{not json") == 400, "invalid JSON gets 400")
        t.check(announced_oversize(hook_port) == 413, "a body announced over 1 MiB gets 413")
        status, _ = raw_post(hook_port, "Transfer-Encoding: chunked\r\n",
                             b"2000\r\n" + b" " * 8192 + b"\r\n")
        t.check(status == 411, "a chunked body (no Content-Length) gets 411 from its headers",
                status)
        t0 = time.time()
        status, got = raw_post(hook_port, "Content-Length: 1000\r\n", b"{", trickle_for=30)
        took = time.time() - t0
        t.check(status == 408 and got is not None and b"Connection: close" in got,
                "a body trickled a byte a second gets 408 at the 10 s cap, then the stream ends",
                (status, got))
        print("trickled body answered %s after %.1fs" % (status, took))
        for reason in ("too-large", "length-required", "timeout"):
            t.check(metric(port, 'imageguard_webhook_rejected_total{reason="%s"}' % reason) == 1,
                    "imageguard_webhook_rejected_total counts the %s refusal" % reason)
        t.check(hook(hook_port, json.dumps({"image": env.image("team/other")}).encode()) == 202,
                "an unknown repository is accepted as ignored (202)")
        t.check(request(port, "/healthz")[0] == 200, "/healthz answers after bad bodies")
        time.sleep(1.5)
        t.check(passes(log) == n, "bad bodies and unknown repositories start no pass",
                passes(log) - n)

        # a pull (a real manifest GET: the registry sends a pull event) does nothing
        ignored = metric(port, 'imageguard_webhook_requests_total{result="ignored"}')
        req = urllib.request.Request(env.reg.url + "/v2/team/app/manifests/1.1.0",
                                     headers={"Accept": registry.OCI_MANIFEST})
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()
        t.check(wait_for(lambda: metric(port, 'imageguard_webhook_requests_total{result="ignored"}')
                         > ignored, timeout=10), "the registry's pull event arrives and is ignored")
        time.sleep(1.5)
        t.check(passes(log) == n, "a pull event starts no pass", passes(log) - n)

        # a burst of 50 pushes: one pass
        accepted = metric(port, 'imageguard_webhook_requests_total{result="accepted"}')
        env.push("team/app", ["2.0.%d" % i for i in range(50)])
        t.check(wait_for(lambda: "2.0.49 #" in env.remote_file("app.yaml"), timeout=20),
                "the burst's newest tag is committed")
        wait_for(lambda: metric(port, 'imageguard_webhook_requests_total{result="accepted"}')
                 >= accepted + 50, timeout=10)
        time.sleep(2)
        got = metric(port, 'imageguard_webhook_requests_total{result="accepted"}') - accepted
        t.check(got >= 50, "the registry notified every push of the burst", got)
        t.check(passes(log) - n == 1, "a burst of 50 pushes gives one pass", passes(log) - n)
        text = request(port, "/metrics")[1]
        pc = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                            text=True)
        t.check(pc.returncode == 0 and "# TYPE imageguard_push_to_commit_seconds histogram" in text,
                "promtool check metrics accepts the webhook families", pc.stdout + pc.stderr)

        # SIGTERM between passes while three clients hold connections
        time.sleep(1.5)
        n = passes(log)
        held = Held()
        try:
            half_headers(hook_port, held)
            short_body(hook_port, held)
            t.check(idle_keepalive(port, held), "GET /metrics on a keep-alive connection: 200")
            half_get(port, held)
            held.start()
            time.sleep(1.5)  # the held requests are read as far as they go
            t.check(proc.poll() is None and passes(log) == n,
                    "run is idle between passes with the connections held", passes(log) - n)
            rc, took, stopped, text = sigterm(proc, log, 0)
            t.check(rc == 0 and took < STOP_BOUND,
                    "SIGTERM between passes with held connections: exit 0 within %d s"
                    % STOP_BOUND, "rc=%s %.1fs\n%s" % (rc, took, text[-3000:]))
            t.check(stopped, "the stop is logged (run.stop: stopping)", text[-2000:])
            closed = held.closed_by_server()
            t.check(closed == [0, 1, 2, 3], "the held sockets are closed by the server "
                    "(half headers, short body, idle keep-alive, half GET)", closed)
        finally:
            held.close()
    finally:
        if proc.poll() is None:
            rc, took, _, text = sigterm(proc, log, 0)
            t.check(False, "the scenario ended early; SIGTERM", "rc=%s %.1fs\n%s"
                    % (rc, took, text[-3000:]))
        errlog.close()


def sigterm_mid_pass(env, log):
    """SIGTERM while a pass waits on a registry that never answers and a webhook client holds
    a connection: exit 0 within the bound, the stop logged, the held socket closed."""
    fault = env.fault()
    hook_port, port = registry.free_port(), registry.free_port()
    env.seed({"stall.yaml": marker_file(env.image("stall/x", fault.host) + ":t000", "stall")})
    env.config(env.repository("app", "team/app", interval="1h")
               + env.repository("stall", "stall/x", host=fault.host, interval="1h",
                                extra="  timeout: 600s\n")
               + env.policy("app", "app", semver=">=1.0.0")
               + env.policy("stall", "stall", alphabetical="asc")
               + env.automation(interval="1h"))
    token_file = os.path.join(env.secrets, "webhook-token")
    errlog = open(log, "w+")
    proc = subprocess.Popen(env.args("run", "--listen", "127.0.0.1:%d" % port,
                                     "--webhook-listen", "127.0.0.1:%d" % hook_port,
                                     "--webhook-token-file", token_file),
                            stdout=subprocess.DEVNULL, stderr=errlog)
    held = Held()
    try:
        registry.wait_for_port(hook_port, proc)
        t.check(wait_for(lambda: any("/stall/x/" in r["path"] for r in fault.requests())),
                "the first pass waits on the stalled registry",
                "%s\n%s" % ([r["path"] for r in fault.requests()], open(log).read()[-2000:]))
        short_body(hook_port, held)
        half_headers(hook_port, held)
        held.start()
        time.sleep(1)
        t.check(proc.poll() is None and passes(log) == 0 and request(port, "/readyz")[0] == 503,
                "the pass is still in flight with the webhook connections held",
                open(log).read()[-2000:])
        rc, took, stopped, text = sigterm(proc, log, 0)
        t.check(rc == 0 and took < STOP_BOUND,
                "SIGTERM mid-pass with held webhook connections: exit 0 within %d s" % STOP_BOUND,
                "rc=%s %.1fs\n%s" % (rc, took, text[-3000:]))
        t.check(stopped, "the stop is logged mid-pass (run.stop: stopping)", text[-2000:])
        closed = held.closed_by_server()
        t.check(closed == [0, 1], "the held webhook sockets are closed by the server", closed)
    finally:
        held.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        errlog.close()


with Env(start_registry=False) as env:
    try:
        hook_port, port = registry.free_port(), registry.free_port()
        env.reg = registry.start_registry(
            os.path.join(env.dir, "registry"),
            notifications={"url": "http://127.0.0.1:%d/hooks/registry" % hook_port,
                           "token": TOKEN, "timeout": "2s", "threshold": 3, "backoff": "1s"})
        env.host = env.reg.host
        scenario(env, hook_port, port, os.path.join(env.dir, "run.log"))
        sigterm_mid_pass(env, os.path.join(env.dir, "run-mid-pass.log"))
    except Exception:
        import traceback
        t.check(False, "run_webhook scenario raised", traceback.format_exc())
sys.exit(t.done())
