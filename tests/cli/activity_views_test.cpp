// The views of `tide status`, `tide operations show`, `tide instances show` and the
// instance list's state and waiting operations, as pure functions of the server's JSON.

#include <sstream>
#include <string>

#include <doctest/doctest.h>

#include "host/cli/views.h"
#include "tests/support/text.h"

using namespace tide::cli;
using tide::testing::contains;

namespace {

template <class Print>
std::string printedBy(Print print, const Json& value) {
  std::ostringstream out;
  print(out, value);
  return out.str();
}

// GET /v1/operations/{id} of a DELETE that two approvers must approve, one has.
Json deleteWaitingForASecondApprover() {
  return Json::parse(R"json({
    "metadata": {"id": 12, "generation": 4, "created_at": "2026-11-27T10:00:00.000Z",
                 "updated_at": "2026-11-27T10:05:00.000Z"},
    "meta_instance": "web-abc", "plan": "web-prod", "type": "DELETE", "intent": "user",
    "requested_by": "otto", "approved_by": "", "attempts": 0, "next_attempt_at": "", "priority": 10,
    "state": "PENDING_APPROVAL", "message": "prod deletes need two approvers",
    "decision": {"outcome": "PENDING_APPROVAL", "summary": "prod deletes need two approvers", "overridable": false,
                 "approvals": {"required": 2, "role": "approver", "distinct_from": ["requester"],
                               "given": [{"actor": "alice", "role": "approver", "override": false,
                                          "reason": "checked the backups", "at": "2026-11-27T10:05:00.000Z"}]}},
    "decisions": [
      {"id": 31, "operation_id": 12, "policy": "prod-guard", "script_sha256": "0123456789abcdef0123",
       "verdict": "manual", "reasons": ["prod deletes need two approvers"], "duration_us": 1840,
       "error_class": "", "at": "2026-11-27T10:00:00.100Z"},
      {"id": 32, "operation_id": 12, "policy": "business-hours", "script_sha256": "fedcba9876543210fedc",
       "verdict": "abstain", "reasons": [], "duration_us": 95, "error_class": "timeout",
       "at": "2026-11-27T10:00:00.100Z"}
    ],
    "approvals": {"required": 2, "counted": ["alice"], "still_needed": 1, "summary": "1 of 2 approvals (alice)"}
  })json");
}

}  // namespace

TEST_CASE("cli: operations show prints the operation with its approvals and each policy's decision") {
  const std::string text = printedBy(printOperationInfo, deleteWaitingForASecondApprover());
  CHECK(text.starts_with("Operation Info\nID:                       12\nType:                     DELETE\n"));
  CHECK(contains(text, "Meta Instance:            web-abc\n"));
  CHECK(contains(text,
                 "Status\n    State:                PENDING_APPROVAL\n"
                 "    Message:              prod deletes need two approvers\n"));
  CHECK(contains(text,
                 "Approvals\n"
                 "    Progress:             1 of 2 approvals (alice)\n"
                 "    Still Needed:         1\n"
                 "    Role Required:        approver\n"
                 "    Distinct From:        requester\n"
                 "    Given:                alice (approver) at 2026-11-27T10:05:00.000Z: checked the backups\n"));
  CHECK(contains(text, "Policy Decisions\n    Outcome:              PENDING_APPROVAL\n"));
  // The script's digest is shortened; durations read in their unit; an error is named.
  CHECK(text.ends_with(
      "|     Policy     |         Verdict         |             Reasons             |    Script    | Duration |"
      "            At            |\n"
      "+----------------+-------------------------+---------------------------------+--------------+----------+"
      "--------------------------+\n"
      "|   prod-guard   |         manual          | prod deletes need two approvers | 0123456789ab | 1.84 ms  |"
      " 2026-11-27T10:00:00.100Z |\n"
      "| business-hours | abstain (timeout error) |                                 | fedcba987654 |  95 us   |"
      " 2026-11-27T10:00:00.100Z |\n"
      "+----------------+-------------------------+---------------------------------+--------------+----------+"
      "--------------------------+\n"
      "Total: 2\n"));

  // Without decisions (an operation nobody asked the policies about yet), it says so.
  Json bare = deleteWaitingForASecondApprover();
  bare["decisions"] = Json::array();
  bare.erase("approvals");
  bare["decision"] = nullptr;
  const std::string plain = printedBy(printOperationInfo, bare);
  CHECK(plain.ends_with("Policy Decisions\nNo policy decisions recorded\n"));
  CHECK_FALSE(contains(plain, "Approvals\n"));
}

