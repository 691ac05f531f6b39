"""What the Python tests that start `tide serve` share (tests/console/console_test.py,
tests/readme/readme_walkthroughs.py): free ports, the workloads' port blocks of
tests/support/ports.h, and ending the workloads a test's host left behind."""

import fcntl
import os
import signal
import socket
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
    above it), with its process group: workloads outlive their host by design
    (docs/architecture.md#the-process-driver)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"TIDE_RUNTIME_ID=" in environ and str(directory).encode() in environ:
            pid = int(entry.name)
            for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    kill()
                except OSError:
                    pass
