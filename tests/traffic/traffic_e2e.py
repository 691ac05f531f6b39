#!/usr/bin/env python3
"""Real requests through a canary (docs/architecture.md#traffic, README "Canary with real
traffic").

A real `tide serve` on the embedded default (SQLite, the process driver, the shipped scripts
and policies) supervises a real haproxy. A plan of 4 `tide workload` instances declares a
stable endpoint, a preview address and a header route; clients keep sending requests to the
endpoint the whole time (keep-alive connections and a new connection per request) while:
  1. v1 rolls out: the endpoint serves version 1;
  2. v2's canary routes {new = 10, old = 90}: 10,000 requests split 10% ± 2 points, whatever
     the instance counts (1 new instance of 4: equal weights would send it 25%); X-Canary: always reaches v2 only, the preview
     address serves v2 only; `tide deployment show` prints the endpoint, the weights asked
     and the weights applied;
  3. the host is killed with SIGKILL: the endpoint keeps serving; the restarted host keeps
     the split (10% ± 2 again), it does not reset it;
  4. promote: 50% ± 2 of 10,000; promote again: v2 completes and serves every request;
  5. v3's canary at 10%, then aborted: every request is v2's again;
  6. (before 3) one old instance is killed with SIGKILL mid-canary: it leaves the backend
     and is replaced;
  7. a blue-green of 10 instances: the preview address serves green before the switch, the
     endpoint blue; after the promote every request is green's; blue drains, then stops.
No client request fails at any point. Every wait polls with a deadline; none sleeps a fixed
time. Exits 77 (skipped) when haproxy is not installed (.ci/install-deps installs it).

  tests/traffic/traffic_e2e.py --tide build/tide --source .
"""

import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import traceback
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "support"))
from test_host import Host, free_port, poll  # noqa: E402

kSkipped = 77
kHaproxy = "/usr/sbin/haproxy"
kPlan = "shop"
kInstances = 4
kSample = 10000
kTolerance = 2.0  # percentage points


kCanaryParams = "{steps: [10, 50, 100], min_ready_seconds: 1, health_timeout_seconds: 60}"
kBlueGreenParams = "{auto_promotion: never, min_ready_seconds: 1, health_timeout_seconds: 60, scale_down_delay_seconds: 2}"


def plan_manifest(listen, preview, plan=kPlan, script="canary", params=kCanaryParams):
    return f"""
plans:
  - name: {plan}
    namespace: shop-dev
    service_name: {plan}
    matching_capabilities: [{{type: CPU, comparator: EQ, names: [intel-xeon]}}]
    placement: {{max_per_node: 5}}
    strategy: {{script: {script}, params: {params}}}
    traffic:
      listen: "{listen}"
      preview_listen: "{preview}"
      health: {{path: /healthz}}
      header_routes: [{{header: X-Canary, value: always}}]
      drain_seconds: 5
    applications:
      - payload_name: web
        resources: {{cores: 1, memory_gib: 1}}
        ports: [{{protocol: TCP, port: 80}}]
        health_check: {{type: http, port: 80, path: /healthz, interval_seconds: 0.5}}
"""


def deployment_manifest(deployment_id, version, plan=kPlan, count=kInstances):
    return f"""
deployments:
  - deployment_plan_name: {plan}
    deployment_id: {deployment_id}
    instance_count: {count}
    payload_coordinates: [{{payload_name: web, coordinates: {{image: "nginx:{version}"}}}}]
"""


