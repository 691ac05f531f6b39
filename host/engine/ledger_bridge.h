#pragma once
// The Lua host's two windows onto the ledger (DESIGN §4, §7): where script reloads are
// recorded, and what policies' ctx.* queries are answered from.
//
// Thread-safety: both classes are as thread-safe as the Ledger they wrap (fully). A
// LedgerPolicyDataSource caches plan namespaces for its lifetime, so make one per
// evaluation; the caller owns the ledger, which must outlive both.

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <optional>
#include <string>

#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "host/lua/policy_data.h"
#include "host/lua/script_registry.h"

namespace tide::engine {

using Json = nlohmann::json;

// script_versions rows and script.* events. A ledger error is dropped (the reload itself
// already happened; the registry's list() still shows it); never throws.
// A restart reloads every file; a version whose path's latest row already says the same
// (same sha256, same status) is not recorded again, nor is its event, so the ledger holds
// changes only and a restart leaves the event log as it was.
class LedgerScriptRecorder final : public lua::ScriptRecorder {
 public:
  explicit LedgerScriptRecorder(ledger::Ledger& ledger) : ledger_(ledger) {}
  void recordScriptVersion(const ledger::ScriptVersion& version) override;
  void recordEvent(const std::string& kind, const std::string& subject, const Json& data) override;

 private:
  ledger::Ledger& ledger_;
  std::mutex mu_;
  std::set<std::string> repeated_;  // "path sha256" of versions skipped as already recorded
};

// ctx.* answered from the ledger's lists, paging through each. Filters (policy_data.h):
// plan and type are ledger filters; namespace is the operation's plan's; update_domain and
// node are those of the operation's meta instance's active runtime instance (an operation
// whose instance is not placed matches neither). A recent failure is a FAILED operation
// whose last update lies within `seconds` of the clock's now.
class LedgerPolicyDataSource final : public lua::PolicyDataSource {
 public:
  // `exclude_operation_id` is the operation being decided (0 for dry runs).
  LedgerPolicyDataSource(ledger::Ledger& ledger, const Clock& clock, int64_t exclude_operation_id = 0);

  Result<int64_t> inFlight(const Json& filter) override;
  Result<int64_t> count(const Json& filter) override;
  Result<int64_t> recentFailures(const Json& filter) override;
  Result<Json> instances(const std::string& plan) override;
  Result<Json> node(const std::string& name) override;

 private:
  struct Placement {
    std::string node;
    std::string update_domain;
    bool healthy = false;
  };
  // Operations in `state` matching `filter`; when `since` is set, only those updated then or later.
  Result<int64_t> countInState(const std::string& state, const Json& filter, std::optional<TimePoint> since);
  Result<bool> matches(const ledger::Operation& operation, const Json& filter);
  Result<std::string> planNamespace(const std::string& plan);
  // Where the meta instance's active runtime instance runs; nullopt when it runs nowhere.
  Result<std::optional<Placement>> placementOf(const std::string& meta_instance);

  ledger::Ledger& ledger_;
  const Clock& clock_;
  int64_t exclude_operation_id_;
  std::map<std::string, std::string> namespaces_;  // plan → namespace
};

}  // namespace tide::engine
