#pragma once
// The drivers of the clusters the engine acts on: one Driver per cluster, built on first
// use from the cluster's ledger record through drivers::makeDriver (docs/architecture.md#drivers).
//
// Thread-safety: all methods are thread-safe; a returned Driver is itself thread-safe and
// lives as long as the DriverSet.

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "drivers/application_group.h"
#include "drivers/driver.h"
#include "drivers/registry.h"
#include "host/ledger/ledger.h"

namespace tide::engine {

class DriverSet {
 public:
  // `context` is the host's part of every driver's configuration; its node_volumes and
  // cluster_nodes are filled from the ledger when empty. `ledger` must outlive the set.
  DriverSet(ledger::Ledger& ledger, drivers::DriverContext context);

  // The driver of `node`'s cluster. kNotFound for an unknown node, kUnprocessable for a
  // node without a cluster, what makeDriver returns for a bad driver configuration.
  Result<drivers::Driver*> forNode(const std::string& node);
  Result<drivers::Driver*> forCluster(const std::string& cluster);

  // Every driver built so far, by cluster name, as its kind built it: without the wrapper
  // forNode and forCluster hand out, through which the control loop runs instances of several
  // applications (drivers/application_group.h).
  std::map<std::string, drivers::Driver*> built();

  // For tests: use `driver` for `cluster` instead of building one (wrapped like a built one).
  void install(const std::string& cluster, std::unique_ptr<drivers::Driver> driver);

 private:
  ledger::Ledger& ledger_;
  drivers::DriverContext context_;
  std::mutex mu_;
  // By cluster: the driver built, inside the wrapper that runs instances of several applications.
  std::map<std::string, std::unique_ptr<drivers::ApplicationGroupDriver>> drivers_;
  std::map<std::string, std::string> cluster_of_;  // node → cluster
};

// The log of `meta_instance`'s newest runtime instance, for `tide logs`: its last `max_bytes`,
// or with `from` what follows that place (drivers::Driver::readLogSlice). A cursor into an
// older runtime instance's log names a file the newest one does not have: its slice starts
// again. kNotFound when the instance never ran. `application` names one of the plan's
// applications (docs/architecture.md#applications); "" is the only one of a plan of one, and
// refused (kInvalidArgument, naming them) for an instance that runs several.
Result<drivers::LogSlice> readMetaInstanceLog(ledger::Ledger& ledger, DriverSet& drivers,
                                              const std::string& meta_instance, const std::string& application,
                                              const std::optional<drivers::LogCursor>& from, size_t max_bytes);

}  // namespace tide::engine
