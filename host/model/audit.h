#pragma once
// Retention and the audit of the event chain (docs/architecture.md#retention-and-audit):
// what the host config says to prune, the checkpoint a prune leaves, and what verifying the
// chain found. JSON conversion (the API's wire shape) lives in audit.cpp.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tide::model {

using Json = nlohmann::json;

// How much history the ledger keeps (host config `retention`). 0 turns a rule off; with
// every rule off nothing is ever pruned (the default).
struct RetentionPolicy {
  int events_max_age_days = 0;     // events older than this go (a prefix of the chain)
  int64_t events_max_count = 0;    // at most this many events stay
  int decisions_max_age_days = 0;  // decisions older than this go, unless their operation is unfinished
  int script_versions_keep = 0;    // per script file; the newest row of each status always stays
  int64_t batch = 5000;            // rows of each kind one prune transaction deletes at most
  int interval_minutes = 60;       // between pruning rounds of `tide serve`

  bool operator==(const RetentionPolicy&) const = default;
  bool enabled() const {
    return events_max_age_days > 0 || events_max_count > 0 || decisions_max_age_days > 0 || script_versions_keep > 0;
  }
};

// Written in the transaction that pruned events through `through_seq`: the first kept event's
// prev_hash must be `through_hash`.
struct AuditCheckpoint {
  int64_t id = 0;
  int64_t through_seq = 0;
  std::string through_hash;
  std::string at;
  std::string actor;
  std::string rule;  // which rules pruned, "events_max_count,events_max_age_days"
  int64_t events_pruned = 0;
};

// What one prune transaction deleted. `checkpoint` is set when it deleted events.
struct PruneReport {
  int64_t events = 0;
  int64_t decisions = 0;
  int64_t script_versions = 0;
  int64_t approvals = 0;  // operation_approvals rows, which go with their operation's decisions
  std::optional<AuditCheckpoint> checkpoint;
  int64_t total() const { return events + decisions + script_versions + approvals; }
};

// The result of walking the event chain from the newest checkpoint (or the genesis) to the
// newest event. `broken_seq` and `problem` name the first broken link when !ok.
struct AuditReport {
  bool ok = true;
  // The first and last event found intact (when broken: before the broken link); 0 when none.
  int64_t first_seq = 0;
  int64_t last_seq = 0;
  int64_t events = 0;
  std::string head_hash;  // last_seq's hash: when ok, record it elsewhere to detect a later rewrite
  std::optional<AuditCheckpoint> checkpoint;
  int64_t broken_seq = 0;
  std::string problem;
};

void to_json(Json& j, const AuditCheckpoint& v);
void to_json(Json& j, const AuditReport& v);

}  // namespace tide::model
