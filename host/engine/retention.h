#pragma once
// Retention (docs/architecture.md#retention-and-audit): the thread of `tide serve` that prunes
// the ledger's old events, decisions and script versions, a round every
// policy.interval_minutes on the injected Clock (the first at start). A round is a series of
// AuditRecords::prune transactions of at most policy.batch rows of each kind, so the write lock is
// never held for long and the control loop's writes go between them.
//
// A prune the ledger refuses (the chain it would cut is broken) ends the round; it is written
// as an `alarm.audit` event (once per distinct error) and tried again next round, by which
// time an operator may have looked. Exceptions end one round, not the host (runGuarded).
//
// Thread-safety: start()/stop() from one thread; runRound() only while the thread is not running.

#include <atomic>
#include <string>
#include <thread>

#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "host/model/audit.h"

namespace tide::engine {

class Pruner {
 public:
  static constexpr const char* kActor = "retention";

  // `ledger` and `clock` must outlive the Pruner.
  Pruner(ledger::Ledger& ledger, const Clock& clock, model::RetentionPolicy policy);
  ~Pruner();  // stop()s

  // Starts the thread, unless the policy prunes nothing.
  void start();
  void stop();

  // One round on the calling thread: prunes until no kind fills a batch. The totals of the
  // round (checkpoint: the newest one written), or the error that ended it.
  Result<model::PruneReport> runRound();

 private:
  void loop();

  ledger::Ledger& ledger_;
  const Clock& clock_;
  const model::RetentionPolicy policy_;
  std::string last_error_;  // the last alarm written, so a lasting problem is reported once
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

}  // namespace tide::engine
