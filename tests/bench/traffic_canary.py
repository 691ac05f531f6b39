#!/usr/bin/env python3
"""Traffic bench through a canary (issue 31, item 8): requests/s and p99 latency through a
plan's endpoint (tide's HAProxy) against straight to one `tide workload` instance, in the same
run on the same machine, while a canary moves 10 -> 50 -> 100, and the requests that failed
through the router from the first step to promotion (wrk runs across each promotion too).

One `tide serve` on a scratch data dir (the embedded default: SQLite, process driver, HAProxy
router); the plan has one instance per version, so at each step the router splits between
two workloads while the direct runs hit one. Prints one JSON line on stdout:
  {"bench": "traffic_canary", "steps": [{"step", "direct_rps", "direct_p99_ms", "router_rps",
   "router_p99_ms"}...], "direct_rps", "router_rps", "rps_ratio", "direct_p99_ms",
   "router_p99_ms", "p99_added_ms", "router_requests", "router_failed", "cores",
   "direct_workload_cpu_us", "router_workload_cpu_us", "router_haproxy_cpu_us",
   "router_host_cpu_us", "request_log_sample"}
(the top-level figures are medians over the steps; the *_cpu_us figures are the CPU
microseconds per request the workloads, haproxy and the host (which reads haproxy's request
log) spent, which on a machine of few cores
bound requests/s: wrk, haproxy and the workloads share them). Targets: p99 added <= 2 ms, router rps
>= 80% of direct, 0 failed.

  tests/bench/traffic_canary.py --tide build-release/tide --source . [--seconds 10] [--request-log-sample N]

--request-log-sample sets the host config's traffic.request_log_sample (1: haproxy logs every
request for the p95 at the router, N: one in N, 0: none), to show what the log costs.

Needs wrk and haproxy (.ci/install-deps --bench).
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "traffic"))
from test_host import Host, free_port  # noqa: E402
from traffic_e2e import (control, deployment_manifest, plan_manifest, settled_at, wait_state,  # noqa: E402
                         wait_step, workloads_of)

kPlan = "bench"
kParams = "{steps: [10, 50, 100], min_ready_seconds: 1, health_timeout_seconds: 60}"


def wrk_command(url, seconds):
    return ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency", url]


def figures(out):
    """What wrk printed: (requests/s, p99 ms, requests, failed: non-2xx answers and socket errors)."""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    value, unit = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", out, re.M).groups()
    p99_ms = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    failed = 0
    if m := re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out):
        failed += int(m.group(1))
    if m := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out):
        failed += sum(int(x) for x in m.groups())
    return rps, p99_ms, requests, failed


def wrk(url, seconds):
    """wrk -t2 -c16 over keep-alive, its figures."""
    return figures(subprocess.run(wrk_command(url, seconds), capture_output=True, text=True, check=True).stdout)


def cpu_seconds(pids):
    """User and system CPU seconds the processes `pids` used so far (those still alive)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def haproxy_of(data_dir):
    """The pids of the haproxy processes the host supervises (their config under its data dir)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"haproxy" in cmdline.split(b"\0")[0] and str(data_dir).encode() in cmdline:
                pids.append(int(entry.name))
    return pids


def measured(url, seconds, workloads, haproxy, host):
    """wrk's figures, and the CPU microseconds per request the workloads, haproxy and the host spent."""
    before = cpu_seconds(workloads), cpu_seconds(haproxy), cpu_seconds(host)
    rps, p99, requests, failed = wrk(url, seconds)
    after = cpu_seconds(workloads), cpu_seconds(haproxy), cpu_seconds(host)
    per_request = [round((a - b) * 1e6 / max(requests, 1), 1) for a, b in zip(after, before)]
    return rps, p99, requests, failed, per_request