TEST_CASE("cli: instances show prints the runtime instances and the newest operations first") {
  Json view = Json::parse(R"json({
    "meta_instance": {"metadata": {"id": 3, "generation": 5, "created_at": "2026-11-27T09:00:00.000Z"},
                      "name": "web-abc", "plan": "web-prod", "deployment_id": "v2", "state": "ACTIVE",
                      "message": ""},
    "runtime_instances": [
      {"metadata": {"id": 7}, "node": "n1", "is_active": false, "state": "TERMINATED",
       "ports": {"tcp/80": 30001}, "health": {"healthy": true, "ready_since": "2026-11-27T09:01:00Z"},
       "coordinates": {"image": "nginx:1.26"}, "message": "replaced"},
      {"metadata": {"id": 9}, "node": "n2", "is_active": true, "state": "RUNNING",
       "ports": {"tcp/80": 30002}, "health": {"healthy": true, "ready_since": "2026-11-27T09:30:00Z"},
       "coordinates": {"web-payload": {"image": "nginx:1.27"}}, "message": ""}
    ],
    "operations": [
      {"metadata": {"id": 1}, "meta_instance": "web-abc", "plan": "web-prod", "type": "CREATE", "state": "SUCCEEDED"},
      {"metadata": {"id": 2}, "meta_instance": "web-abc", "plan": "web-prod", "type": "UPDATE", "state": "SUCCEEDED"},
      {"metadata": {"id": 3}, "meta_instance": "web-abc", "plan": "web-prod", "type": "RELOCATE", "state": "RUNNING"}
    ]
  })json");
  std::ostringstream out;
  printInstanceInfo(out, view, 2);
  const std::string text = out.str();
  CHECK(text.starts_with("Meta Instance Info\nName:                     web-abc\n"));
  CHECK(contains(text, "Status\n    State:                ACTIVE\n"));
  // A runtime instance that no longer runs is not healthy, whatever its last probe said.
  CHECK(contains(text, "| 7  |    n1     |   false   | TERMINATED | tcp/80 -> 30001 |  false  |"));
  CHECK(contains(text, "| 9  |    n2     |   true    |  RUNNING   | tcp/80 -> 30002 |  true   |"));
  // Coordinates by payload, as the host keeps them, or flat.
  CHECK(contains(text, " Image: nginx:1.27 "));
  CHECK(contains(text, " Image: nginx:1.26 "));
  // The two newest operations, newest first, and where the rest are.
  CHECK(text.find("RELOCATE") < text.find("UPDATE"));
  CHECK_FALSE(contains(text, "CREATE"));
  CHECK(
      text.ends_with("Total: 2\nShowing the newest 2 of 3 operations; all of them: tide operations list "
                     "--meta-instance web-abc\n"));

  view["runtime_instances"] = Json::array();
  view["operations"] = Json::array();
  const std::string empty = printedBy([](std::ostream& o, const Json& v) { printInstanceInfo(o, v); }, view);
  CHECK(contains(empty, "Runtime Instances\nNo runtime instances: it has not been placed on a node\n"));
  CHECK(empty.ends_with("Operations\nNo operations found\n"));
}

TEST_CASE("cli: the instance list shows each meta instance's state and the operation it waits on") {
  Json instances = Json::parse(R"json([
    {"meta_instance": {"name": "web-gone", "plan": "web", "deployment_id": "v1", "state": "DELETED"},
     "runtime_instances": [{"metadata": {"id": 1}, "node": "n1", "is_active": true, "state": "TERMINATED",
                            "ports": {}, "health": {"healthy": true, "ready_since": "2026-11-27T09:00:00Z"}}],
     "unfinished_operation": null},
    {"meta_instance": {"name": "web-new", "plan": "web", "deployment_id": "v1", "state": "ACTIVE"},
     "runtime_instances": [],
     "unfinished_operation": {"metadata": {"id": 4}, "type": "CREATE", "state": "PENDING",
                              "message": "waiting for placement: no node has capabilities tpu-v9"}}
  ])json");
  const std::string text = printedBy(printInstanceTable, instances);
  CHECK(contains(text, "| Meta Instance Name | Deployment Plan Name | Deployment ID |  State  |"));
  CHECK(contains(text, "| web-gone           | web                  | v1            | DELETED | Node Name: n1"));
  CHECK(contains(text, "Healthy: false"));
  CHECK_FALSE(contains(text, "Healthy: true"));
  CHECK(contains(text, "| web-new            | web                  | v1            | ACTIVE  |"));
  CHECK(contains(text, "Message: waiting for placement: no node has capabilities tpu-v9"));
}

