#pragma once
// What every part of the ledger's interface shares: the records it stores (host/model's,
// named unqualified here), optimistic concurrency, pagination, and what a manifest or a plan
// change reports.

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/model/approvals.h"
#include "host/model/audit.h"
#include "host/model/manifest.h"
#include "host/model/records.h"
#include "host/model/transitions.h"

namespace tide::ledger {

// The ledger stores host/model's records and names them unqualified.
using model::ApiToken;
using model::Application;
using model::Capability;
using model::CapabilityMatch;
using model::Cluster;
using model::ClusterState;
using model::ControlHalt;
using model::Decision;
using model::Deployment;
using model::DeploymentState;
using model::Event;
using model::HealthCheck;
using model::Json;
using model::LocalVolume;
using model::Manifest;
using model::Meta;
using model::MetaInstance;
using model::MetaState;
using model::Node;
using model::NodeState;
using model::Operation;
using model::OperationState;
using model::OperationType;
using model::PayloadCoordinates;
using model::PersistentVolume;
using model::Plan;
using model::PlanState;
using model::Port;
using model::RecordKind;
using model::Resources;
using model::RuntimeInstance;
using model::RuntimeState;
using model::ScriptVersion;
using model::StrategyRef;

class Db;
class LedgerCore;
class Tx;

using Generation = std::optional<int64_t>;

// Keyset pagination: items with id (or seq) greater than `after`, at most `limit`.
struct ListOptions {
  int64_t limit = 100;  // clamped to [1, kMaxPageSize]
  int64_t after = 0;
  // Equality filters; each list method documents the keys it accepts and rejects others.
  std::map<std::string, std::string> filters;
};

inline constexpr int64_t kMaxPageSize = 1000;

template <class T>
struct Page {
  std::vector<T> items;
  int64_t next_after = 0;  // pass as `after` for the next page; 0 when this was the last
};

// What applyManifest created, by kind, in manifest order, and what it accepted with a
// warning (each with its manifest location).
struct AppliedManifest {
  std::vector<std::string> capabilities, clusters, nodes, plans, deployments;
  std::vector<ErrorDetail> warnings;
};

// What updatePlan did: the plan as it now is and the spec fields that changed (none: nothing
// was written).
struct PlanChange {
  model::Plan plan;
  std::vector<std::string> changed;
  std::vector<ErrorDetail> warnings;
};

// The cluster a node joins when its manifest names none, as MRDS's node files do
// (docs/mrds.md); insertNode creates it, with the process driver, the first time.
inline constexpr char kDefaultCluster[] = "default";

// What the ledger's repositories (InventoryRecords, PlanRecords, ...) share: they read and
// write through one LedgerCore, whose transactions they all use (ledger_core.h, private to
// host/ledger/, defines these members).
class Repository {
 protected:
  explicit Repository(LedgerCore& core) : core_(core) {}
  Repository(const Repository&) = delete;
  Repository& operator=(const Repository&) = delete;

  // One write transaction (Tx) or one read snapshot (Db) around `fn`: LedgerCore::write, read.
  template <class Fn>
  auto write(const char* what, const std::string& actor, Fn&& fn) -> decltype(fn(std::declval<Tx&>()));
  template <class Fn>
  auto read(const char* what, Fn&& fn) -> decltype(fn(std::declval<Db&>()));
  std::string now() const;

  LedgerCore& core_;
};

// Every record a list call yields, following next_after through all pages:
// listAll(ledger.inventory(), &InventoryRecords::listNodes).
template <class Records, class Record>
Result<std::vector<Record>> listAll(Records& records, Result<Page<Record>> (Records::*list)(const ListOptions&),
                                    std::map<std::string, std::string> filters = {}) {
  ListOptions options;
  options.limit = kMaxPageSize;
  options.filters = std::move(filters);
  std::vector<Record> all;
  while (true) {
    TIDE_ASSIGN_OR_RETURN(Page<Record> page, (records.*list)(options));
    all.insert(all.end(), std::make_move_iterator(page.items.begin()), std::make_move_iterator(page.items.end()));
    if (page.next_after == 0) return all;
    options.after = page.next_after;
  }
}

}  // namespace tide::ledger
