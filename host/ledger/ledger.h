#pragma once
// The ledger: tide's durable record of what exists and what should happen (docs/architecture.md#records-and-states).
//
// Contracts every method keeps:
// - All-or-nothing: each call is one transaction; on error nothing is written.
// - Every create and every state change appends an event in the same transaction
//   (hash-chained, see Event). State changes are checked against transitions.h.
// - Updates that take a `Generation` fail with kConflict when the record's generation
//   moved since the caller read it (optimistic concurrency); nullopt means "whatever it is".
// - Deletes of user-facing records are soft: the row stays with deleted_at set, and the
//   name becomes free again.
// - Node remaining resources are derived on every read from total − system reserved −
//   reservations of runtime instances that are not TERMINATED/FAILED; no counter can drift.
//
// Thread-safety: a Ledger may be shared by any number of threads. Writes are serialized
// on one connection and group-committed (docs/architecture.md#the-ledger): writes of
// several threads that queue up together share one transaction, each in its own
// savepoint (a failing write rolls back alone), and one commit (one fsync); a write
// returns once its group is durable, so callers see no difference but speed. Reads of a
// file ledger run on a small pool of their own WAL connections and never wait for a
// write; they see what was committed. waitForEvents() blocks without holding a lock.
//
// The records are kept by their own repositories, which share the transactions of one
// LedgerCore (ledger_core.h): inventory() (capabilities, clusters, nodes), plans() (plans and
// deployments), instances() (meta and runtime instances), operations() (operations, approvals,
// policy decisions), audit() (events, retention, the control loop's halt, script versions) and
// tokens(). What differs between databases is behind SqlDialect (sql_dialect.h).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/ledger/audit_records.h"
#include "host/ledger/instance_records.h"
#include "host/ledger/inventory_records.h"
#include "host/ledger/ledger_types.h"
#include "host/ledger/operation_records.h"
#include "host/ledger/plan_records.h"
#include "host/ledger/token_records.h"

namespace tide::ledger {

class Db;
class LedgerCore;

struct WriteStats {
  int64_t writes = 0;   // write calls that reached the database
  int64_t commits = 0;  // transactions committed: one fsync each on a file ledger
  int64_t failed_commits = 0;
  int64_t largest_group = 0;
};

// --- change feed ----------------------------------------------------------------------
// Every row a committed transaction inserted, updated or deleted, as (table, row id),
// in commit order. Rows written by a write that rolled back may appear too: a reader
// re-reads what it is told about and finds the truth. Empty for ledgers that cannot
// tell (changesTracked() false): then readers must reload.
struct RowChange {
  std::string table;
  int64_t id = 0;
};
using ChangeSink = std::function<void(const std::vector<RowChange>&)>;

// --- invariants ----------------------------------------------------------------------
// One broken rule of docs/architecture.md#invariants: which rule ("active_runtimes",
// "unfinished_operations", "over_committed", "unknown_state", "reservation",
// "event_chain") and a sentence naming the records.
struct InvariantViolation {
  std::string rule;
  std::string message;
};

class Ledger {
 public:
  // Opens (creating if needed) the database at `url` — "sqlite://<path>",
  // "sqlite://:memory:" or "postgresql://..." — and applies pending migrations.
  // `clock` must outlive the Ledger.
  static Result<std::unique_ptr<Ledger>> open(const std::string& url, const Clock& clock);
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  int schemaVersion() const;

  InventoryRecords& inventory() { return inventory_; }
  PlanRecords& plans() { return plans_; }
  InstanceRecords& instances() { return instances_; }
  OperationRecords& operations() { return operations_; }
  AuditRecords& audit() { return audit_; }
  TokenRecords& tokens() { return tokens_; }

  // --- manifests -----------------------------------------------------------------------
  // Creates every record of the manifest in one transaction, in dependency order
  // (capabilities, clusters, nodes, plans, deployments). Any error — including one that
  // only the ledger can see, like a name that already exists — writes nothing and names
  // the record's manifest location.
  Result<AppliedManifest> applyManifest(const model::Manifest& manifest, const std::string& actor);

