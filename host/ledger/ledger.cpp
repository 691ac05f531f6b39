#include "host/ledger/ledger.h"

#include <algorithm>

#include "host/ledger/ledger_core.h"
#include "host/ledger/ledger_internal.h"

namespace tide::ledger {

// --- Ledger ------------------------------------------------------------------------------------

Ledger::Ledger(std::unique_ptr<LedgerCore> core)
    : core_(std::move(core)),
      inventory_(*core_),
      plans_(*core_),
      instances_(*core_),
      operations_(*core_),
      audit_(*core_),
      tokens_(*core_) {}

Ledger::~Ledger() = default;

int Ledger::schemaVersion() const { return core_->schema_version_; }

namespace {

// Reader connections of a file ledger: API requests and the control loop read side by
// side; more would only contend for the same two cores' worth of page cache.
constexpr int kReaderConnections = 4;

}  // namespace

Result<std::unique_ptr<Ledger>> Ledger::open(const std::string& url, const Clock& clock) {
  TIDE_ASSIGN_OR_RETURN(auto db, Db::open(url));
  TIDE_RETURN_IF_ERROR(db->dialect().ledgerSupport());
  TIDE_ASSIGN_OR_RETURN(int version, db->migrate(db->dialect().migrations(), formatTimestamp(clock.now())));
  auto core = std::make_unique<LedgerCore>(std::move(db), clock);
  core->schema_version_ = version;
  if (!Db::isInMemory(url)) {
    for (int i = 0; i < kReaderConnections; ++i) {
      TIDE_ASSIGN_OR_RETURN(auto reader, Db::open(url, Db::Role::kReader));
      core->free_readers_.push_back(reader.get());
      core->readers_.push_back(std::move(reader));
    }
  }
  LedgerCore* raw = core.get();
  core->changes_tracked_ =
      core->db_->onRowChange([raw](const char* table, int64_t id) { raw->recordChange(table, id); });
  auto seq = core->read("last event", [&](Db& db) -> Result<int64_t> { return readChainTail(db).seq; });
  TIDE_RETURN_IF_ERROR(seq.status());
  core->last_seq_ = *seq;
  return std::unique_ptr<Ledger>(new Ledger(std::move(core)));
}

int Ledger::subscribe(ChangeSink sink) {
  std::lock_guard<std::mutex> lock(core_->mu_);
  core_->sinks_.emplace(core_->next_sink_, std::move(sink));
  return core_->next_sink_++;
}

void Ledger::unsubscribe(int id) {
  std::lock_guard<std::mutex> lock(core_->mu_);
  core_->sinks_.erase(id);
}

WriteStats Ledger::writeStats() const {
  std::lock_guard<std::mutex> lock(core_->stats_mu_);
  return core_->stats_;
}

bool Ledger::changesTracked() const { return core_->changes_tracked_; }

// --- invariants --------------------------------------------------------------------------------

Result<std::vector<InvariantViolation>> Ledger::findInvariantViolations() {
  auto violations = core_->read("check invariants", [&](Db& db) -> Result<std::vector<InvariantViolation>> {
    std::vector<InvariantViolation> out;
    // (meta instances holding more than one of something, what they hold, the rule)
    struct AtMostOne {
      std::string query;
      const char* held;
      const char* rule;
      Bindings values;
    };
    AtMostOne active_runtimes{"", "active runtime instances", "active_runtimes", {}};
    active_runtimes.query =
        "SELECT m.name, COUNT(*) FROM runtime_instances r JOIN meta_instances m ON m.id = r.meta_instance_id "
        "WHERE r.is_active = 1 AND r.state NOT IN " +
        boundStates(active_runtimes.values, "released", model::kReleasedRuntimeStates) +
        " GROUP BY m.name HAVING COUNT(*) > 1";
    AtMostOne unfinished_operations{"", "unfinished operations", "unfinished_operations", {}};
    unfinished_operations.query =
        "SELECT m.name, COUNT(*) FROM operations o JOIN meta_instances m ON m.id = o.meta_instance_id "
        "WHERE o.state IN " +
        boundStates(unfinished_operations.values, "unfinished", unfinishedOperationStates()) +
        " GROUP BY m.name HAVING COUNT(*) > 1";
    for (auto* check : {&active_runtimes, &unfinished_operations}) {
      db.forEachRow(
          check->query,
          [&](const soci::row& r) {
            out.push_back({check->rule, "meta instance " + rowString(r, 0) + " has " + std::to_string(rowInt(r, 1)) +
                                            " " + check->held + " (at most one allowed)"});
          },
          check->values);
    }
    {
      Bindings values;
      db.forEachRow(
          "SELECT n.name, n.total_cores - n.reserved_cores - COALESCE(SUM(r.reserved_cores), 0), "
          "n.total_memory_gib - n.reserved_memory_gib - COALESCE(SUM(r.reserved_memory_gib), 0) "
          "FROM nodes n LEFT JOIN runtime_instances r ON r.node_id = n.id AND r.state NOT "
          "IN " +
              boundStates(values, "released", model::kReleasedRuntimeStates) +
              " GROUP BY n.id, n.name, n.total_cores, n.reserved_cores, "
              "n.total_memory_gib, n.reserved_memory_gib",
          [&](const soci::row& r) {
            if (rowDouble(r, 1) < -1e-9 || rowDouble(r, 2) < -1e-9) {
              out.push_back({"over_committed", "node " + rowString(r, 0) + " is over-committed (remaining cores " +
                                                   std::to_string(rowDouble(r, 1)) + ", memory " +
                                                   std::to_string(rowDouble(r, 2)) + " GiB)"});
            }
          },
          values);
    }
    // A reservation is what a runtime instance that holds resources reserved on its node: it is
    // never negative, sits on a live node, and belongs to an instance that is meant to run or
    // to an operation still under way.
    Bindings reservation_values;
    db.forEachRow(
        "SELECT r.id, m.name, r.state, m.state, n.name, n.deleted_at IS NOT NULL, r.reserved_cores, "
        "r.reserved_memory_gib, EXISTS (SELECT 1 FROM operations o WHERE o.meta_instance_id = m.id AND o.state IN " +
            boundStates(reservation_values, "unfinished", unfinishedOperationStates()) +
            ") "
            "FROM runtime_instances r JOIN meta_instances m ON m.id = r.meta_instance_id "
            "JOIN nodes n ON n.id = r.node_id WHERE r.state NOT IN " +
            boundStates(reservation_values, "released", model::kReleasedRuntimeStates) + " ORDER BY r.id",
        [&](const soci::row& r) {
          const std::string runtime = "runtime instance " + rowString(r, 0) + " of " + rowString(r, 1) + " (" +
                                      rowString(r, 2) + " on node " + rowString(r, 4) + ")";
          const bool under_way = rowInt(r, 8) != 0;
          std::string wrong;
          if (rowDouble(r, 6) < 0 || rowDouble(r, 7) < 0) {
            wrong = "reserves a negative amount";
          } else if (rowInt(r, 5) != 0) {
            wrong = "holds a reservation on a deleted node";
          } else if (rowString(r, 3) != model::toString(model::MetaState::kActive) && !under_way) {
            wrong = "holds a reservation for a meta instance that is " + rowString(r, 3) + " with no operation under way";
          }
          if (!wrong.empty()) out.push_back({"reservation", runtime + " " + wrong});
        },
        reservation_values);
    for (RecordKind kind : {RecordKind::kCluster, RecordKind::kNode, RecordKind::kPlan, RecordKind::kDeployment,
                            RecordKind::kMetaInstance, RecordKind::kRuntimeInstance, RecordKind::kOperation}) {
      static const std::map<RecordKind, const char*> kTables = {{RecordKind::kCluster, "clusters"},
                                                                {RecordKind::kNode, "nodes"},
                                                                {RecordKind::kPlan, "plans"},
                                                                {RecordKind::kDeployment, "deployments"},
                                                                {RecordKind::kMetaInstance, "meta_instances"},
                                                                {RecordKind::kRuntimeInstance, "runtime_instances"},
                                                                {RecordKind::kOperation, "operations"}};
      db.forEachRow("SELECT DISTINCT state FROM " + std::string(kTables.at(kind)), [&](const soci::row& r) {
        if (!isKnownState(kind, rowString(r, 0))) {
          out.push_back({"unknown_state",
                         std::string(recordKindName(kind)) + " rows hold unknown state '" + rowString(r, 0) + "'"});
        }
      });
    }
    return out;
  });
  if (!violations.isOk()) return violations;
  if (Status chain = audit_.verifyEventChain(); !chain.isOk()) violations->push_back({"event_chain", chain.message()});
  return violations;
}

Result<std::vector<std::string>> Ledger::checkInvariants() {
  TIDE_ASSIGN_OR_RETURN(std::vector<InvariantViolation> violations, findInvariantViolations());
  std::vector<std::string> sentences;
  sentences.reserve(violations.size());
  for (InvariantViolation& v : violations) sentences.push_back(std::move(v.message));
  return sentences;
}

}  // namespace tide::ledger
