#include "host/engine/retention.h"

#include "host/core/thread_guard.h"
#include "host/engine/loop_errors.h"

namespace tide::engine {

Pruner::Pruner(ledger::Ledger& ledger, const Clock& clock, model::RetentionPolicy policy)
    : ledger_(ledger), clock_(clock), policy_(policy) {}

Pruner::~Pruner() { stop(); }

void Pruner::start() {
  if (!policy_.enabled() || thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { loop(); });
}

void Pruner::stop() {
  stopping_ = true;
  clock_.wake();
  if (thread_.joinable()) thread_.join();
}

void Pruner::loop() {
  while (!stopping_) {
    // runRound() reports its own errors (alarm.audit); the next round tries again.
    runGuarded([this] { (void)runRound(); },
               [this](const std::string& what) { reportLoopException(ledger_, "retention", what); });
    clock_.sleepFor(std::chrono::minutes(policy_.interval_minutes), [this] { return stopping_.load(); });
  }
}

Result<model::PruneReport> Pruner::runRound() {
  model::PruneReport total;
  while (!stopping_) {
    Result<model::PruneReport> step = ledger_.audit().prune(policy_, kActor);
    if (!step.isOk()) {
      if (step.status().message() != last_error_) {
        last_error_ = step.status().message();
        // Best effort: the ledger that failed to prune may fail this too; the error is returned.
        (void)ledger_.audit().appendEvent("alarm.audit", "ledger", model::Json{{"error", last_error_}}, kActor);
      }
      return step.status();
    }
    total.events += step->events;
    total.decisions += step->decisions;
    total.script_versions += step->script_versions;
    total.approvals += step->approvals;
    if (step->checkpoint) total.checkpoint = step->checkpoint;
    const bool more = step->events >= policy_.batch || step->decisions >= policy_.batch ||
                      step->script_versions >= policy_.batch || step->approvals >= policy_.batch;
    if (!more) break;
  }
  last_error_.clear();
  return total;
}

}  // namespace tide::engine
