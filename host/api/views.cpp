#include "host/api/views.h"

#include <algorithm>

#include "host/model/transitions.h"

namespace tide::api {
namespace {

// The runtime instance that serves a meta instance: the newest one marked active.
const model::RuntimeInstance* activeRuntime(const std::vector<model::RuntimeInstance>& runtimes) {
  const model::RuntimeInstance* active = nullptr;
  for (const model::RuntimeInstance& runtime : runtimes) {
    if (runtime.is_active && (active == nullptr || runtime.meta.id > active->meta.id)) active = &runtime;
  }
  return active;
}

}  // namespace

const std::vector<std::string>& operationTypes() {
  static const std::vector<std::string> kTypes = {"CREATE", "UPDATE", "RELOCATE", "STOP", "RESTART", "DELETE"};
  return kTypes;
}

Result<Json> planShowView(ledger::Ledger& ledger, const model::Plan& plan) {
  const std::map<std::string, std::string> by_plan = {{"plan", plan.name}};
  TIDE_ASSIGN_OR_RETURN(std::vector<model::Deployment> deployments,
                        listAll(ledger, &ledger::Ledger::listDeployments, by_plan));
  TIDE_ASSIGN_OR_RETURN(std::vector<model::MetaInstance> metas,
                        listAll(ledger, &ledger::Ledger::listMetaInstances, by_plan));
  TIDE_ASSIGN_OR_RETURN(std::vector<model::RuntimeInstance> runtimes,
                        listAll(ledger, &ledger::Ledger::listRuntimeInstances, by_plan));
  TIDE_ASSIGN_OR_RETURN(std::vector<model::Operation> operations,
                        listAll(ledger, &ledger::Ledger::listOperations, by_plan));

  std::map<std::string, std::vector<model::RuntimeInstance>> runtimes_of;
  for (model::RuntimeInstance& runtime : runtimes) runtimes_of[runtime.meta_instance].push_back(std::move(runtime));
  std::map<std::string, std::vector<model::Operation>> operations_of;
  Json operations_summary = Json::object();
  for (const std::string& type : operationTypes()) {
    for (const std::string& state : model::statesOf(model::RecordKind::kOperation)) {
      operations_summary[type][state] = 0;
    }
  }
  for (model::Operation& operation : operations) {
    Json& count = operations_summary[operation.type][operation.state];
    count = count.is_number() ? count.get<int64_t>() + 1 : 1;
    operations_of[operation.meta_instance].push_back(std::move(operation));
  }

  int64_t running = 0, pending = 0, failed = 0;
  Json instances = Json::array();
  for (const model::MetaInstance& meta : metas) {
    if (meta.state == "DELETED") continue;
    const std::vector<model::RuntimeInstance>& mine = runtimes_of[meta.name];
    const model::RuntimeInstance* active = activeRuntime(mine);
    if (active != nullptr && active->state == "RUNNING")
      ++running;
    else if (active != nullptr && active->state == "FAILED")
      ++failed;
    else
      ++pending;
    instances.push_back(
        {{"meta_instance", meta}, {"runtime_instances", mine}, {"operations", operations_of[meta.name]}});
  }

  return Json{{"plan", plan},
              {"deployments", deployments},
              {"instance_summary",
               {{"total", running + pending + failed}, {"running", running}, {"pending", pending}, {"failed", failed}}},
              {"operations_summary", operations_summary},
              {"instances", instances}};
}

Result<Json> instanceView(ledger::Ledger& ledger, const model::MetaInstance& meta_instance, bool with_operations) {
  const std::map<std::string, std::string> by_meta = {{"meta_instance", meta_instance.name}};
  TIDE_ASSIGN_OR_RETURN(std::vector<model::RuntimeInstance> runtimes,
                        listAll(ledger, &ledger::Ledger::listRuntimeInstances, by_meta));
  Json view = {{"meta_instance", meta_instance}, {"runtime_instances", runtimes}};
  if (with_operations) {
    TIDE_ASSIGN_OR_RETURN(std::vector<model::Operation> operations,
                          listAll(ledger, &ledger::Ledger::listOperations, by_meta));
    view["operations"] = operations;
  }
  return view;
}

}  // namespace tide::api
