#include "host/engine/ledger_bridge.h"

#include <algorithm>
#include <exception>
#include <vector>

namespace tide::engine {
namespace {

const std::vector<std::string> kNonTerminalStates = {"PENDING", "PENDING_APPROVAL", "APPROVED", "RUNNING"};

std::string stringFilter(const Json& filter, const char* key) {
  auto it = filter.find(key);
  return it != filter.end() && it->is_string() ? it->get<std::string>() : "";
}

// Calls `visit` on every item of every page `list` returns for `options`.
template <class List, class Visit>
Status forEachItem(ledger::ListOptions options, List&& list, Visit&& visit) {
  options.limit = ledger::kMaxPageSize;
  while (true) {
    auto page = list(options);
    if (!page.isOk()) return page.status();
    for (const auto& item : page->items) TIDE_RETURN_IF_ERROR(visit(item));
    if (page->next_after == 0) return Status::ok();
    options.after = page->next_after;
  }
}

bool isTerminalRuntimeState(const std::string& state) { return state == "TERMINATED" || state == "FAILED"; }

}  // namespace

void LedgerScriptRecorder::recordScriptVersion(const ledger::ScriptVersion& version) {
  try {
    auto earlier = ledger_.listScriptVersions(version.path);
    if (earlier.isOk() && !earlier->empty()) {
      auto latest = std::max_element(earlier->begin(), earlier->end(),
                                     [](const auto& a, const auto& b) { return a.id < b.id; });
      if (latest->sha256 == version.sha256 && latest->status == version.status) {
        std::lock_guard<std::mutex> lock(mu_);
        repeated_.insert(version.path + " " + version.sha256);
        return;
      }
    }
    (void)ledger_.recordScriptVersion(version);
  } catch (const std::exception&) {
  }
}

void LedgerScriptRecorder::recordEvent(const std::string& kind, const std::string& subject, const Json& data) {
  try {
    const std::string key = data.value("path", "") + " " + data.value("sha256", "");
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (repeated_.erase(key) > 0) return;
    }
    (void)ledger_.appendEvent(kind, subject, data, "host");
  } catch (const std::exception&) {
  }
}

LedgerPolicyDataSource::LedgerPolicyDataSource(ledger::Ledger& ledger, const Clock& clock,
                                               int64_t exclude_operation_id)
    : ledger_(ledger), clock_(clock), exclude_operation_id_(exclude_operation_id) {}

Result<int64_t> LedgerPolicyDataSource::inFlight(const Json& filter) {
  int64_t total = 0;
  for (const char* state : {"APPROVED", "RUNNING"}) {
    TIDE_ASSIGN_OR_RETURN(int64_t n, countInState(state, filter, std::nullopt));
    total += n;
  }
  return total;
}

Result<int64_t> LedgerPolicyDataSource::count(const Json& filter) {
  std::vector<std::string> states = kNonTerminalStates;
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
  return countInState("FAILED", filter, clock_.now() - std::chrono::seconds(seconds));
}

Result<int64_t> LedgerPolicyDataSource::countInState(const std::string& state, const Json& filter,
                                                     std::optional<TimePoint> since) {
  ledger::ListOptions options;
  options.filters["state"] = state;
  for (const char* key : {"plan", "type"}) {
    if (std::string value = stringFilter(filter, key); !value.empty()) options.filters[key] = value;
  }
  int64_t n = 0;
  Status listed = forEachItem(
      options, [&](const ledger::ListOptions& o) { return ledger_.listOperations(o); },
      [&](const ledger::Operation& operation) -> Status {
        if (operation.meta.id == exclude_operation_id_) return Status::ok();
        if (since) {
          auto updated = parseTimestamp(operation.meta.updated_at);
          if (!updated.isOk() || *updated < *since) return Status::ok();
        }
        TIDE_ASSIGN_OR_RETURN(bool matched, matches(operation, filter));
        if (matched) ++n;
        return Status::ok();
      });
  TIDE_RETURN_IF_ERROR(listed);
  return n;
}

Result<bool> LedgerPolicyDataSource::matches(const ledger::Operation& operation, const Json& filter) {
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
  TIDE_ASSIGN_OR_RETURN(ledger::Plan record, ledger_.getPlan(plan));
  namespaces_[plan] = record.ns;
  return record.ns;
}

Result<std::optional<LedgerPolicyDataSource::Placement>> LedgerPolicyDataSource::placementOf(
    const std::string& meta_instance) {
  ledger::ListOptions options;
  options.filters["meta_instance"] = meta_instance;
  std::optional<Placement> found;
  Status listed = forEachItem(
      options, [&](const ledger::ListOptions& o) { return ledger_.listRuntimeInstances(o); },
      [&](const ledger::RuntimeInstance& instance) -> Status {
        if (instance.is_active && !isTerminalRuntimeState(instance.state)) {
          found = Placement{instance.node, "", instance.healthy};
        }
        return Status::ok();
      });
  TIDE_RETURN_IF_ERROR(listed);
  if (found) {
    auto node = ledger_.getNode(found->node);
    if (node.isOk()) {
      found->update_domain = node->update_domain;
    } else if (node.status().code() != Code::kNotFound) {
      return node.status();
    }
  }
  return found;
}

Result<Json> LedgerPolicyDataSource::instances(const std::string& plan) {
  ledger::ListOptions options;
  options.filters["plan"] = plan;
  std::vector<ledger::MetaInstance> metas;
  TIDE_RETURN_IF_ERROR(forEachItem(
      options, [&](const ledger::ListOptions& o) { return ledger_.listMetaInstances(o); },
      [&](const ledger::MetaInstance& meta) {
        metas.push_back(meta);
        return Status::ok();
      }));
  std::sort(metas.begin(), metas.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  Json out = Json::array();
  for (const ledger::MetaInstance& meta : metas) {
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
  auto found = ledger_.getNode(name);
  if (!found.isOk()) {
    if (found.status().code() == Code::kNotFound) return Json(nullptr);
    return found.status();
  }
  return Json(*found);
}

}  // namespace tide::engine
