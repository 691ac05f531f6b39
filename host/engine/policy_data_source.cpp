#include "host/engine/policy_data_source.h"

#include <algorithm>
#include <vector>

#include "host/model/transitions.h"

namespace tide::engine {
namespace {

// The wire spelling of every operation state `holds` is true of.
std::vector<std::string> operationStatesWhere(bool (*holds)(model::OperationState)) {
  std::vector<std::string> out;
  for (model::OperationState state : model::valuesOf<model::OperationState>()) {
    if (holds(state)) out.push_back(model::toString(state));
  }
  return out;
}

std::string stringFilter(const Json& filter, const char* key) {
  auto it = filter.find(key);
  return it != filter.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

LedgerPolicyDataSource::LedgerPolicyDataSource(ledger::Ledger& ledger, const Clock& clock, int64_t exclude_operation_id)
    : ledger_(ledger), clock_(clock), exclude_operation_id_(exclude_operation_id) {}

Result<int64_t> LedgerPolicyDataSource::inFlight(const Json& filter) {
  int64_t total = 0;
  for (const std::string& state : operationStatesWhere(model::isInFlight)) {
    TIDE_ASSIGN_OR_RETURN(int64_t n, countInState(state, filter, std::nullopt));
    total += n;
  }
  return total;
}

Result<int64_t> LedgerPolicyDataSource::count(const Json& filter) {
  std::vector<std::string> states = operationStatesWhere(model::isUnfinished);
  if (auto it = filter.find("state"); it != filter.end()) {
    if (it->is_string()) {
      states = {it->get<std::string>()};
    } else if (it->is_array()) {
      states.clear();
      for (const Json& s : *it) {
        if (s.is_string()) states.push_back(s.get<std::string>());
      }
    }
  }
  int64_t total = 0;
  for (const std::string& state : states) {
    TIDE_ASSIGN_OR_RETURN(int64_t n, countInState(state, filter, std::nullopt));
    total += n;
  }
  return total;
}

Result<int64_t> LedgerPolicyDataSource::recentFailures(const Json& filter) {
  int64_t seconds = 3600;
  if (auto it = filter.find("seconds"); it != filter.end() && it->is_number()) seconds = it->get<int64_t>();
  return countInState(model::toString(model::OperationState::kFailed), filter,
                      clock_.now() - std::chrono::seconds(seconds));
}

Result<int64_t> LedgerPolicyDataSource::countInState(const std::string& state, const Json& filter,
                                                     std::optional<TimePoint> since) {
  std::map<std::string, std::string> filters = {{"state", state}};
  for (const char* key : {"plan", "type"}) {
    if (std::string value = stringFilter(filter, key); !value.empty()) filters[key] = value;
  }
  TIDE_ASSIGN_OR_RETURN(
      std::vector<model::Operation> operations,
      ledger::listAll(ledger_.operations(), &ledger::OperationRecords::listOperations, std::move(filters)));
  int64_t n = 0;
  for (const model::Operation& operation : operations) {
    if (operation.meta.id == exclude_operation_id_) continue;
    if (since) {
      auto updated = parseTimestamp(operation.meta.updated_at);
      if (!updated.isOk() || *updated < *since) continue;
    }
    TIDE_ASSIGN_OR_RETURN(bool matched, matches(operation, filter));
    if (matched) ++n;
  }
  return n;
}

Result<bool> LedgerPolicyDataSource::matches(const model::Operation& operation, const Json& filter) {
  if (std::string ns = stringFilter(filter, "namespace"); !ns.empty()) {
    TIDE_ASSIGN_OR_RETURN(std::string actual, planNamespace(operation.plan));
    if (actual != ns) return false;
  }
  const std::string update_domain = stringFilter(filter, "update_domain");
  const std::string node = stringFilter(filter, "node");
  if (update_domain.empty() && node.empty()) return true;
  TIDE_ASSIGN_OR_RETURN(std::optional<Placement> placement, placementOf(operation.meta_instance));
  if (!placement) return false;
  if (!node.empty() && placement->node != node) return false;
  if (!update_domain.empty() && placement->update_domain != update_domain) return false;
  return true;
}

Result<std::string> LedgerPolicyDataSource::planNamespace(const std::string& plan) {
  if (auto it = namespaces_.find(plan); it != namespaces_.end()) return it->second;
  TIDE_ASSIGN_OR_RETURN(model::Plan record, ledger_.plans().getPlan(plan));
  namespaces_[plan] = record.ns;
  return record.ns;
}

Result<std::optional<LedgerPolicyDataSource::Placement>> LedgerPolicyDataSource::placementOf(
    const std::string& meta_instance) {
  TIDE_ASSIGN_OR_RETURN(std::vector<model::RuntimeInstance> runtimes,
                        ledger::listAll(ledger_.instances(), &ledger::InstanceRecords::listRuntimeInstances,
                                        {{"meta_instance", meta_instance}}));
  std::optional<Placement> found;
  for (const model::RuntimeInstance& instance : runtimes) {
    if (instance.is_active && model::holdsResources(instance.state))
      found = Placement{instance.node, "", instance.healthy};
  }
  if (found) {
    auto node = ledger_.inventory().getNode(found->node);
    if (node.isOk()) {
      found->update_domain = node->update_domain;
    } else if (node.status().code() != Code::kNotFound) {
      return node.status();
    }
  }
  return found;
}

Result<Json> LedgerPolicyDataSource::instances(const std::string& plan) {
  TIDE_ASSIGN_OR_RETURN(
      std::vector<model::MetaInstance> metas,
      ledger::listAll(ledger_.instances(), &ledger::InstanceRecords::listMetaInstances, {{"plan", plan}}));
  std::sort(metas.begin(), metas.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  Json out = Json::array();
  for (const model::MetaInstance& meta : metas) {
    TIDE_ASSIGN_OR_RETURN(std::optional<Placement> placement, placementOf(meta.name));
    out.push_back({{"name", meta.name},
                   {"state", meta.state},
                   {"deployment_id", meta.deployment_id},
                   {"node", placement ? Json(placement->node) : Json(nullptr)},
                   {"update_domain", placement ? Json(placement->update_domain) : Json(nullptr)},
                   {"healthy", placement && placement->healthy}});
  }
  return out;
}

Result<Json> LedgerPolicyDataSource::node(const std::string& name) {
  auto found = ledger_.inventory().getNode(name);
  if (!found.isOk()) {
    if (found.status().code() == Code::kNotFound) return Json(nullptr);
    return found.status();
  }
  return Json(*found);
}

}  // namespace tide::engine