def listen_of(pid):
    """The --listen address of the workload `pid`."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return args[args.index(b"--listen") + 1].decode()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tide", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--seconds", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--request-log-sample", type=int, default=1,
                        help="traffic.request_log_sample: 1 every request, N one in N, 0 none")
    arguments = parser.parse_args()
    if shutil.which("wrk") is None or not Path("/usr/sbin/haproxy").exists():
        sys.exit("traffic_canary: wrk and haproxy are needed: .ci/install-deps --bench")

    listen, preview = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    host = Host(arguments.tide, arguments.source, prefix="tide-traffic-bench-",
                config=f"traffic: {{router: haproxy, request_log_sample: {arguments.request_log_sample}}}\n")
    try:
        host.apply("nodes.yaml", arguments.source)
        host.apply_text(plan_manifest(listen, preview, kPlan, "canary", kParams), "the plan")
        host.apply_text(deployment_manifest("v1", 1, kPlan, 1), "v1")
        wait_state(host, "v1", "COMPLETED", kPlan)
        settled_at(host, "v1", 100, kPlan)
        host.apply_text(deployment_manifest("v2", 2, kPlan, 1), "v2")

        steps, router_requests, router_failed = [], 0, 0
        for step, percent in ((1, 10), (2, 50), (3, 100)):
            if percent < 100:
                wait_step(host, "v2", step, kPlan)
            else:
                wait_state(host, "v2", "COMPLETED", kPlan)
            settled_at(host, "v2", percent, kPlan)
            direct = listen_of(workloads_of(host.data_dir, 2)[0])
            workloads = workloads_of(host.data_dir, 1) + workloads_of(host.data_dir, 2)
            haproxy = haproxy_of(host.data_dir)
            serving = [host.process.pid]
            d_rps, d_p99, _, _, d_cpu = measured(f"http://{direct}/version", arguments.seconds, workloads, haproxy,
                                                 serving)
            r_rps, r_p99, requests, failed, r_cpu = measured(f"http://{listen}/version", arguments.seconds,
                                                             workloads, haproxy, serving)
            router_requests += requests
            router_failed += failed
            row = {"step": percent, "direct_rps": round(d_rps), "direct_p99_ms": d_p99,
                   "router_rps": round(r_rps), "router_p99_ms": r_p99,
                   "direct_workload_cpu_us": d_cpu[0], "router_workload_cpu_us": r_cpu[0],
                   "router_haproxy_cpu_us": r_cpu[1], "router_host_cpu_us": r_cpu[2]}
            print(f"  at {percent}%: {row}", file=sys.stderr, flush=True)
            steps.append(row)
            if percent < 100:
                # Through the promotion: the router's figures while the split moves.
                moving = subprocess.Popen(wrk_command(f"http://{listen}/version", arguments.seconds),
                                          stdout=subprocess.PIPE, text=True)
                control(host, "v2", "promote", f"bench: past {percent}%", kPlan)
                _, _, requests, failed = figures(moving.communicate()[0])
                router_requests += requests
                router_failed += failed
                print(f"  promoting past {percent}%: {requests} requests, {failed} failed", file=sys.stderr,
                      flush=True)

        def median(key):
            return statistics.median(s[key] for s in steps)
        result = {"bench": "traffic_canary", "steps": steps,
                  "direct_rps": median("direct_rps"), "router_rps": median("router_rps"),
                  "rps_ratio": round(median("router_rps") / median("direct_rps"), 2),
                  "direct_p99_ms": median("direct_p99_ms"), "router_p99_ms": median("router_p99_ms"),
                  "p99_added_ms": round(median("router_p99_ms") - median("direct_p99_ms"), 2),
                  "router_requests": router_requests, "router_failed": router_failed,
                  "cores": os.cpu_count(),
                  "direct_workload_cpu_us": median("direct_workload_cpu_us"),
                  "router_workload_cpu_us": median("router_workload_cpu_us"),
                  "router_haproxy_cpu_us": median("router_haproxy_cpu_us"),
                  "router_host_cpu_us": median("router_host_cpu_us"),
                  "request_log_sample": arguments.request_log_sample}
        print(json.dumps(result), flush=True)
    finally:
        host.stop()


if __name__ == "__main__":
    main()