  // --- group commit ---------------------------------------------------------------------
  // Holds the calling thread's writes in one transaction until the Batch ends (or
  // kMaxGroupWrites / kMaxGroupAge pass, or another thread waits for the group): for a
  // stage of the control loop that writes many records one after the other. While a
  // Batch is open, a write returns before it is durable and reads on this thread see the
  // batch's writes. A failing write rolls back alone (a savepoint); commit() reports
  // whether the rest reached the disk — a batch commits whole or not at all.
  class Batch {
   public:
    explicit Batch(Ledger& ledger);
    ~Batch();  // commit()s
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;
    Status commit();

   private:
    LedgerCore& core_;
    bool outermost_ = false;  // a nested Batch of the same thread leaves the work to the outer one
    uint64_t first_group_ = 0;
  };
  // Reads on this thread, while a Snapshot is open, all see the ledger as one moment: a
  // picture built from several reads (the engine's World) never mixes a runtime instance's
  // newer state with its operation's older one. Each read alone is always one snapshot.
  // Its reads do not see what commits after it opened, this thread's own writes included:
  // open it around reads only. A nested Snapshot of the same thread leaves the work to the
  // outer one; inside a Batch, or on a ledger without reader connections, it does nothing.
  class Snapshot {
   public:
    explicit Snapshot(Ledger& ledger);
    ~Snapshot();
    Snapshot(const Snapshot&) = delete;
    Snapshot& operator=(const Snapshot&) = delete;

   private:
    LedgerCore& core_;
    Db* reader_ = nullptr;  // null when it is not the outermost, or the ledger has no readers
  };
  // While a Rehearsal is open on this thread, each write to this ledger runs whole — every
  // check, error and warning it would give — and is then rolled back: nothing is written, no
  // event is appended, and the write returns what it would have returned (dry runs, docs/
  // api.md#dry-runs). Each write is rehearsed alone: a second one does not see the first's
  // rows. Reads are not affected. A nested Rehearsal of the same thread leaves the work to
  // the outer one.
  class Rehearsal {
   public:
    explicit Rehearsal(Ledger& ledger);
    ~Rehearsal();
    Rehearsal(const Rehearsal&) = delete;
    Rehearsal& operator=(const Rehearsal&) = delete;

   private:
    bool outermost_ = false;
  };
  static constexpr int kMaxGroupWrites = 256;
  static constexpr std::chrono::milliseconds kMaxGroupAge{50};

  WriteStats writeStats() const;

  // `sink` runs under the write lock right after each commit: it must be quick and must
  // not call the ledger. Returns an id for unsubscribe(), which must come before whatever
  // the sink refers to dies.
  int subscribe(ChangeSink sink);
  void unsubscribe(int id);
  bool changesTracked() const;

  // The rules of docs/architecture.md#invariants, which must hold at rest. The host runs this
  // at start and refuses to act on a ledger that fails it; `tide doctor` reports it.
  Result<std::vector<InvariantViolation>> findInvariantViolations();
  // The same, each violation as its sentence.
  Result<std::vector<std::string>> checkInvariants();

 private:
  explicit Ledger(std::unique_ptr<LedgerCore> core);

  std::unique_ptr<LedgerCore> core_;
  InventoryRecords inventory_;
  PlanRecords plans_;
  InstanceRecords instances_;
  OperationRecords operations_;
  AuditRecords audit_;
  TokenRecords tokens_;
};

// Verifies the event chain of the SQLite ledger at `url` ("sqlite://PATH") as
// AuditRecords::verifyAudit does, through a read-only connection that neither migrates nor writes,
// so it may run beside a host using the file: `tide audit verify --data-dir`. kNotFound when
// there is no such file. It cannot see events missing from the end (no host to ask).
Result<model::AuditReport> verifyLedgerAt(const std::string& url);

}  // namespace tide::ledger
