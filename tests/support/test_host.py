"""What the Python tests that start `tide serve` share (tests/console/console_test.py,
tests/readme/readme_walkthroughs.py, tests/traffic/traffic_e2e.py): free ports, the workloads'
port blocks of tests/support/ports.h, ending the workloads a test's host left behind, polling
with a deadline, and a `tide serve` child with its API (Host)."""

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

# The port blocks of tests/support/ports.h: a test process locks a block of its own for its
# lifetime, so its workloads never race a C++ test beside it for a port.
kFirstBlockPort, kBlockSize, kBlockCount = 20000, 1000, 12


def free_port():
    """A TCP port on the loopback address that was free a moment ago (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_block(count):
    """(lock, first, last): `count` ports of a block this process holds while `lock` is open."""
    for block in range(kBlockCount):
        lock = open(f"/tmp/tide-test-ports.{block}.lock", "a+")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        lock.seek(0)
        text = lock.read().strip()
        offset = int(text) if text.isdigit() and int(text) + count <= kBlockSize else 0
        lock.seek(0)
        lock.truncate()
        lock.write(str(offset + count))
        lock.flush()
        start = kFirstBlockPort + block * kBlockSize + offset
        return lock, start, start + count - 1
    raise RuntimeError("every test port block is taken by other test processes")


def port_block_at(first_port):
    """The lock of the block holding `first_port`, for workloads on fixed ports (waits for a
    test that holds it)."""
    block = (first_port - kFirstBlockPort) // kBlockSize
    lock = open(f"/tmp/tide-test-ports.{block}.lock", "a+")
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def kill_workloads_of(directory):
    """Kills every workload whose environment names `directory` (a host's data dir, or a dir
    above it), with its process group, and every haproxy whose config lies under it:
    workloads and the traffic router outlive their host by design
    (docs/architecture.md#the-process-driver, docs/architecture.md#traffic)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        workload = b"TIDE_RUNTIME_ID=" in environ and str(directory).encode() in environ
        router = cmdline.startswith(b"/usr/sbin/haproxy\0") and f"{directory}/".encode() in cmdline
        if workload or router:
            pid = int(entry.name)
            for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    kill()
                except OSError:
                    pass
    remove_containers_of(directory)


def remove_containers_of(directory):
    """Removes the containers and pods of every container driver whose state dir lies under
    `directory` (their tide.home label): they outlive their host as processes do
    (docs/architecture.md#the-container-driver)."""
    if shutil.which("podman") is None:
        return
    prefix = f"{os.path.normpath(os.path.abspath(directory))}/"
    for kind, listing in (("container", ["podman", "ps", "-a"]), ("pod", ["podman", "pod", "ps"])):
        try:
            listed = subprocess.run(listing + ["--format", "{{.ID}} {{.Labels}}"], capture_output=True, text=True,
                                    timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        ids = [line.split(" ", 1)[0] for line in listed.splitlines()
               if "tide.home:" + prefix in line.replace("tide.home=", "tide.home:")]
        if ids:
            remove = ["podman", "rm", "-f", "-t", "0"] if kind == "container" else ["podman", "pod", "rm", "-f"]
            subprocess.run(remove + ids, capture_output=True, timeout=120)


# Generous for a loaded two-core machine: these bound a hang, they do not time anything.
kDeadlineSeconds = 180


def poll(what, check, seconds=kDeadlineSeconds, every=0.1):
    """check()'s first truthy value, looked for until the deadline passes."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


class Host:
    """`tide serve` as a child process, and its API."""

    def __init__(self, tide, source, extra_policies=None, prefix="tide-test-", config=""):
        """Starts `tide serve` with its own data dir, the shipped policies but change_freeze.lua
        (as tests/cli/serve_process.h does) plus `extra_policies` ({file name: text}), and
        `config` appended to its tide.yaml."""
        self.tide, self.source = tide, source
        self.data_dir = Path(tempfile.mkdtemp(prefix=prefix))
        self.url = f"http://127.0.0.1:{free_port()}"
        self.port_lock, first, last = port_block(50)
        policies = self.data_dir / "policies"
        policies.mkdir()
        for policy in (Path(source) / "policies").glob("*.lua"):
            if policy.name != "change_freeze.lua":
                shutil.copy(policy, policies / policy.name)
        for name, text in (extra_policies or {}).items():
            (policies / name).write_text(text)
        (self.data_dir / "tide.yaml").write_text(
            f"process: {{port_range_start: {first}, port_range_end: {last}}}\npolicies_dir: {policies}\n" + config)
        self.log = self.data_dir / "serve.log"
        self.start()
        self.admin = (self.data_dir / "admin.token").read_text().strip()

    def start(self):
        """(Re)starts `tide serve` on the same data dir and address."""
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [self.tide, "serve", "--listen", self.url.removeprefix("http://"), "--data-dir", str(self.data_dir),
                 "--config", str(self.data_dir / "tide.yaml")],
                cwd=self.source, stdout=log, stderr=log)
        poll("tide serve to answer /healthz", self.healthy)

    def kill(self):
        """kill -9 of the host alone: its workloads (and its router) outlive it."""
        self.process.kill()
        self.process.wait()

    def healthy(self):
        if self.process.poll() is not None:
            raise AssertionError(f"tide serve exited with {self.process.returncode}; see {self.log}")
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False

    def call(self, method, path, token, body=None, content_type="application/json"):
        data = body.encode() if isinstance(body, str) else (json.dumps(body).encode() if body is not None else None)
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Authorization": f"Bearer {token}", "Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                return reply.status, json.loads(reply.read() or b"null"), dict(reply.headers)
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null"), dict(error.headers)

    def apply(self, example, source):
        self.apply_text((Path(source) / "examples" / example).read_text(), example)

    def apply_text(self, manifest, what):
        status, reply, _ = self.call("POST", "/v1/manifests", self.admin, manifest, "application/yaml")
        assert status in (200, 201), f"applying {what}: {status} {reply}"

    def get(self, path):
        status, reply, _ = self.call("GET", path, self.admin)
        assert status == 200, f"GET {path}: {status} {reply}"
        return reply

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.kill_workloads()
        shutil.rmtree(self.data_dir, ignore_errors=True)
        self.port_lock.close()

    def kill_workloads(self):
        kill_workloads_of(self.data_dir)