TEST_CASE("cli: the status view shows the alarms and counts and then rollouts in flight and approvals waiting") {
  Json status = Json::parse(R"json({
    "control_loop": {"halted": true,
                     "halt": {"kind": "alarm.discrepancy", "reason": "3 instances disagree with their drivers",
                              "since": "2026-11-27T10:00:00.000Z", "by": "observer"},
                     "partition": {"since": "2026-11-27T09:59:00.000Z", "nodes": ["n3", "n4"],
                                   "message": "2 of 4 nodes lost at once"}},
    "plans": {"total": 3, "by_state": {"ACTIVE": 2, "INACTIVE": 1}},
    "rollouts": [{"plan": "web", "deployment_id": "v2", "state": "PAUSED", "message": "", "strategy": "canary",
                  "step": 1, "steps": 2, "weights": {"new": 50, "old": 50}, "waiting_for": "promotion",
                  "instances": {"new": {"total": 2, "ready": 1}, "old": {"total": 2, "ready": 2}}}],
    "waiting_for_approval": [{"id": 12, "type": "DELETE", "meta_instance": "web-abc", "plan": "web-prod",
                              "requested_by": "otto", "approvals": "1 of 2 approvals (alice)", "still_needed": 1,
                              "message": "prod deletes need two approvers"}],
    "nodes": {"total": 4, "by_state": {"ALLOCATED": 3, "CORDONED": 1}, "unreachable_agents": ["n3", "n4"]},
    "plan_instances": [
      {"name": "web", "deployment_id": "v2", "desired": 4, "under_replicated": true,
       "instances": {"total": 4, "running": 3, "ready": 3, "pending": 0, "failed": 1}},
      {"name": "web-prod", "deployment_id": "p1", "desired": 2, "under_replicated": false,
       "instances": {"total": 2, "running": 2, "ready": 2, "pending": 0, "failed": 0}}],
    "held_rollouts": [{"plan": "web", "deployment_id": "v2", "state": "PAUSED", "message": "waiting for promotion",
                       "holds": [{"kind": "paused", "reason": "waiting for promotion"},
                                 {"kind": "hook", "operation": 14,
                                  "reason": "operation 14 (UPDATE of web-x) held by hook gate: night"}]}],
    "failed_scripts": [{"path": "policies/broken.lua", "kind": "policy", "status": "stale",
                        "last_attempt_at": "2026-11-27T09:00:00.000Z", "last_error": "broken.lua:2: 'end' expected"}]
  })json");
  const std::string text = printedBy(printStatus, status);
  CHECK(text.starts_with("Control Loop HALTED\n    Reason:               3 instances disagree with their drivers\n"));
  CHECK(contains(text,
                 "Partition Alarm: lost nodes' instances are not replaced\n"
                 "    Since:                2026-11-27T09:59:00.000Z\n"
                 "    Nodes:                n3, n4\n"));
  CHECK(contains(text,
                 "Deployment Plans:         3 (ACTIVE 2, INACTIVE 1)\n"
                 "Nodes:                    4 (ALLOCATED 3, CORDONED 1)\n"
                 "Unreachable Agents:       n3, n4\n"
                 "Under-Replicated Plans:   web (3 of 4 running)\n"
                 "\n"
                 "Scripts That Failed to Load\n"));
  CHECK(contains(
      text, "| policies/broken.lua | policy | stale  | 2026-11-27T09:00:00.000Z | broken.lua:2: 'end' expected |\n"));
  CHECK(contains(
      text, "| Deployment Plan Name | Current Deployment | Desired | Running | Ready | Failed | Under-Replicated |\n"));
  CHECK(contains(
      text, "|         web          |         v2         |    4    |    3    |   3   |   1    |       yes        |\n"));
  CHECK(contains(
      text, "|       web-prod       |         p1         |    2    |    2    |   2   |   0    |                  |\n"));
  CHECK(contains(text, "Held Rollouts\n"));
  CHECK(contains(
      text,
      "|         web          |      v2       | PAUSED | paused  |                  waiting for promotion"
      "                  |\n"
      "|         web          |      v2       | PAUSED |  hook   | operation 14 (UPDATE of web-x) held by hook "
      "gate: night |\n"));
  CHECK(contains(text,
                 "| Deployment Plan Name | Deployment ID | State  | Strategy | Step |    Weights     | New Ready |"
                 " Old Ready | Waiting For |\n"));
  CHECK(contains(text,
                 "|         web          |      v2       | PAUSED |  canary  | 1/2  | new 50, old 50 |    1/2    |"
                 "    2/2    |  promotion  |\n"));
  CHECK(contains(text,
                 "|      12      | DELETE |      web-abc       |       web-prod       |     otto     |"
                 " 1 of 2 approvals (alice) | prod deletes need two approvers |\n"));

  // A quiet fleet.
  Json quiet = {{"control_loop", {{"halted", false}, {"halt", nullptr}, {"partition", nullptr}}},
                {"plans", {{"total", 0}, {"by_state", Json::object()}}},
                {"rollouts", Json::array()},
                {"waiting_for_approval", Json::array()},
                {"nodes", {{"total", 0}, {"by_state", Json::object()}, {"unreachable_agents", Json::array()}}},
                {"plan_instances", Json::array()},
                {"held_rollouts", Json::array()},
                {"failed_scripts", Json::array()}};
  CHECK(printedBy(printStatus, quiet) ==
        "Control Loop\n"
        "    State:                running\n"
        "\n"
        "Deployment Plans:         0\n"
        "Nodes:                    0\n"
        "\n"
        "Deployment Plan Instances\n"
        "No deployment plans\n"
        "\n"
        "Rollouts in Flight\n"
        "No rollouts in flight\n"
        "\n"
        "Held Rollouts\n"
        "No rollouts are held\n"
        "\n"
        "Waiting for Approval\n"
        "No operations are waiting for approval\n");
}
