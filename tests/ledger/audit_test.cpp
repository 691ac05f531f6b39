// Retention and the audit of the event chain (host/ledger/ledger_audit.cpp): pruning by count
// and by age leaves a checkpoint the chain still verifies from, and every edit, deletion or
// reorder of what was kept (or of the checkpoint) is named by the first broken link.

#include <doctest/doctest.h>

#include <stdlib.h>

#include <filesystem>

#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include "host/ledger/ledger.h"
#include "host/ledger/ledger_internal.h"
#include "tests/ledger/ledger_test_util.h"

using namespace tide;
using namespace tide::ledger;
using tide::testing::appendEvents;
using tide::testing::LedgerFixture;

namespace {

model::RetentionPolicy byCount(int64_t count, int64_t batch = 5000) {
  model::RetentionPolicy policy;
  policy.events_max_count = count;
  policy.batch = batch;
  return policy;
}

std::vector<Event> allEvents(Ledger& ledger) {
  auto events = listAll(ledger.audit(), &AuditRecords::listEvents);
  REQUIRE(events.isOk());
  return *events;
}

model::AuditReport verified(Ledger& ledger) {
  auto report = ledger.audit().verifyAudit();
  REQUIRE_MESSAGE(report.isOk(), report.status().toString());
  return *report;
}

bool says(const model::AuditReport& report, const std::string& part) {
  return report.problem.find(part) != std::string::npos;
}

// A ledger file with 40 events of which the newest 10 are kept: a checkpoint at seq 31,
// kept events 32..41 (the last one the audit.pruned event).
struct PrunedFile {
  std::filesystem::path dir;
  std::string url;
  std::unique_ptr<LedgerFixture> fixture;

