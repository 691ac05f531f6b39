#pragma once
// What policies' ctx.* queries are answered from when the host decides an operation: the
// ledger (docs/architecture.md#approval; the ctx API is docs/lua.md's).
//
// Thread-safety: as thread-safe as the Ledger it wraps (fully). A LedgerPolicyDataSource
// caches plan namespaces for its lifetime, so make one per evaluation; the caller owns the
// ledger, which must outlive it.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "host/lua/policy/policy_data.h"

namespace tide::engine {

using Json = nlohmann::json;

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
  Result<bool> matches(const model::Operation& operation, const Json& filter);
  Result<std::string> planNamespace(const std::string& plan);
  // Where the meta instance's active runtime instance runs; nullopt when it runs nowhere.
  Result<std::optional<Placement>> placementOf(const std::string& meta_instance);

  ledger::Ledger& ledger_;
  const Clock& clock_;
  int64_t exclude_operation_id_;
  std::map<std::string, std::string> namespaces_;  // plan → namespace
};

}  // namespace tide::engine