class Load:
    """Clients sending GET /version to the endpoint until stopped: two over keep-alive
    connections, one opening a new connection per request. Counts versions and failures."""

    def __init__(self, address):
        self.host, port = address.rsplit(":", 1)
        self.port = int(port)
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.requests = 0
        self.failures = []
        self.threads = [threading.Thread(target=self.run, args=(keep_alive,), daemon=True)
                        for keep_alive in (True, True, False)]
        for t in self.threads:
            t.start()

    def run(self, keep_alive):
        connection = None
        while not self.stopping.is_set():
            try:
                if connection is None:
                    connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
                connection.request("GET", "/version")
                reply = connection.getresponse()
                body = reply.read().decode()
                ok = reply.status == 200
                if not keep_alive or reply.getheader("Connection", "").lower() == "close":
                    connection.close()
                    connection = None
            except (OSError, http.client.HTTPException) as error:
                ok, body = False, f"{type(error).__name__}: {error}"
                if connection is not None:
                    connection.close()
                connection = None
            with self.lock:
                self.requests += 1
                if not ok:
                    self.failures.append(body)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=60)
        return self.requests, list(self.failures)


def tally(address, count, headers=None):
    """{version: requests} over `count` requests, sent by two curl processes over a keep-alive
    connection each (curl's URL range; a Python client spent 9 s on 10,000)."""
    curls = []
    for part in (count // 2, count - count // 2):
        command = ["curl", "-s", "-w", "<<%{http_code}>>", f"http://{address}/version?n=[1-{part}]"]
        for name, value in (headers or {}).items():
            command += ["-H", f"{name}: {value}"]
        curls.append(subprocess.Popen(command, stdout=subprocess.PIPE, text=True))
    seen = {}
    for curl in curls:
        out, _ = curl.communicate(timeout=300)
        # Each reply: its body, then <<status>> (a body, such as HAProxy's error page, may
        # hold newlines).
        for body, code in re.findall(r"(.*?)<<(\d{3})>>", out, re.S):
            key = body.strip() if code == "200" else f"HTTP {code}"
            seen[key] = seen.get(key, 0) + 1
    return seen


def share(seen, version):
    return 100.0 * seen.get(version, 0) / max(1, sum(seen.values()))


def check_split(address, version, percent, what):
    seen = tally(address, kSample)
    got = share(seen, version)
    print(f"  {what}: {seen} -> version {version} {got:.2f}% (asked {percent}%)", flush=True)
    assert abs(got - percent) <= kTolerance, f"{what}: version {version} got {got:.2f}% of {seen}, asked {percent}%"
    assert set(seen) <= {"1", "2", "3"}, f"{what}: unexpected replies {seen}"


def deployment(host, deployment_id, plan=kPlan):
    status, reply, _ = host.call("GET", f"/v1/plans/{plan}/deployments/{deployment_id}", host.admin)
    return reply if status == 200 else None


def traffic_view(host, plan=kPlan):
    return host.get(f"/v1/plans/{plan}").get("traffic") or {}


def settled_at(host, deployment_id, percent, plan=kPlan):
    """The plan's traffic view once the router applies `percent` for the deployment."""
    def check():
        view = traffic_view(host, plan)
        applied = (view.get("applied") or {}).get(deployment_id)
        asked = (view.get("asked") or {}).get(deployment_id)
        if applied is None or asked is None or view.get("reason"):
            return None
        return view if abs(applied - percent) <= 0.5 and abs(asked - percent) <= 0.5 else None
    return poll(f"the router to apply {percent}% for {deployment_id}", check)


def wait_state(host, deployment_id, state, plan=kPlan):
    poll(f"{plan}'s {deployment_id} to be {state}",
         lambda: (deployment(host, deployment_id, plan) or {}).get("state") == state)


def wait_step(host, deployment_id, step, plan=kPlan):
    def check():
        d = deployment(host, deployment_id, plan) or {}
        rollout = d.get("rollout_state") or {}
        return rollout.get("step") == step and not (rollout.get("waiting_for") or "").endswith("ready")
    poll(f"{deployment_id} at step {step}", check)


def control(host, deployment_id, verb, reason, plan=kPlan):
    status, reply, _ = host.call("POST", f"/v1/plans/{plan}/deployments/{deployment_id}/{verb}", host.admin,
                                 {"reason": reason})
    assert status in (200, 202), f"{verb} {deployment_id}: {status} {reply}"


def workloads_of(data_dir, version):
    """The pids of the host's workloads serving `version` (`tide workload --version V`)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"TIDE_RUNTIME_ID=" in environ and str(data_dir).encode() in environ and \
                f"\0--version\0{version}\0".encode() in cmdline:
            pids.append(int(entry.name))
    return pids


def haproxies_of(data_dir):
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if cmdline.startswith(b"/usr/sbin/haproxy") and str(data_dir).encode() in cmdline:
            pids.append(int(entry.name))
    return pids


def run(arguments):
    listen, preview = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    host = Host(arguments.tide, arguments.source, prefix="tide-traffic-test-")
    load = None
    try:
        host.apply("nodes.yaml", arguments.source)
        host.apply_text(plan_manifest(listen, preview), "the plan")
        host.apply_text(deployment_manifest("v1", 1), "v1")
        wait_state(host, "v1", "COMPLETED")
        settled_at(host, "v1", 100)
        print(f"v1 serves {listen}", flush=True)
        load = Load(listen)

        host.apply_text(deployment_manifest("v2", 2), "v2")
        wait_step(host, "v2", 1)
        view = settled_at(host, "v2", 10)
        print(f"v2 at step 1: {view}", flush=True)
        check_split(listen, "2", 10, "canary at 10% (1 new instance, 3 old)")
        assert tally(listen, 200, {"X-Canary": "always"}) == {"2": 200}, "the header route reaches v2 only"
        assert tally(preview, 200) == {"2": 200}, "the preview address serves v2 only"
        shown = subprocess.run([arguments.tide, "deployment", "show", kPlan], capture_output=True, text=True,
                               env={**os.environ, "TIDE_SERVER": host.url, "TIDE_TOKEN": host.admin}, check=True)
        for needle in ("Endpoint", listen, "Weights Asked", "Weights Applied", "v2 10%"):
            assert needle in shown.stdout, f"`tide deployment show` lacks {needle!r}:\n{shown.stdout}"

        # One old instance crashes mid-rollout: it leaves the backend, no request fails, and
        # the plan gets its instance back.
        victims = workloads_of(host.data_dir, 1)
        assert victims, "a workload of v1 to crash"
        os.kill(victims[0], signal.SIGKILL)
        poll("the crashed instance to be replaced", lambda: len(workloads_of(host.data_dir, 1)) >= len(victims)
             and victims[0] not in workloads_of(host.data_dir, 1))
        settled_at(host, "v2", 10)

        # kill -9 of the host: the endpoint keeps serving; the restarted host keeps the split.
        before = load.requests
        host.kill()
        poll("requests served while the host is down", lambda: load.requests > before + 500)
        assert haproxies_of(host.data_dir), "haproxy outlives its host"
        host.start()
        poll("the restarted host to read the router", lambda: traffic_view(host).get("router") == "up")
        print(f"after the restart: {settled_at(host, 'v2', 10)}", flush=True)
        check_split(listen, "2", 10, "after the host's restart")
        # The restarted host reads haproxy's request log again: the requests since count in
        # the latency histograms of its /metrics.
        def logged():
            with urllib.request.urlopen(host.url + "/metrics") as reply:
                text = reply.read().decode()
            return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith("tide_router_response_seconds_count{proxy=\"be_" + kPlan + "\""))
        poll("the router's request log in the host's /metrics", lambda: logged() > 1000)

        control(host, "v2", "promote", "canary looks good")
        wait_step(host, "v2", 2)
        settled_at(host, "v2", 50)
        check_split(listen, "2", 50, "canary at 50%")
        control(host, "v2", "promote", "all in")
        wait_state(host, "v2", "COMPLETED")
        settled_at(host, "v2", 100)
        assert tally(listen, 1000) == {"2": 1000}, "v2 serves every request once completed"

        # Relocation under load (make-before-break): an instance moves to another node; its new
        # runtime instance joins the backend once ready, the old one drains before it stops.
        listed = host.get(f"/v1/instances?plan={kPlan}")
        moving = next(i["meta_instance"] for i in listed["items"] if i["meta_instance"]["state"] == "ACTIVE")
        status, op, _ = host.call("POST", f"/v1/instances/{moving['name']}/operations", host.admin,
                                  json.dumps({"type": "RELOCATE", "reason": "move it under load"}), "application/json")
        assert status == 201, f"asking for a RELOCATE: {status} {op}"
        operation_path = f"/v1/operations/{op['metadata']['id']}"
        poll("the relocation to succeed", lambda: host.get(operation_path).get("state") == "SUCCEEDED")
        print(f"relocated {moving['name']}: {host.get(operation_path).get('message')}", flush=True)
        settled_at(host, "v2", 100)
        assert tally(listen, 1000) == {"2": 1000}, "v2 serves every request after the relocation"

        host.apply_text(deployment_manifest("v3", 3), "v3")
        wait_step(host, "v3", 1)
        settled_at(host, "v3", 10)
        control(host, "v3", "abort", "abandon v3")
        poll("v3 to end", lambda: (deployment(host, "v3") or {}).get("state") in ("ROLLED_BACK", "ABORTED", "FAILED"))
        settled_at(host, "v2", 100)
        assert tally(listen, 1000) == {"2": 1000}, "after the abort every request is v2's again"

        # Blue-green of 10 instances under load: the preview serves the new colour before the
        # switch, the switch moves every request at once, the old colour drains, then stops.
        bg_listen, bg_preview = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
        host.apply_text(plan_manifest(bg_listen, bg_preview, "bg", "blue_green", kBlueGreenParams), "the bg plan")
        host.apply_text(deployment_manifest("blue", 1, "bg", 10), "blue")
        wait_state(host, "blue", "COMPLETED", "bg")
        settled_at(host, "blue", 100, "bg")
        bg_load = Load(bg_listen)
        try:
            host.apply_text(deployment_manifest("green", 2, "bg", 10), "green")
            wait_step(host, "green", 2, "bg")  # the preview is ready; waiting for a promote
            assert tally(bg_preview, 400) == {"2": 400}, "the preview address serves the green colour"
            assert tally(bg_listen, 400) == {"1": 400}, "the endpoint serves blue until the switch"
            control(host, "green", "promote", "switch", "bg")
            settled_at(host, "green", 100, "bg")
            assert tally(bg_listen, 1000) == {"2": 1000}, "after the switch every request is green's"
            wait_state(host, "green", "COMPLETED", "bg")
            poll("the blue colour to stop", lambda: not workloads_of(host.data_dir, 1))
        finally:
            bg_requests, bg_failures = bg_load.stop()
        print(f"blue-green clients: {bg_requests} requests, {len(bg_failures)} failed", flush=True)
        assert not bg_failures, f"{len(bg_failures)} of {bg_requests} blue-green requests failed: {bg_failures[:5]}"

        requests, failures = load.stop()
        load = None
        print(f"background clients: {requests} requests, {len(failures)} failed", flush=True)
        assert requests > 1000, f"the background clients sent only {requests} requests"
        assert not failures, f"{len(failures)} of {requests} requests failed, e.g. {failures[:5]}"
        print("traffic end to end: ok", flush=True)
        return 0
    except Exception:  # noqa: BLE001 - print the host's log with the failure
        traceback.print_exc()
        try:
            print("--- tide serve's log (tail):\n" + host.log.read_text()[-6000:], file=sys.stderr)
        except OSError:
            pass
        return 1
    finally:
        if load is not None:
            load.stop()
        host.stop()
        for pid in haproxies_of(host.data_dir):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tide", required=True)
    parser.add_argument("--source", required=True)
    arguments = parser.parse_args()
    if not os.access(kHaproxy, os.X_OK):
        print(f"skipped: no haproxy at {kHaproxy} (.ci/install-deps installs it)")
        return kSkipped
    return run(arguments)


if __name__ == "__main__":
    sys.exit(main())
