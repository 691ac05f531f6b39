#pragma once
// Meta instances and runtime instances (docs/architecture.md#records-and-states).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/core/status.h"
#include "host/ledger/ledger_types.h"

namespace tide::ledger {

// Observed facts about a runtime instance; unset fields are left alone. A change of
// `healthy` or `coordinates` appends an event; the rest (ports, handle) do not. With a
// `generation`, kConflict when the record moved since (the control loop's writers pass
// the one they read, so a stale judgement never overwrites a newer one).
struct RuntimeUpdate {
  std::optional<std::string> driver_handle;
  std::optional<Json> ports;
  std::optional<Json> volumes;
  std::optional<Json> coordinates;
  std::optional<bool> healthy;
  std::optional<std::string> ready_since;
  std::optional<std::string> message;
  // A new reservation, on the same node (kConflict for a runtime instance that holds
  // none); a growth must fit the node (kUnprocessable). Appends `runtime_instance.resized`
  // with `reservation_reason`.
  std::optional<Resources> reservation;
  std::string reservation_reason;
};

// What currentRuntimeInstances(), latestOperations() and the meta instance list say about
// the meta instances that rows `meta_ids`, `runtime_ids` and `operation_ids` belong to
// (DELETED ones included, so a reader can drop them): for a reader that keeps those lists
// in memory and refreshes only what the change feed names.
struct InstanceSlice {
  std::vector<MetaInstance> metas;
  std::vector<RuntimeInstance> runtimes;
  std::vector<Operation> operations;
};

// How the instances and operations of plan `plan` stand, counted by the database, so that
// the plan view's summary costs the same at 10 instances as at 10,000. An instance's
// runtime is its newest active one: RUNNING counts as running (and ready when healthy),
// FAILED as failed, anything else or none as pending.
struct PlanCounts {
  struct Instances {
    int64_t total = 0, running = 0, pending = 0, failed = 0, ready = 0;
    bool operator==(const Instances&) const = default;
  };
  Instances live;                            // every instance not DELETED
  std::map<std::string, Instances> staying;  // by deployment id: neither DELETED nor MARKED_FOR_DELETION
  std::map<std::string, std::map<std::string, int64_t>> operations;  // type → state → count, every operation
};

// The ledger's instances; Ledger::instances(). Every method keeps ledger.h's contracts.
class InstanceRecords : public Repository {
 public:
  explicit InstanceRecords(LedgerCore& core) : Repository(core) {}
  InstanceRecords(const InstanceRecords&) = delete;
  InstanceRecords& operator=(const InstanceRecords&) = delete;

  // --- meta instances ----------------------------------------------------------------------
  // Creates `<service_name>-<random>` for the plan, belonging to `deployment_id`.
  Result<MetaInstance> createMetaInstance(const std::string& plan, const std::string& deployment_id,
                                          const std::string& actor);
  Result<MetaInstance> getMetaInstance(const std::string& name);
  Result<Page<MetaInstance>> listMetaInstances(const ListOptions& options);  // filters: plan, deployment_id, state
  Result<MetaInstance> setMetaInstanceState(const std::string& name, MetaState state, Generation generation,
                                            const std::string& actor, const std::string& message = "");
  // Moves a meta instance to another deployment of its plan: one that wants exactly the
  // coordinates it runs (adoption without an operation), or after an UPDATE installed them.
  Result<MetaInstance> setMetaInstanceDeployment(const std::string& name, const std::string& deployment_id,
                                                 const std::string& actor);

  // --- runtime instances -------------------------------------------------------------------
  // Reserves `instance.reservation` on `instance.node` in the same transaction: refused
  // with kUnprocessable when the node's remaining resources cannot hold it, with
  // kConflict when the meta instance already has an active runtime instance and this one
  // is active too. Starts PENDING.
  Result<RuntimeInstance> createRuntimeInstance(const RuntimeInstance& instance, const std::string& actor);
  Result<RuntimeInstance> getRuntimeInstance(int64_t id);
  Result<Page<RuntimeInstance>> listRuntimeInstances(
      const ListOptions& options);  // filters: meta_instance, node, state, plan
  // Creates `instance` (as createRuntimeInstance) and records it as the target runtime
  // instance of operation `operation_id` in the same transaction: placement reserved at
  // approval survives a crash, and is never reserved twice for one operation.
  Result<RuntimeInstance> reserveForOperation(int64_t operation_id, const RuntimeInstance& instance,
                                              const std::string& actor);
  Result<RuntimeInstance> updateRuntimeInstance(int64_t id, const RuntimeUpdate& update, Generation generation,
                                                const std::string& actor);
  // Runtime instances of meta instances that are not DELETED: every one that is not
  // TERMINATED/FAILED, and the newest of each meta instance whatever its state. What the
  // control loop looks at every pass, without the history.
  Result<std::vector<RuntimeInstance>> currentRuntimeInstances();
  Result<InstanceSlice> instanceSlice(const std::vector<int64_t>& meta_ids, const std::vector<int64_t>& runtime_ids,
                                      const std::vector<int64_t>& operation_ids);
  Result<PlanCounts> planCounts(const std::string& plan);
  // A page of plan `plan`'s live (not DELETED) meta instances, in id order.
  Result<Page<MetaInstance>> livePlanInstances(const std::string& plan, const ListOptions& options);
  // Makes runtime instance `id` the active one of its meta instance and the previously
  // active one passive, in one transaction (the switch of a make-before-break RELOCATE).
  Result<RuntimeInstance> activateRuntimeInstance(int64_t id, const std::string& actor);
  // Moving to TERMINATED or FAILED releases the reservation in the same transaction.
  Result<RuntimeInstance> setRuntimeInstanceState(int64_t id, RuntimeState state, Generation generation,
                                                  const std::string& actor, const std::string& message = "");
};

}  // namespace tide::ledger
