#pragma once
// Answers read from the ledger, kept until the ledger commits a change to a table they were
// read from (docs/architecture.md#reads-served-from-memory). The API keeps the bearer tokens
// it has authenticated and the replies to GET /v1/nodes/{name} this way, so the requests it
// serves most do not query SQLite each time.
//
//   ReadCache<model::Node> nodes(ledger, {"nodes", "clusters", "runtime_instances"});
//   Result<model::Node> node = nodes.get(name, [&] { return ledger.inventory().getNode(name); });
//
// Why it is exact: the cache counts the commits whose change feed (Ledger::subscribe) names
// one of its tables; that count is its epoch. get() reads the epoch before it loads and keeps
// the value under that epoch; a value is served only while the epoch is still the one it was
// kept under. The ledger runs its change sinks after a commit and before the committing write
// returns, so a request that starts after a write returned finds the epoch moved and loads
// anew, and a load that raced a commit is kept under the older epoch and never served. What
// get() answers is what the ledger answered at some moment during the call.
//
// Without a change feed (Ledger::changesTracked() false) nothing is kept: every get() loads.
// An in-memory ledger (tests) reads on its writer's connection and so may see a group of
// writes before it commits; were that group's commit to fail, no sink would run and a value
// read from it could stay kept. A file ledger reads committed data only.
// Errors are never kept. At most `capacity` values are kept; past that the cache starts over.
//
// Thread-safety: get() and invalidate() may be called from any number of threads at once.
// `load` runs on the calling thread with no lock of the cache held, so it may read the ledger.
// The cache must be destroyed before the ledger.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "host/core/status.h"
#include "host/ledger/ledger.h"

namespace tide::api {

template <class Value>
class ReadCache {
 public:
  ReadCache(ledger::Ledger& ledger, std::vector<std::string> tables, size_t capacity = 16384)
      : ledger_(ledger), tables_(std::move(tables)), capacity_(capacity), enabled_(ledger.changesTracked()) {
    if (enabled_) subscription_ = ledger_.subscribe([this](const auto& changes) { noteCommit(changes); });
  }
  ~ReadCache() {
    if (enabled_) ledger_.unsubscribe(subscription_);
  }
  ReadCache(const ReadCache&) = delete;
  ReadCache& operator=(const ReadCache&) = delete;

  // The value kept under `key` when no change to the tables was committed since it was
  // loaded; otherwise what `load()` (a Result<Value>) answers now, kept when it is OK.
  template <class Load>
  Result<Value> get(const std::string& key, Load&& load) {
    return get(key, std::forward<Load>(load), [](const Value&) { return true; });
  }

  // As above, but what `load()` answers is kept only when `keep(value)` is true: for values
  // that also depend on tables the cache does not follow.
  template <class Load, class Keep>
  Result<Value> get(const std::string& key, Load&& load, Keep&& keep) {
    const uint64_t epoch = epoch_.load(std::memory_order_acquire);
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      if (epoch == kept_epoch_) {
        auto found = kept_.find(key);
        if (found != kept_.end()) return found->second;
      }
    }
    Result<Value> loaded = load();
    if (enabled_ && loaded.isOk() && keep(loaded.value())) remember(epoch, key, loaded.value());
    return loaded;
  }

  // Forgets every value, as a commit to one of the tables would.
  void invalidate() { epoch_.fetch_add(1, std::memory_order_acq_rel); }

  // How many values are kept now (for tests).
  size_t size() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return epoch_.load(std::memory_order_acquire) == kept_epoch_ ? kept_.size() : 0;
  }

 private:
  // The change sink: runs under the ledger's write lock, so it only moves the epoch.
  void noteCommit(const std::vector<ledger::RowChange>& changes) {
    const bool touched = std::any_of(changes.begin(), changes.end(), [&](const ledger::RowChange& change) {
      return std::find(tables_.begin(), tables_.end(), change.table) != tables_.end();
    });
    if (touched) invalidate();
  }

  void remember(uint64_t epoch, const std::string& key, const Value& value) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (epoch < kept_epoch_) return;  // loaded before a newer value was kept: may be stale
    if (epoch > kept_epoch_ || kept_.size() >= capacity_) {
      kept_.clear();
      kept_epoch_ = epoch;
    }
    kept_.insert_or_assign(key, value);
  }

  ledger::Ledger& ledger_;
  const std::vector<std::string> tables_;
  const size_t capacity_;
  const bool enabled_;
  int subscription_ = 0;
  std::atomic<uint64_t> epoch_{1};
  mutable std::shared_mutex mu_;
  uint64_t kept_epoch_ = 0;                      // REQUIRES: mu_ is held; the epoch kept_ was loaded at
  std::unordered_map<std::string, Value> kept_;  // REQUIRES: mu_ is held
};

}  // namespace tide::api
