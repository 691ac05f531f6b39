#include "host/engine/driver_set.h"

#include <algorithm>

#include "drivers/failpoint/failpoint_driver.h"
#include "host/core/whole_number.h"
#include "host/core/failpoint.h"

namespace tide::engine {

DriverSet::DriverSet(ledger::Ledger& ledger, drivers::DriverContext context)
    : ledger_(ledger), context_(std::move(context)) {
  if (!context_.node_volumes) {
    context_.node_volumes = [&ledger](const std::string& node) {
      auto n = ledger.inventory().getNode(node);
      return n.isOk() ? n.value().local_volumes : std::vector<model::LocalVolume>{};
    };
  }
  if (!context_.cluster_nodes) {
    context_.cluster_nodes = [&ledger](const std::string& cluster) {
      std::vector<std::string> names;
      ledger::ListOptions options;
      options.limit = ledger::kMaxPageSize;
      options.filters = {{"cluster", cluster}};
      do {
        auto page = ledger.inventory().listNodes(options);
        if (!page.isOk()) break;
        for (const model::Node& node : page->items) names.push_back(node.name);
        options.after = page->next_after;
      } while (options.after != 0);
      return names;
    };
  }
  if (!context_.runtime_node) {
    context_.runtime_node = [&ledger](const std::string& id) -> std::optional<std::string> {
      const std::optional<int64_t> number = parseWholeNumber(id);
      if (!number) return std::nullopt;
      auto runtime = ledger.instances().getRuntimeInstance(*number);
      if (!runtime.isOk()) return std::nullopt;
      return runtime->node;
    };
  }
}

Result<drivers::Driver*> DriverSet::forNode(const std::string& node) {
  std::string cluster;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = cluster_of_.find(node); it != cluster_of_.end()) cluster = it->second;
  }
  if (cluster.empty()) {
    TIDE_ASSIGN_OR_RETURN(model::Node n, ledger_.inventory().getNode(node));
    if (n.cluster.empty()) return Status(Code::kUnprocessable, "node '" + node + "' belongs to no cluster");
    cluster = n.cluster;
    std::lock_guard<std::mutex> lock(mu_);
    cluster_of_[node] = cluster;
  }
  return forCluster(cluster);
}

Result<drivers::Driver*> DriverSet::forCluster(const std::string& cluster) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = drivers_.find(cluster); it != drivers_.end()) return it->second.get();
  TIDE_ASSIGN_OR_RETURN(model::Cluster c, ledger_.inventory().getCluster(cluster));
  drivers::DriverContext context = context_;
  context.cluster = cluster;
  auto made = drivers::makeDriver(c.driver_kind, c.driver_config, context);
  if (!made.isOk()) return made.status().withPrefix("cluster '" + cluster + "'");
  std::unique_ptr<drivers::Driver> built = std::move(made).value();
  // docs/architecture.md#failpoints: the driver calls' failpoints cost nothing unless armed.
  if (failpoint::armed()) built = std::make_unique<drivers::FailpointDriver>(std::move(built));
  // docs/architecture.md#applications: instances of several applications, on every driver.
  auto wrapped = std::make_unique<drivers::ApplicationGroupDriver>(std::move(built));
  drivers::Driver* driver = wrapped.get();
  drivers_[cluster] = std::move(wrapped);
  return driver;
}

std::map<std::string, drivers::Driver*> DriverSet::built() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, drivers::Driver*> out;
  for (auto& [cluster, driver] : drivers_) out[cluster] = &driver->inner();
  return out;
}

void DriverSet::install(const std::string& cluster, std::unique_ptr<drivers::Driver> driver) {
  std::lock_guard<std::mutex> lock(mu_);
  drivers_[cluster] = std::make_unique<drivers::ApplicationGroupDriver>(std::move(driver));
}

Result<drivers::LogSlice> readMetaInstanceLog(ledger::Ledger& ledger, DriverSet& drivers,
                                              const std::string& meta_instance, const std::string& application,
                                              const std::optional<drivers::LogCursor>& from, size_t max_bytes) {
  TIDE_ASSIGN_OR_RETURN(model::MetaInstance meta, ledger.instances().getMetaInstance(meta_instance));
  TIDE_ASSIGN_OR_RETURN(auto runtimes,
                        ledger::listAll(ledger.instances(), &ledger::InstanceRecords::listRuntimeInstances,
                                        {{"meta_instance", meta_instance}}));
  if (runtimes.empty()) return Status::notFound("instance '" + meta_instance + "' has not run anywhere yet");
  const model::RuntimeInstance& newest = runtimes.back();  // lists are in id order
  TIDE_ASSIGN_OR_RETURN(drivers::Driver * driver, drivers.forNode(newest.node));
  std::string runtime_id = std::to_string(newest.meta.id);
  if (!application.empty()) {
    TIDE_ASSIGN_OR_RETURN(model::Deployment deployment, ledger.plans().getDeployment(meta.plan, meta.deployment_id));
    std::vector<std::string> names;
    if (deployment.plan_snapshot) {
      for (const auto& app : deployment.plan_snapshot->applications) names.push_back(app.payload_name);
    }
    if (std::find(names.begin(), names.end(), application) == names.end()) {
      std::string known;
      for (const auto& name : names) known += (known.empty() ? "" : ", ") + name;
      return Status::invalidArgument(
          "instance '" + meta_instance + "' runs no application '" + application + "' (its plan's: " + known + ")",
          {{"application", "not an application of the instance's plan", ""}});
    }
    if (names.size() > 1) runtime_id = drivers::applicationRuntimeId(runtime_id, application);
  }
  return driver->readLogSlice(runtime_id, from, max_bytes);
}

}  // namespace tide::engine
