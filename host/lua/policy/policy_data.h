#pragma once
// What policies may ask about the world (docs/lua.md#ctx-asking-about-the-world), as an interface the ledger
// implements. Filters are JSON objects whose keys the ctx binding has already checked:
//   plan, namespace, update_domain, node, type (operation type) for every count;
//   state (a string or a list of states) for count; seconds for recent_failures.
// Implementations are called synchronously on the evaluating thread while a policy runs
// (the time they take does not count against the policy's deadline). They must not throw;
// an error Status makes the calling policy fail, which counts as `manual` (fail closed).

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/core/status.h"

namespace tide::lua {

using Json = nlohmann::json;

class PolicyDataSource {
 public:
  virtual ~PolicyDataSource() = default;
  // Operations matching `filter` that are APPROVED or RUNNING, not counting the one
  // being decided.
  virtual Result<int64_t> inFlight(const Json& filter) = 0;
  // Operations matching `filter` (any non-terminal state unless `state` is given), not
  // counting the one being decided.
  virtual Result<int64_t> count(const Json& filter) = 0;
  // Operations matching `filter` that ended FAILED within the last filter["seconds"].
  virtual Result<int64_t> recentFailures(const Json& filter) = 0;
  // The meta instances of `plan`: [{name, state, deployment_id, node, update_domain,
  // healthy}], ordered by name.
  virtual Result<Json> instances(const std::string& plan) = 0;
  // The node `name` ({name, cluster, update_domain, state, labels, ...}) or null.
  virtual Result<Json> node(const std::string& name) = 0;
};

// A data source answering from a JSON fixture: the `ctx` of a policy test case, of an op
// file for `tide policy eval`, or of a dry run. Keys (all optional):
//   now             "2026-03-02T10:00:00Z" (read by the caller to set the clock)
//   in_flight       a number: the answer to every ctx.in_flight query
//   count           a number: the answer to every ctx.count query
//   recent_failures a number: the answer to every ctx.recent_failures query
//   operations      [{plan, namespace, update_domain, node, type, state, finished_at}]:
//                   answers the three counts by filtering, when the number is absent
//   instances       {plan: [instance, ...]}
//   nodes           {name: node}
class SnapshotDataSource final : public PolicyDataSource {
 public:
  // `clock` measures recent_failures' window; it must outlive this object.
  SnapshotDataSource(Json fixture, const Clock& clock);

  Result<int64_t> inFlight(const Json& filter) override;
  Result<int64_t> count(const Json& filter) override;
  Result<int64_t> recentFailures(const Json& filter) override;
  Result<Json> instances(const std::string& plan) override;
  Result<Json> node(const std::string& name) override;

 private:
  Result<int64_t> countOperations(const char* fixed_answer, const Json& filter,
                                  bool (*state_matches)(const Json& op, const Json& filter, TimePoint now));
  Json fixture_;
  const Clock& clock_;
};

// The fixture's "now", if it has one: "2026-03-03T10:00:00Z", epoch seconds, or a local time
// and an IANA zone, "2026-03-30T08:59:00 Europe/Berlin" (time_zone.h).
Result<TimePoint> fixtureNow(const Json& fixture, TimePoint fallback);

}  // namespace tide::lua
