#pragma once
// The event chain, retention, the control loop's halt and script versions (docs/architecture.md#retention-and-audit).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/core/status.h"
#include "host/ledger/ledger_types.h"

namespace tide::ledger {

// The ledger's audit trail; Ledger::audit(). Every method keeps ledger.h's contracts.
class AuditRecords : public Repository {
 public:
  explicit AuditRecords(LedgerCore& core) : Repository(core) {}
  AuditRecords(const AuditRecords&) = delete;
  AuditRecords& operator=(const AuditRecords&) = delete;

  // --- events ------------------------------------------------------------------------------
  // filters: kind (exact or "prefix.*"), subject, actor (exact); plan: the events of the
  // plan's own subject and of its deployments, meta instances, runtime instances and
  // operations; state (a comma-separated list: any of them): the state changes into one of
  // them (the "<record>.state" events whose data.to is one); since and until: a window of
  // `at` (since <= at < until), each a timestamp (kInvalidArgument naming the filter
  // otherwise). All are compared in the query, so a page holds `limit` matching events.
  Result<Page<Event>> listEvents(const ListOptions& options);
  int64_t lastEventSeq();
  // Blocks until an event with seq > `after` exists or `timeout` passes; true if one does.
  bool waitForEvents(int64_t after, std::chrono::milliseconds timeout);
  // For happenings that are not a record change: alarms, script reloads, controls.
  Status appendEvent(const std::string& kind, const std::string& subject, const Json& data, const std::string& actor);
  // Recomputes the hash chain; kInternal naming the first broken seq (verifyAudit's problem).
  Status verifyEventChain();

  // --- the control loop's halt -------------------------------------------------------------
  // The halt in force, or nullopt.
  Result<std::optional<ControlHalt>> controlHalt();
  // Halts the control loop: the halt row and an `alarm_kind` event {message: reason,
  // details...} in one transaction. Already halted: the halt in force, nothing written.
  Result<ControlHalt> haltControlLoop(const std::string& alarm_kind, const std::string& reason, const Json& details,
                                      const std::string& actor);
  // Ends the halt: deletes the row and appends `control.resumed` {ended: the halt} in one
  // transaction. kConflict when the loop is not halted.
  Result<ControlHalt> resumeControlLoop(const std::string& actor);

  // --- retention and audit -----------------------------------------------------------------
  // One transaction that deletes at most policy.batch rows of each kind the policy prunes:
  // the oldest events (always a prefix of the chain: by count, and by age up to the first
  // event that is young enough), decisions older than decisions_max_age_days whose operation
  // is finished (or gone), the approvals people gave operations that finished more than
  // decisions_max_age_days ago (or are gone), and script versions beyond script_versions_keep
  // per file, never the newest row of a file in any status (so the current and the last good
  // version stay). When it deletes events it writes an audit_checkpoint (seq and hash of the
  // last event deleted) in the same transaction; when it deletes anything it appends an
  // `audit.pruned` event {events, decisions, script_versions, approvals, rule, through_seq,
  // through_hash} naming the newest checkpoint, so the chain itself records it. It first
  // checks the events it would delete (and the first one it keeps) link up from the newest
  // checkpoint; if they do not, it deletes nothing and returns kInternal naming the broken
  // link: pruning never erases the evidence of a broken chain. Call again while the report
  // says a kind hit the batch.
  Result<model::PruneReport> prune(const model::RetentionPolicy& policy, const std::string& actor);
  // Walks the chain from the newest checkpoint (or the genesis) to the newest event: every
  // event's hash, every link, no gap in seq, the first kept event joining the checkpoint, the
  // newest `audit.pruned` event naming that checkpoint, and no event this Ledger appended
  // missing from the end. A broken chain is an OK Result with ok = false; an error Result
  // means the ledger could not be read. Reads one snapshot, never blocks writers.
  Result<model::AuditReport> verifyAudit();

  // --- scripts and decisions ---------------------------------------------------------------
  Result<ScriptVersion> recordScriptVersion(const ScriptVersion& version);
  Result<std::vector<ScriptVersion>> listScriptVersions(const std::string& path = "");
  // The text of a script version, by its sha256, kept when the version becomes active so a
  // restart after a broken edit can run the last good version of the file
  // (docs/architecture.md#hot-reload). Idempotent: keeping a text kept before changes
  // nothing. No event (the version's row and events say what happened).
  Status keepScriptText(const std::string& sha256, const std::string& text);
  // The kept text of `sha256`, or nullopt when none was kept.
  Result<std::optional<std::string>> scriptText(const std::string& sha256);
};

}  // namespace tide::ledger
