#!/usr/bin/env python3
"""The web console in a real browser (README "Web console").

Starts `tide serve` on a free port with its own data dir and the shipped policies (all but
change_freeze.lua, as tests/cli/serve_process.h does), then drives headless Chromium through
chromium-driver:
  1. the admin signs in and tries to approve the CREATE their own deployment asked for: the
     console shows the server's four-eyes refusal word for word; a viewer sees the operation
     and the rollout without a button to press;
  2. an approver signs in, approves it, and sees its instance turn RUNNING on the plan's page
     without reloading it (the page follows the events);
  3. the approver promotes a canary paused at its first step, with a reason typed while
     events redraw the page, and sees the step advance.
The rollout view of step 3 is saved as a screenshot (--screenshot; the README shows one).

Every wait polls with a deadline (WebDriverWait); none sleeps a fixed time. Exits 77, which
ctest reports as skipped, when selenium or chromium-driver is not installed
(.ci/install-deps installs both).

  tests/console/console_test.py --tide build/tide --source . [--screenshot out.png]
"""

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "support"))
from test_host import free_port, kill_workloads_of, port_block  # noqa: E402

kSkipped = 77
# Generous for a loaded two-core machine: these bound a hang, they do not time anything.
kDeadlineSeconds = 180

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    print("skipped: python3-selenium is not installed (.ci/install-deps installs it)")
    sys.exit(kSkipped)

kChromeDriver = shutil.which("chromedriver")
kChromium = shutil.which("chromium")


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

    def __init__(self, tide, source):
        self.data_dir = Path(tempfile.mkdtemp(prefix="tide-console-test-"))
        self.url = f"http://127.0.0.1:{free_port()}"
        self.port_lock, first, last = port_block(50)
        policies = self.data_dir / "policies"
        policies.mkdir()
        for policy in (Path(source) / "policies").glob("*.lua"):
            if policy.name != "change_freeze.lua":
                shutil.copy(policy, policies / policy.name)
        (self.data_dir / "tide.yaml").write_text(
            f"process: {{port_range_start: {first}, port_range_end: {last}}}\npolicies_dir: {policies}\n")
        self.log = self.data_dir / "serve.log"
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [tide, "serve", "--listen", self.url.removeprefix("http://"), "--data-dir", str(self.data_dir),
                 "--config", str(self.data_dir / "tide.yaml")],
                cwd=source, stdout=log, stderr=log)
        poll("tide serve to answer /healthz", self.healthy)
        self.admin = (self.data_dir / "admin.token").read_text().strip()

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
        status, reply, _ = self.call("POST", "/v1/manifests", self.admin,
                                     (Path(source) / "examples" / example).read_text(), "application/yaml")
        assert status in (200, 201), f"applying {example}: {status} {reply}"

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


