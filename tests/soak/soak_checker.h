#pragma once
// The soak's referee (docs/architecture.md#the-soak): compares the ledger with itself
// (Ledger::checkInvariants) and with what the drivers really hold, and watches every
// unfinished operation for one that stops moving.
//
// Driver and ledger are read one after the other, not in one transaction, and the control
// loop legitimately lets them disagree for a while (an instance starting, an orphan waiting
// out its grace period, a process that exited and is not judged yet). So every finding but
// the ledger's own invariants is a *suspicion* first, keyed by what it names; it becomes a
// violation only once it has lasted longer than its allowance. The ledger's invariants hold
// at every commit, so a broken one is a violation at once; so is an operation the control
// loop failed because one of its own writes broke the transition table ("cannot move from
// FAILED to RUNNING"): two writers of the loop disagreed about the same record, which
// docs/architecture.md#the-control-loop says must not happen. And within one host's life the
// soak's drivers forget nothing on their own (a crashed sim instance or an exited process is
// still known, as EXITED), so a runtime instance the observer finds unknown to its driver
// ("the driver does not know it") was removed by the host while the ledger counted on it
// (RUNNING, or STOPPING under an operation the observer should have left alone): a
// violation at once.
//
// Thread-safety: none; one thread calls check().

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "drivers/driver.h"
#include "host/core/status.h"
#include "host/ledger/ledger.h"

namespace tide::soak {

using SteadyTime = std::chrono::steady_clock::time_point;

// One object a driver holds, as the driver underneath any fault injection reports it.
struct InventoryObject {
  std::string cluster;
  std::string runtime_id;
  std::string state;  // the driver's RuntimeStatus::state
};

// Every object of every cluster's driver; an error when some driver could not be read (the
// check then judges nothing against the drivers).
using InventoryReader = std::function<Result<std::vector<InventoryObject>>()>;

struct CheckerLimits {
  // How long ledger and drivers may disagree about one runtime instance (a leak, a lost
  // instance, a duplicate) before it counts: longer than an orphan's grace period plus an
  // operation's attempt.
  std::chrono::milliseconds disagreement_allowance{60000};
  // How long an unfinished operation may stay in one state and attempt before it counts as
  // stuck: longer than an attempt's deadline plus the longest backoff.
  std::chrono::milliseconds stuck_after{60000};
};

struct Finding {
  std::string key;  // stable while the same thing is wrong: "leak sim/42"
  std::string what;
};

class SoakChecker {
 public:
  SoakChecker(ledger::Ledger& ledger, InventoryReader inventory, CheckerLimits limits);

  // One round of every check at `now`. Returns the suspicions that became violations this
  // round (each is reported once).
  std::vector<Finding> check(SteadyTime now);

  // What is wrong right now, allowance or not: for the end of a soak, once everything has
  // settled, where any disagreement left is a violation.
  std::vector<Finding> currentFindings();

  int64_t rounds() const { return rounds_; }
  const std::vector<Finding>& violations() const { return violations_; }
  // Operations that waited for placement (PENDING, "waiting for placement: ...") at the last
  // round: not stuck, since a full or cordoned fleet is a legitimate reason to wait.
  int64_t waitingForPlacement() const { return waiting_for_placement_; }

 private:
  std::vector<Finding> ledgerInvariants();
  std::vector<Finding> driversAgainstLedger();
  std::vector<Finding> unfinishedOperations();
  std::vector<Finding> writersThatRaced();
  std::vector<Finding> instancesRemovedUnderfoot();

  ledger::Ledger& ledger_;
  InventoryReader inventory_;
  CheckerLimits limits_;
  std::map<std::string, SteadyTime> suspected_since_;  // by Finding::key
  std::set<std::string> reported_;
  std::vector<Finding> violations_;
  int64_t rounds_ = 0;
  int64_t waiting_for_placement_ = 0;
  int64_t events_read_ = 0;  // the seq of the last event instancesRemovedUnderfoot() read
};

// The objects of `driver` (cluster `cluster`) with their states, as its list() and
// statusAll() say; an object that vanished between the two calls is left out.
Result<std::vector<InventoryObject>> readInventory(const std::string& cluster, drivers::Driver& driver);

}  // namespace tide::soak
