#!/usr/bin/env python3
"""The web console in a real browser (docs/console.md).

Starts `tide serve` on a free port with its own data dir and the shipped policies (all but
change_freeze.lua, as tests/cli/serve_process.h does), then drives headless Chromium through
chromium-driver:
  1. the admin signs in and tries to approve the CREATE their own deployment asked for: the
     console shows the server's four-eyes refusal word for word; a viewer sees the operation
     and the rollout without a button to press;
  2. an approver signs in, approves it, and sees its instance turn RUNNING on the plan's page
     without reloading it (the page follows the events);
  3. the approver finds resume greyed out while the canary waits at its first step, pauses
     it (resume turns on, pause off), promotes it with a reason typed while events redraw
     the page, and sees the step advance (each redraw asked the API only for the history's
     events it had not read); then chooses the earlier deployment, with its history and the
     controls its COMPLETED state leaves, and sees the server's refusal of a control the
     page still offered after the state changed;
  4. in the approvals inbox, an operation that needs two approvals shows "1 of 2" after the
     approver's and keeps waiting, and one a soft policy denied (the test's own policies,
     kTestPolicies) offers only an override, which asks for a reason and goes through
     with one;
  5. the events page pages back with "Load older", keeps what it loaded while it follows
     new events, and filters by a kind family.
The rollout view of step 3 is saved as a screenshot (--screenshot; docs/console.md shows one).

Every wait polls with a deadline (WebDriverWait); none sleeps a fixed time. Exits 77, which
ctest reports as skipped, when selenium or chromium-driver is not installed
(.ci/install-deps installs both).

  tests/console/console_test.py --tide build/tide --source . [--screenshot out.png]
"""

import argparse
import json
import shutil
import sys
import tempfile
import traceback
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "support"))
from test_host import Host as BaseHost, kDeadlineSeconds, poll  # noqa: E402

kSkipped = 77

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


# Policies the test adds to the shipped ones: a soft deny and a two-person approval, each
# for a namespace of its own (approval_plans_manifest).
kTestPolicies = {
    "console_test_soft_deny.lua": """
return {
  name = "console-test-soft-deny",
  level = "soft",
  applies = function(op) return op.plan.namespace == "console-soft" end,
  decide = function(op, ctx) return deny("console-soft is frozen, softly") end,
}
""",
    "console_test_two_approvals.lua": """
return {
  name = "console-test-two-approvals",
  level = "hard",
  applies = function(op) return op.plan.namespace == "console-pair" end,
  decide = function(op, ctx) return manual{ approvals = 2, reason = "console-pair needs two people" } end,
}
""",
}


def approval_plans_manifest(*namespaces):
    """A plan of one small instance per namespace (named after it), and its first deployment."""
    plans = [{"name": ns, "namespace": ns, "serviceName": ns,
              "matchingComputeCapabilities": [
                  {"capabilityType": "CPU", "comparator": "eq", "capabilityNames": ["intel-xeon"]}],
              "applications": [{"payloadName": "web", "resources": {"cores": 1, "memory": 1}}]}
             for ns in namespaces]
    deployments = [{"deployment_plan_name": ns, "deployment_id": f"{ns}-1", "instance_count": 1,
                    "payload_coordinates": [{"payload_name": "web", "coordinates": {"image": "nginx:1"}}]}
                   for ns in namespaces]
    return json.dumps({"plans": plans, "deployments": deployments})


def Host(tide, source):
    """`tide serve` with the shipped policies and kTestPolicies (tests/support/test_host.py)."""
    return BaseHost(tide, source, extra_policies=kTestPolicies, prefix="tide-console-test-")


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

    def control_state(self, scope_css, control):
        """[enabled, title] of a control button; None when it is not on the page."""
        return self.driver.execute_script(
            "const b = document.querySelector(arguments[0]);"
            "return b ? [!b.disabled, b.title] : null;", f'{scope_css} [data-control="{control}"]')

    def event_seqs(self):
        """The seqs of the events page's rows, top (newest) to bottom."""
        return self.driver.execute_script(
            "return [...document.querySelectorAll('#events tbody tr td:first-child')]"
            ".map((td) => Number(td.textContent)).filter((seq) => seq > 0);")


def waiting_create(host, plan):
    reply = host.get(f"/v1/operations?state=PENDING_APPROVAL&plan={plan}")
    creates = [op for op in reply["items"] if op["type"] == "CREATE"]
    return creates[0] if creates else None