class Console:
    """Headless Chromium on the host's console."""

    def __init__(self, url):
        options = webdriver.ChromeOptions()
        options.binary_location = kChromium
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
            options.add_argument(argument)
        self.driver = webdriver.Chrome(service=Service(kChromeDriver), options=options)
        self.url = url
        self.wait = WebDriverWait(self.driver, kDeadlineSeconds)

    def until(self, what, check):
        try:
            return self.wait.until(lambda _: check())
        except Exception as error:
            raise AssertionError(f"timed out waiting for {what}") from error

    def find(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    # The page is drawn again on every batch of events, so an element found a moment ago may
    # be gone: a read or click that meets a stale one counts as not done yet.
    def text(self, css):
        try:
            found = self.find(css)
            return found[0].text if found else ""
        except WebDriverException:
            return ""

    def click(self, css):
        try:
            found = self.find(css)
            if found:
                found[0].click()
            return bool(found)
        except WebDriverException:
            return False

    def type_into(self, css, text):
        """The field `css` with `text` typed into it; None when it is not there or was replaced."""
        try:
            found = self.find(css)
            if not found:
                return None
            found[0].clear()
            found[0].send_keys(text)
            return found[0]
        except WebDriverException:
            return None

    def sign_in(self, token):
        field = self.until("the sign-in form", lambda: next(iter(self.find("#token")), None))
        field.send_keys(token)
        self.find("#sign-in button")[0].click()

    def sign_out(self):
        self.until("the sign-out button", lambda: self.click("#sign-out"))

    def go(self, hash):
        self.driver.execute_script("location.hash = arguments[0]", hash)

    def click_control(self, scope_css, control):
        self.until(f"the {control} button in {scope_css}",
                   lambda: self.click(f'{scope_css} [data-control="{control}"]'))


def waiting_create(host, plan):
    reply = host.get(f"/v1/operations?state=PENDING_APPROVAL&plan={plan}")
    creates = [op for op in reply["items"] if op["type"] == "CREATE"]
    return creates[0] if creates else None


def run(arguments):
    host = Host(arguments.tide, arguments.source)
    console = None
    try:
        host.apply("nodes.yaml", arguments.source)
        tokens = {}
        for name, role in (("alice", "approver"), ("vera", "viewer")):
            status, reply, _ = host.call("POST", "/v1/tokens", host.admin, {"name": name, "role": role})
            assert status == 201, f"creating {name}'s token: {status} {reply}"
            tokens[name] = reply["token"]

        # The console and its headers.
        with urllib.request.urlopen(host.url + "/") as reply:
            page = reply.read().decode()
            assert "/console/app.js" in page
            assert reply.headers["Content-Security-Policy"].startswith("default-src 'self'")
            assert reply.headers["X-Content-Type-Options"] == "nosniff"
            assert reply.headers["X-Frame-Options"] == "DENY"

        # 1. nginx-namespace has no approving policy: the admin's deployment waits for a person.
        host.apply("nginx-plan.yaml", arguments.source)
        host.apply("deployment-1.yaml", arguments.source)
        plan = "nginx-deployment-plan"
        operation = poll("the CREATE to wait for approval", lambda: waiting_create(host, plan))
        operation_id = operation["metadata"]["id"]
        card = f'article[data-operation="{operation_id}"]'

        console = Console(host.url)
        console.driver.get(host.url + "/#/approvals")
        console.sign_in(host.admin)
        console.until("the admin signed in", lambda: console.text("#who") == "bootstrap-admin (admin)")
        console.until("the waiting CREATE in the inbox", lambda: console.find(card))
        assert "CREATE" in console.text(card)
        assert console.text(f'{card} [data-field="requested_by"]') == "bootstrap-admin"
        console.click_control(card, "approve")
        refusal = (f"operation {operation_id} was requested by bootstrap-admin; it must be approved by "
                   "someone else (auth.approver_must_differ)")
        console.until("the four-eyes refusal", lambda: console.text("#notice") == refusal)
        assert host.get(f"/v1/operations/{operation_id}")["state"] == "PENDING_APPROVAL"

        # A viewer sees the same operation and rollout, with nothing to press.
        console.sign_out()
        console.sign_in(tokens["vera"])
        console.until("vera signed in", lambda: console.text("#who") == "vera (viewer)")
        console.until("the inbox for a viewer", lambda: console.find(card))
        assert not console.find(f"{card} [data-control]")
        console.go(f"#/plans/{plan}")
        console.until("the rollout of deployment-1", lambda: console.find('#rollout[data-deployment="deployment-1"]'))
        assert not console.find("#rollout [data-control]")
        console.go("#/approvals")

        # 2. Someone else approves, and the plan's page shows the instance RUNNING as it happens.
        console.sign_out()
        console.sign_in(tokens["alice"])
        console.until("alice signed in", lambda: console.text("#who") == "alice (approver)")
        console.click_control(card, "approve")
        console.until("the approval to succeed", lambda: console.text("#notice") == f"Approve operation {operation_id}: done")
        console.go(f"#/plans/{plan}")
        console.until("the instance to run", lambda: "RUNNING" in console.text("#instances tbody"))
        assert host.get(f"/v1/operations/{operation_id}")["approved_by"] == "alice"

        # 3. A canary in a dev namespace (approved by policy) pauses at its first step until promoted.
        canary = "nginx-canary"
        host.apply("nginx-canary-plan.yaml", arguments.source)
        host.apply("canary-v1.yaml", arguments.source)
        poll("canary-v1 to complete",
             lambda: host.get(f"/v1/plans/{canary}/deployments/canary-v1")["state"] == "COMPLETED", every=0.5)
        host.apply("canary-v2.yaml", arguments.source)
        console.go(f"#/plans/{canary}")
        rollout = '#rollout[data-deployment="canary-v2"]'
        console.until("canary-v2 to wait for a promote at step 1 of 2",
                      lambda: console.text(f'{rollout} [data-field="step"]') == "1 of 2"
                      and console.text(f'{rollout} [data-field="waiting_for"]') == "promotion")
        if arguments.screenshot:
            console.driver.save_screenshot(arguments.screenshot)

        # A reason being typed survives the redraws events bring, and goes out with the control.
        reason = console.until("a reason typed", lambda: console.type_into("#control-reason", "looks good"))
        status, _, _ = host.call("POST", "/v1/capabilities", host.admin, {"name": "probe", "type": "CPU", "score": 1})
        assert status == 201
        probe = host.get("/v1/whoami")["last_event_seq"]
        console.until("the console to see the probe's event", lambda: int(
            console.driver.execute_script("return document.body.dataset.eventsSeen || 0")) >= probe)
        assert console.find("#control-reason")[0] == reason and reason.get_attribute("value") == "looks good"
        console.click_control(rollout, "promote")
        console.until("the step to advance to 2 of 2",
                      lambda: console.text(f'{rollout} [data-field="step"]') == "2 of 2")
        console.until("canary-v2 to complete",
                      lambda: console.text(f'{rollout} [data-field="state"]') == "COMPLETED")
        controls = host.get("/v1/events?kind=deployment.control&subject=deployment/nginx-canary/canary-v2")["items"]
        assert [(e["actor"], e["data"].get("reason")) for e in controls] == [("alice", "looks good")], controls
        print("console test passed")
        return 0
    except BaseException:
        traceback.print_exc()
        if console is not None:
            failure = Path(tempfile.gettempdir()) / "tide-console-failure.png"
            console.driver.save_screenshot(str(failure))
            print(f"the page at the failure: {failure}\n{console.text('body')}")
        print("--- serve.log (tail) ---")
        print("".join(host.log.read_text(errors="replace").splitlines(keepends=True)[-40:]))
        return 1
    finally:
        if console is not None:
            console.driver.quit()
        host.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tide", required=True, help="the tide binary")
    parser.add_argument("--source", required=True, help="the source tree (shipped policies, scripts, examples)")
    parser.add_argument("--screenshot", help="where to save the rollout view")
    arguments = parser.parse_args()
    if not kChromeDriver or not kChromium:
        print("skipped: chromium and chromium-driver are not installed (.ci/install-deps installs them)")
        return kSkipped
    return run(arguments)


if __name__ == "__main__":
    sys.exit(main())