  PrunedFile() {
    dir = std::filesystem::temp_directory_path() / ("tide-audit-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    url = "sqlite://" + (dir / "tide.db").string();
    fixture = std::make_unique<LedgerFixture>(url);
    appendEvents(ledger(), 40);
    auto pruned = ledger().audit().prune(byCount(10), "test");
    REQUIRE_MESSAGE(pruned.isOk(), pruned.status().toString());
    REQUIRE(pruned->events == 31);
    REQUIRE(verified(ledger()).ok);
  }
  ~PrunedFile() {
    fixture.reset();
    std::filesystem::remove_all(dir);
  }
  Ledger& ledger() { return *fixture->ledger; }

  // Raw SQL on the file, as someone with the disk but not the host would write it.
  void tamper(const std::string& sql) {
    soci::session raw(soci::sqlite3, "db=" + (dir / "tide.db").string());
    raw << sql;
  }
  // What a host opening the file afresh sees.
  model::AuditReport reopenAndVerify() {
    fixture.reset();
    fixture = std::make_unique<LedgerFixture>(url);
    return verified(ledger());
  }
  // Reopens the file and checks that the first broken link is event `seq`, for `why`.
  model::AuditReport expectBrokenAt(int64_t seq, const std::string& why) {
    const model::AuditReport report = reopenAndVerify();
    CHECK_FALSE(report.ok);
    CHECK(report.broken_seq == seq);
    CHECK_MESSAGE(says(report, why), report.problem);
    return report;
  }
};

}  // namespace

TEST_CASE("audit: pruning by count keeps the newest events and the chain still verifies") {
  LedgerFixture f;
  appendEvents(*f.ledger, 30);
  auto pruned = f.ledger->audit().prune(byCount(10), "test");
  REQUIRE_MESSAGE(pruned.isOk(), pruned.status().toString());
  CHECK(pruned->events == 21);
  REQUIRE(pruned->checkpoint);
  CHECK(pruned->checkpoint->through_seq == 21);
  CHECK(pruned->checkpoint->rule == "events_max_count");
  CHECK(pruned->checkpoint->actor == "test");

  const std::vector<Event> kept = allEvents(*f.ledger);
  REQUIRE(kept.size() == 10);  // 9 old ones and the audit.pruned event
  CHECK(kept.front().seq == 22);
  CHECK(kept.back().kind == "audit.pruned");
  CHECK(kept.back().data["events"] == 21);
  CHECK(kept.back().data["through_seq"] == 21);
  CHECK(kept.back().data["through_hash"] == pruned->checkpoint->through_hash);

  const model::AuditReport report = verified(*f.ledger);
  CHECK(report.ok);
  CHECK(report.first_seq == 22);
  CHECK(report.last_seq == 31);
  CHECK(report.events == 10);
  CHECK(report.head_hash == kept.back().hash);
  REQUIRE(report.checkpoint);
  CHECK(report.checkpoint->through_seq == 21);
  CHECK(f.ledger->checkInvariants()->empty());

  // At the limit now: pruning again deletes and appends nothing.
  auto again = f.ledger->audit().prune(byCount(10), "test");
  REQUIRE(again.isOk());
  CHECK(again->total() == 0);
  CHECK(f.eventCount() == 10);
}

TEST_CASE("audit: pruning by age takes the oldest events up to the first young one, on the ledger's clock") {
  LedgerFixture f;
  appendEvents(*f.ledger, 5, "old");
  f.clock.advance(std::chrono::hours(24 * 10));
  appendEvents(*f.ledger, 3, "young");
  // An old timestamp after a young one (a wall clock stepped back) stays: only a prefix goes.
  f.clock.advance(-std::chrono::hours(24 * 10));
  appendEvents(*f.ledger, 1, "stepped-back");
  f.clock.advance(std::chrono::hours(24 * 10));

  model::RetentionPolicy policy;
  policy.events_max_age_days = 7;
  auto pruned = f.ledger->audit().prune(policy, "retention");
  REQUIRE_MESSAGE(pruned.isOk(), pruned.status().toString());
  CHECK(pruned->events == 5);
  REQUIRE(pruned->checkpoint);
  CHECK(pruned->checkpoint->rule == "events_max_age_days");
  const std::vector<Event> kept = allEvents(*f.ledger);
  REQUIRE(kept.size() == 5);
  CHECK(kept.front().subject == "test/young");
  CHECK(kept[3].subject == "test/stepped-back");
  CHECK(verified(*f.ledger).ok);

  // Nothing is old enough until the clock moves on.
  CHECK(f.ledger->audit().prune(policy, "retention")->total() == 0);
  f.clock.advance(std::chrono::hours(24 * 8));
  auto later = f.ledger->audit().prune(policy, "retention");
  REQUIRE(later.isOk());
  CHECK(later->events == 5);  // every event was old: only the new audit.pruned event is left
  CHECK(f.eventCount() == 1);
  CHECK(verified(*f.ledger).ok);
}

TEST_CASE("audit: pruning an empty or small ledger, or with every rule off, is a no-op") {
  LedgerFixture f;
  auto empty = f.ledger->audit().prune(byCount(10), "test");
  REQUIRE(empty.isOk());
  CHECK(empty->total() == 0);
  CHECK_FALSE(empty->checkpoint);
  CHECK(f.eventCount() == 0);

  appendEvents(*f.ledger, 5);
  CHECK(f.ledger->audit().prune(byCount(10), "test")->total() == 0);
  CHECK(f.ledger->audit().prune(model::RetentionPolicy{}, "test")->total() == 0);
  CHECK(f.eventCount() == 5);
  const model::AuditReport report = verified(*f.ledger);
  CHECK(report.ok);
  CHECK_FALSE(report.checkpoint);
  CHECK(report.first_seq == 1);
}

TEST_CASE("audit: a large prune goes in batches, each leaving a chain that verifies") {
  LedgerFixture f;
  appendEvents(*f.ledger, 40);
  int rounds = 0;
  while (true) {
    auto step = f.ledger->audit().prune(byCount(10, 7), "test");
    REQUIRE_MESSAGE(step.isOk(), step.status().toString());
    CHECK(step->events <= 7);
    CHECK(verified(*f.ledger).ok);
    if (step->events < 7) break;
    REQUIRE(++rounds < 20);
  }
  CHECK(f.eventCount() == 10);
  CHECK(verified(*f.ledger).checkpoint->through_seq == allEvents(*f.ledger).front().seq - 1);
}

TEST_CASE("audit: tampering with what a prune kept is named by the first broken link") {
  PrunedFile ledger;
  SUBCASE("an edited event") {
    ledger.tamper("UPDATE events SET data = '{\"i\": 99}' WHERE seq = 35");
    const model::AuditReport report = ledger.expectBrokenAt(35, "event seq 35: hash mismatch");
    CHECK_MESSAGE(says(report, "(checked from the checkpoint at seq 31)"), report.problem);
    // The host refuses to start its loop on it, and so would the offline check.
    CHECK_FALSE(ledger.ledger().checkInvariants()->empty());
    auto offline = verifyLedgerAt(ledger.url);
    REQUIRE(offline.isOk());
    CHECK(offline->broken_seq == 35);
  }
  SUBCASE("a deleted event in the middle") {
    ledger.tamper("DELETE FROM events WHERE seq = 36");
    ledger.expectBrokenAt(36, "event seq 36: missing (the next event is seq 37)");
  }
  SUBCASE("two events swapped") {
    ledger.tamper("UPDATE events SET seq = -1 WHERE seq = 33");
    ledger.tamper("UPDATE events SET seq = 33 WHERE seq = 34");
    ledger.tamper("UPDATE events SET seq = 34 WHERE seq = -1");
    ledger.expectBrokenAt(33, "hash mismatch");
  }
  SUBCASE("the first kept event deleted, so the chain no longer meets the checkpoint") {
    ledger.tamper("DELETE FROM events WHERE seq = 32");
    ledger.expectBrokenAt(32, "missing");
  }
  SUBCASE("an edited checkpoint hash") {
    ledger.tamper("UPDATE audit_checkpoints SET through_hash = 'beef'");
    ledger.expectBrokenAt(32, "does not join the checkpoint");
  }
  SUBCASE("a forged prune: more events deleted and the checkpoint moved to match") {
    const Event last_deleted = allEvents(ledger.ledger())[2];  // seq 34
    ledger.tamper("DELETE FROM events WHERE seq <= 34");
    ledger.tamper("UPDATE audit_checkpoints SET through_seq = 34, through_hash = '" + last_deleted.hash + "'");
    // The audit.pruned event names the real checkpoint.
    ledger.expectBrokenAt(
        41, "audit.pruned records the checkpoint at seq 31, but the newest checkpoint is at seq 34 (checked");
  }
  SUBCASE("the checkpoint deleted") {
    ledger.tamper("DELETE FROM audit_checkpoints");
    ledger.expectBrokenAt(1, "event seq 1: missing (the next event is seq 32)");
  }
  SUBCASE("the newest events cut off behind the running host's back") {
    ledger.tamper("DELETE FROM events WHERE seq >= 40");
    const model::AuditReport report = verified(ledger.ledger());  // the same Ledger: it knows it wrote seq 41
    CHECK(report.broken_seq == 40);
    CHECK_MESSAGE(says(report, "this host appended events through seq 41"), report.problem);
  }
}

TEST_CASE("audit: a prune over a broken chain is refused and deletes nothing") {
  PrunedFile ledger;
  appendEvents(ledger.ledger(), 20);
  ledger.tamper("UPDATE events SET actor = 'mallory' WHERE seq = 33");
  const int64_t before = allEvents(ledger.ledger()).size();
  auto refused = ledger.ledger().audit().prune(byCount(10), "test");
  CHECK(refused.status().code() == Code::kInternal);
  CHECK(refused.status().message().find("event seq 33: hash mismatch") != std::string::npos);
  CHECK(static_cast<int64_t>(allEvents(ledger.ledger()).size()) == before);
  CHECK(verified(ledger.ledger()).broken_seq == 33);
}

TEST_CASE("audit: after a restart the chain continues from the kept events, or from the checkpoint alone") {
  PrunedFile ledger;
  const model::AuditReport before = ledger.reopenAndVerify();
  REQUIRE(before.ok);
  appendEvents(ledger.ledger(), 3);
  std::vector<Event> events = allEvents(ledger.ledger());
  CHECK(events.back().seq == 44);
  CHECK(events[events.size() - 3].prev_hash == before.head_hash);
  CHECK(verified(ledger.ledger()).ok);

  // A restarted host whose first write is a prune of every event: its own audit.pruned event
  // chains on the checkpoint that same prune wrote.
  ledger.reopenAndVerify();
  ledger.fixture->clock.advance(std::chrono::hours(24 * 30));
  model::RetentionPolicy all_old;
  all_old.events_max_age_days = 1;
  auto pruned = ledger.ledger().audit().prune(all_old, "test");
  REQUIRE_MESSAGE(pruned.isOk(), pruned.status().toString());
  CHECK(pruned->events == 13);
  const model::AuditReport report = ledger.reopenAndVerify();
  CHECK(report.ok);
  CHECK(report.first_seq == 45);
  CHECK(report.events == 1);
  appendEvents(ledger.ledger(), 2);
  CHECK(allEvents(ledger.ledger()).back().seq == 47);
  CHECK(ledger.reopenAndVerify().ok);
}

TEST_CASE("audit: decisions go by age, but never those of an unfinished operation") {
  LedgerFixture f;
  const Operation unfinished = f.addOperation(f.addInstance());
  const int64_t finished_id = unfinished.meta.id + 1000;  // gone: counts as finished
  REQUIRE(f.ledger
              ->operations().recordDecisions({{0, unfinished.meta.id, "p", "sha", "manual", Json::array(), 1, "", ""},
                                 {0, finished_id, "p", "sha", "approve", Json::array(), 1, "", ""}})
              .isOk());
  f.clock.advance(std::chrono::hours(24 * 5));
  REQUIRE(f.ledger->operations().recordDecisions({{0, finished_id, "p", "sha", "approve", Json::array(), 1, "", ""}}).isOk());

  model::RetentionPolicy policy;
  policy.decisions_max_age_days = 3;
  auto pruned = f.ledger->audit().prune(policy, "retention");
  REQUIRE(pruned.isOk());
  CHECK(pruned->decisions == 1);
  CHECK(pruned->events == 0);
  CHECK_FALSE(pruned->checkpoint);
  CHECK(f.ledger->operations().listDecisions(unfinished.meta.id)->size() == 1);
  CHECK(f.ledger->operations().listDecisions(finished_id)->size() == 1);  // the young one
  const Event recorded = allEvents(*f.ledger).back();
  CHECK(recorded.kind == "audit.pruned");
  CHECK(recorded.data["decisions"] == 1);
  CHECK(recorded.data["through_seq"] == 0);
  CHECK(verified(*f.ledger).ok);

  REQUIRE(
      f.ledger->operations().setOperationState(unfinished.meta.id, model::OperationState::kCancelled, std::nullopt, "test").isOk());
  CHECK(f.ledger->audit().prune(policy, "retention")->decisions == 1);
  CHECK(f.ledger->operations().listDecisions(unfinished.meta.id)->empty());
}

// Gives operation `id` (PENDING_APPROVAL) one approval by `actor`.
void approveOnce(Ledger& ledger, int64_t id, const std::string& actor) {
  auto approved = ledger.operations().addApproval(id, std::nullopt, {actor, "approver", false, "", "", {}});
  REQUIRE_MESSAGE(approved.isOk(), approved.status().toString());
}

TEST_CASE("audit: approvals go with the operations that finished before the decisions' age, never orphaned") {
  std::string dir_pattern = (std::filesystem::temp_directory_path() / "tide-approvals-XXXXXX").string();
  REQUIRE(mkdtemp(dir_pattern.data()) != nullptr);
  const std::filesystem::path dir = dir_pattern;
  const std::string db_file = (dir / "tide.db").string();
  LedgerFixture f("sqlite://" + db_file);
  const std::string meta = f.addInstance();
  // An operation approved by two people that then finished, six days before the prune.
  const Operation old_op = f.addOperation(meta);
  REQUIRE(f.ledger->operations().setOperationState(old_op.meta.id, model::OperationState::kPendingApproval, std::nullopt, "approval")
              .isOk());
  Json two{{"approvals", {{"required", 2}}}};
  OperationUpdate needs_two;
  needs_two.decision = two;
  REQUIRE(f.ledger->operations().updateOperation(old_op.meta.id, needs_two, "approval").isOk());
  approveOnce(*f.ledger, old_op.meta.id, "alice");
  approveOnce(*f.ledger, old_op.meta.id, "carol");
  REQUIRE(f.ledger->operations().getOperation(old_op.meta.id)->state == model::OperationState::kApproved);
  REQUIRE(f.ledger->operations().setOperationState(old_op.meta.id, model::OperationState::kCancelled, std::nullopt, "test").isOk());
  // A row whose operation does not exist (written by hand: nothing in tide writes one).
  {
    soci::session raw(soci::sqlite3, "db=" + db_file);
    raw << "INSERT INTO operation_approvals (operation_id, actor, role, at) VALUES (99999, 'mallory', 'approver', "
           "'2000-01-01T00:00:00Z')";
  }
  f.clock.advance(std::chrono::hours(24 * 6));
  // One still waiting with an approval given six days ago, and one that finished today.
  const Operation waiting = f.addOperation(meta);
  REQUIRE(
      f.ledger->operations().setOperationState(waiting.meta.id, model::OperationState::kPendingApproval, std::nullopt, "approval")
          .isOk());
  REQUIRE(f.ledger->operations().updateOperation(waiting.meta.id, needs_two, "approval").isOk());
  approveOnce(*f.ledger, waiting.meta.id, "alice");
  f.clock.advance(std::chrono::hours(24 * 6));

  model::RetentionPolicy policy;
  policy.decisions_max_age_days = 3;
  policy.batch = 1;  // a round of several prunes: each deletes one row
  int64_t approvals = 0;
  for (int round = 0; round < 10; ++round) {
    auto pruned = f.ledger->audit().prune(policy, "retention");
    REQUIRE_MESSAGE(pruned.isOk(), pruned.status().toString());
    approvals += pruned->approvals;
    if (pruned->approvals == 0) break;
  }
  CHECK(approvals == 3);  // alice's and carol's of the finished operation, and the orphan
  CHECK(f.ledger->operations().listApprovals(old_op.meta.id)->empty());
  CHECK(f.ledger->operations().listApprovals(99999)->empty());
  REQUIRE(f.ledger->operations().listApprovals(waiting.meta.id)->size() == 1);  // its operation still waits
  const auto pruned_events = listAll(f.ledger->audit(), &AuditRecords::listEvents, {{"kind", "audit.pruned"}});
  REQUIRE(pruned_events.isOk());
  REQUIRE(!pruned_events->empty());
  CHECK(pruned_events->front().data["approvals"] == 1);

  // Finished now, it keeps its approval until it has been finished for three days.
  approveOnce(*f.ledger, waiting.meta.id, "carol");
  REQUIRE(
      f.ledger->operations().setOperationState(waiting.meta.id, model::OperationState::kRunning, std::nullopt, "executor").isOk());
  REQUIRE(
      f.ledger->operations().setOperationState(waiting.meta.id, model::OperationState::kSucceeded, std::nullopt, "executor").isOk());
  CHECK(f.ledger->audit().prune(policy, "retention")->approvals == 0);
  CHECK(f.ledger->operations().listApprovals(waiting.meta.id)->size() == 2);
  f.clock.advance(std::chrono::hours(24 * 4));
  policy.batch = 100;
  CHECK(f.ledger->audit().prune(policy, "retention")->approvals == 2);
  CHECK(f.ledger->operations().listApprovals(waiting.meta.id)->empty());
  f.ledger.reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("audit: script versions beyond the kept count go with their texts, but never a file's current or last good version") {
  LedgerFixture f;
  // The first version's text, kept for a restart's fallback, goes with its row; the last good one's stays.
  REQUIRE(f.ledger->audit().recordScriptVersion({0, "policies/a.lua", "policy", "first", "", "active", ""}).isOk());
  REQUIRE(f.ledger->audit().keepScriptText("first", "return 1").isOk());
  REQUIRE(f.ledger->audit().keepScriptText("active", "return 2").isOk());
  for (const char* status : {"active", "failed", "active", "failed", "active", "unloaded", "failed", "failed"}) {
    REQUIRE(f.ledger->audit().recordScriptVersion({0, "policies/a.lua", "policy", status, "", status, ""}).isOk());
  }
  REQUIRE(f.ledger->audit().recordScriptVersion({0, "policies/b.lua", "policy", "x", "", "active", ""}).isOk());
  model::RetentionPolicy policy;
  policy.script_versions_keep = 1;
  auto pruned = f.ledger->audit().prune(policy, "retention");
  REQUIRE(pruned.isOk());
  CHECK(pruned->script_versions == 6);
  CHECK_FALSE(f.ledger->audit().scriptText("first")->has_value());
  CHECK(f.ledger->audit().scriptText("active")->value() == "return 2");
  std::vector<std::string> left;
  auto versions = f.ledger->audit().listScriptVersions("policies/a.lua");
  REQUIRE(versions.isOk());
  for (const auto& v : *versions) left.push_back(v.status);
  // The newest of each status: the last active (a restart's fallback), unloaded, and the current failure.
  CHECK(left == std::vector<std::string>{"active", "unloaded", "failed"});
  CHECK(f.ledger->audit().listScriptVersions("policies/b.lua")->size() == 1);
  CHECK(f.ledger->audit().prune(policy, "retention")->total() == 0);
  CHECK(verified(*f.ledger).ok);
}

TEST_CASE("audit: the unfinished operation states the SQL binds are those isTerminal says no to") {
  const std::vector<model::OperationState>& unfinished = unfinishedOperationStates();
  for (model::OperationState state : model::valuesOf<model::OperationState>()) {
    const bool listed = std::find(unfinished.begin(), unfinished.end(), state) != unfinished.end();
    CHECK_MESSAGE(listed == !model::isTerminal(state), state);
  }
}