def contiguous_descending(seqs):
    return all(newer == older + 1 for newer, older in zip(seqs, seqs[1:]))


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
        # The admin works with a token of its own: a token bootstrap-admin minted counts as
        # bootstrap-admin for four eyes, so alice could not approve what bootstrap-admin asks.
        status, reply, _ = host.call("POST", "/v1/tokens", host.admin, {"name": "ops", "role": "admin"})
        assert status == 201, f"creating ops's token: {status} {reply}"
        host.admin = reply["token"]

        # The console and its headers.
        with urllib.request.urlopen(host.url + "/") as reply:
            page = reply.read().decode()
            assert "/console/app.js" in page
            assert reply.headers["Content-Security-Policy"].startswith("default-src 'self'")
            assert reply.headers["X-Content-Type-Options"] == "nosniff"
            assert reply.headers["X-Frame-Options"] == "DENY"

        # Step 4's operations, asked for now so that they wait by then.
        host.apply_text(approval_plans_manifest("console-soft", "console-pair"), "the approval plans")

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
        console.until("the admin signed in", lambda: console.text("#who") == "ops (admin)")
        console.until("the waiting CREATE in the inbox", lambda: console.find(card))
        assert "CREATE" in console.text(card)
        assert console.text(f'{card} [data-field="requested_by"]') == "ops"
        console.click_control(card, "approve")
        refusal = (f"operation {operation_id} was requested by ops; it must be approved by "
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
        # The requests from here on, to count the history's reads below.
        console.driver.execute_script("performance.setResourceTimingBufferSize(100000); performance.clearResourceTimings();")
        console.go(f"#/plans/{canary}")
        rollout = '#rollout[data-deployment="canary-v2"]'
        console.until("canary-v2 to wait for a promote at step 1 of 2",
                      lambda: console.text(f'{rollout} [data-field="step"]') == "1 of 2"
                      and console.text(f'{rollout} [data-field="waiting_for"]') == "promotion")
        if arguments.screenshot:
            console.driver.execute_script("window.scrollTo(0, 0)")  # the approvals clicked above scrolled it
            console.driver.save_screenshot(arguments.screenshot)

        # Only a person's pause can be resumed: the strategy's own pause is moved on by promote.
        resume = console.control_state(rollout, "resume")
        assert resume is not None and not resume[0] and "paused by its strategy" in resume[1], resume
        assert console.control_state(rollout, "retry")[0] is False
        assert console.control_state(rollout, "promote")[0] is True
        console.click_control(rollout, "pause")
        console.until("resume to turn on and pause off once alice holds the rollout",
                      lambda: console.control_state(rollout, "resume") == [True, "lift the hold: the strategy decides again"]
                      and console.control_state(rollout, "pause") == [False, "paused by alice already"])

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
        assert [(e["actor"], e["data"].get("reason")) for e in controls] == [("alice", ""), ("alice", "looks good")], \
            controls
        console.until("promote to grey out once canary-v2 completed", lambda: console.control_state(rollout, "promote")
                      == [False, "deployment 'canary-v2' is COMPLETED; only a rollout in progress can be promoted"])
        # Each redraw read only the history's new events: the whole of it once, on the first draw.
        history_reads = console.driver.execute_script(
            "return performance.getEntriesByType('resource').map((e) => e.name)"
            ".filter((n) => n.includes('subject=deployment%2Fnginx-canary%2Fcanary-v2'));")
        assert len(history_reads) >= 3, history_reads
        assert sum(1 for n in history_reads if n.endswith("after=0")) == 1, history_reads
        assert console.control_state(rollout, "rollback")[0] is True  # back to canary-v1

        # Any deployment of the plan, with its history: canary-v1 has nothing to roll back to.
        console.until("the link to canary-v1", lambda: console.click('#deployments a[href$="/deployments/canary-v1"]'))
        older = '#rollout[data-deployment="canary-v1"]'
        console.until("canary-v1's rollout", lambda: console.find(older) and console.find("#older-deployment"))
        assert console.text(f'{older} [data-field="state"]') == "COMPLETED"
        assert "nothing to roll back to" in console.control_state(older, "rollback")[1]
        assert console.control_state(older, "rollback")[0] is False
        history = console.text("#history tbody")
        assert "deployment.created" in history and "deployment.state" in history, history
        subjects = console.driver.execute_script(
            "return [...document.querySelectorAll('#history tbody td:nth-child(5)')].map((td) => td.textContent);")
        assert set(subjects) == {"deployment/nginx-canary/canary-v1"}, subjects

        # A control the state allowed when the page was drawn, refused because it changed since:
        # a reason being typed holds the page still while the admin rolls canary-v2 back.
        console.go(f"#/plans/{canary}")
        console.until("a reason typed", lambda: console.type_into(f"{rollout} #control-reason", "too late"))
        assert console.control_state(rollout, "rollback")[0] is True
        status, reply, _ = host.call("POST", f"/v1/plans/{canary}/deployments/canary-v2/rollback", host.admin, {})
        assert status == 200, reply
        rolled_back = host.get("/v1/whoami")["last_event_seq"]
        console.until("the console to see the rollback", lambda: int(
            console.driver.execute_script("return document.body.dataset.eventsSeen || 0")) >= rolled_back)
        console.click_control(rollout, "rollback")
        console.until("the server's refusal word for word", lambda: console.text("#notice")
                      == "deployment 'canary-v2' is ROLLED_BACK; only a rollout in progress, completed or failed "
                      "can be rolled back")
        console.until("rollback to grey out", lambda: (console.control_state(rollout, "rollback") or [True])[0] is False)

        # 4. N of M: alice's approval counts, and the operation waits for a second person.
        pair = poll("console-pair's CREATE to wait", lambda: waiting_create(host, "console-pair"))["metadata"]["id"]
        soft = poll("console-soft's CREATE to wait", lambda: waiting_create(host, "console-soft"))["metadata"]["id"]
        pair_card, soft_card = f'article[data-operation="{pair}"]', f'article[data-operation="{soft}"]'
        console.go("#/approvals")
        console.click_control(pair_card, "approve")
        console.until("1 of 2 approvals", lambda: console.text(f'{pair_card} [data-field="approvals"]')
                      == "1 of 2 approvals (alice); 1 more needed")
        assert host.get(f"/v1/operations/{pair}")["state"] == "PENDING_APPROVAL"
        assert console.control_state(pair_card, "approve") == [False, "alice approved it already"]

        # A soft deny takes only an override, and an override only with a reason.
        console.until("the soft-denied operation", lambda: console.find(f'{soft_card} [data-field="soft-deny"]'))
        assert console.control_state(soft_card, "approve") is None
        console.click_control(soft_card, "override")
        console.until("the console to ask for a reason", lambda: console.text("#notice")
                      == f"Override operation {soft}: give a reason; it is recorded with the override.")
        assert host.get(f"/v1/operations/{soft}")["state"] == "PENDING_APPROVAL"
        console.until("a reason typed", lambda: console.type_into(f'{soft_card} [data-field="reason"]', "hotfix agreed"))
        console.click_control(soft_card, "override")
        console.until("the override to succeed", lambda: console.text("#notice") == f"Override operation {soft}: done")
        overridden = host.get(f"/v1/operations/{soft}")
        assert overridden["state"] != "PENDING_APPROVAL" and overridden["approved_by"] == "alice", overridden
        given = overridden["decision"]["approvals"]["given"]
        assert [(g["actor"], g["override"], g["reason"]) for g in given] == [("alice", True, "hotfix agreed")], given

        # 5. Enough events that the newest page does not hold them all.
        for number in range(max(0, 500 - host.get("/v1/whoami")["last_event_seq"])):
            status, reply, _ = host.call("POST", "/v1/capabilities", host.admin,
                                         {"name": f"filler-{number}", "type": "CPU", "score": 1})
            assert status == 201, reply
        console.go("#/events")
        first = console.until("the newest 200 events", lambda: (lambda seqs: seqs if len(seqs) >= 200 else None)(
            console.event_seqs()))
        assert contiguous_descending(first) and first[-1] > 1, first
        console.until("Load older", lambda: console.click("#load-older"))
        console.until("200 older events below the first page",
                      lambda: console.event_seqs()[-1:] == [first[-1] - 200])
        assert contiguous_descending(console.event_seqs())
        status, _, _ = host.call("POST", "/v1/capabilities", host.admin, {"name": "probe-2", "type": "CPU", "score": 1})
        assert status == 201
        probe = host.get("/v1/whoami")["last_event_seq"]
        console.until("the new event on top, the older ones kept", lambda: (lambda seqs: seqs and seqs[0] >= probe
                      and seqs[-1] == first[-1] - 200 and contiguous_descending(seqs))(console.event_seqs()))

        # A family: every deployment.* event, all of them on the page, so nothing older to load.
        console.until("the kind filter", lambda: console.type_into("form.filter input", "deployment"))
        console.find("form.filter button")[0].click()
        def every_deployment_event():
            expected = [e["seq"] for e in host.get("/v1/events?kind=deployment.*&limit=1000")["items"]]
            return console.event_seqs() == expected[::-1] and "nothing older" in console.text("#events-range")

        console.until("every deployment.* event, newest first", every_deployment_event)
        kinds = console.driver.execute_script(
            "return [...document.querySelectorAll('#events tbody tr td:nth-child(4)')].map((td) => td.textContent);")
        assert kinds and all(kind.startswith("deployment.") for kind in kinds), kinds
        assert console.driver.execute_script("return document.getElementById('load-older').disabled") is True
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
