#include "host/api/dry_run.h"

#include <map>
#include <vector>

#include "host/engine/approval.h"
#include "host/engine/policy_data_source.h"
#include "host/ledger/ledger.h"
#include "host/lua/policy/policy_pool.h"
#include "host/model/transitions.h"

namespace tide::api {
namespace {

// The plan's deployments, oldest first.
Result<std::vector<model::Deployment>> deploymentsOf(ApiContext& context, const std::string& plan) {
  return ledger::listAll(context.ledger.plans(), &ledger::PlanRecords::listDeployments, {{"plan", plan}});
}

// Whether `get` finds the record: kNotFound is false, another error is the error.
template <class Get>
Result<bool> exists(Get&& get) {
  auto found = get();
  if (found.isOk()) return true;
  if (found.status().code() == Code::kNotFound) return false;
  return found.status();
}

Json change(const std::string& kind, const std::string& name, const std::string& location, const char* action) {
  return Json{{"kind", kind}, {"name", name}, {"location", location}, {"action", action}};
}

}  // namespace

Result<bool> readDryRun(const ApiRequest& request) {
  const auto it = request.query.find("dry_run");
  if (it == request.query.end() || it->second == "false" || it->second == "0") return false;
  if (it->second == "true" || it->second == "1") return true;
  return Status::invalidArgument("query parameter 'dry_run' must be true or false, got '" + it->second + "'",
                                 {{"dry_run", "must be true or false", it->second}});
}

Result<Json> rolloutPreview(ApiContext& context, const Principal& principal, const model::Plan& plan,
                            const model::Deployment& next) {
  TIDE_ASSIGN_OR_RETURN(std::vector<model::Deployment> all, deploymentsOf(context, plan.name));
  const model::Deployment* current = model::currentDeployment(all);
  TIDE_ASSIGN_OR_RETURN(std::vector<model::MetaInstance> live,
                        ledger::listAll(context.ledger.instances(), &ledger::InstanceRecords::listMetaInstances,
                                        {{"plan", plan.name}, {"state", model::toString(model::MetaState::kActive)}}));
  const int64_t running = static_cast<int64_t>(live.size());
  const int64_t wanted = next.instance_count;
  const int64_t updates = std::min(running, wanted);
  Json preview{{"deployment", next.plan + "/" + next.deployment_id},
               {"strategy", model::effectiveStrategy(&plan, next).script},
               {"instance_count", wanted},
               {"replaces", Json{{"deployment", current != nullptr ? Json(current->deployment_id) : Json(nullptr)},
                                 {"instances", running}}},
               {"updates", updates},
               {"creates", std::max<int64_t>(0, wanted - running)},
               {"removes", std::max<int64_t>(0, running - wanted)}};
  if (context.policies == nullptr) {
    preview["approvals"] = nullptr;
    preview["approvals_note"] = "the host runs without scripts: no policy decides";
    return preview;
  }
  Json approvals = Json::array();
  engine::LedgerPolicyDataSource data(context.ledger, context.clock);
  for (const auto& [type, operations] :
       {std::pair{model::OperationType::kUpdate, updates}, std::pair{model::OperationType::kCreate, wanted - updates},
        std::pair{model::OperationType::kDelete, running - updates}}) {
    if (operations <= 0) continue;
    const Json op = engine::previewOpSnapshot(plan, current, next, type, principal.name);
    TIDE_ASSIGN_OR_RETURN(lua::Evaluation evaluation, context.policies->evaluate(op, data, context.clock));
    Json decided = evaluation;
    approvals.push_back(Json{{"type", type},
                             {"operations", operations},
                             {"outcome", decided["outcome"]},
                             {"summary", decided["summary"]},
                             {"approvals", decided.value("approvals", Json(nullptr))},
                             {"decisions", decided["decisions"]}});
  }
  preview["approvals"] = std::move(approvals);
  return preview;
}

Result<Json> manifestDryRun(ApiContext& context, const Principal& principal, const model::Manifest& manifest) {
  ledger::Ledger::Rehearsal rehearsal(context.ledger);
  ledger::Ledger& ledger = context.ledger;
  Json changes = Json::array();
  model::Manifest fresh;  // the records POST /v1/manifests would create
  bool applies = true;
  auto sort = [&](const auto& items, auto& into, const char* kind, auto&& get) -> Status {
    for (const auto& item : items) {
      TIDE_ASSIGN_OR_RETURN(bool held, exists([&] { return get(item.value.name); }));
      changes.push_back(change(kind, item.value.name, item.location, held ? "exists" : "create"));
      if (held) {
        applies = false;
      } else {
        into.push_back(item);
      }
    }
    return Status::ok();
  };
  TIDE_RETURN_IF_ERROR(sort(manifest.capabilities, fresh.capabilities, "capability",
                            [&](const std::string& name) { return ledger.inventory().getCapability(name); }));
  TIDE_RETURN_IF_ERROR(sort(manifest.clusters, fresh.clusters, "cluster",
                            [&](const std::string& name) { return ledger.inventory().getCluster(name); }));
  TIDE_RETURN_IF_ERROR(sort(manifest.nodes, fresh.nodes, "node",
                            [&](const std::string& name) { return ledger.inventory().getNode(name); }));

  std::vector<ErrorDetail> warnings;
  std::map<std::string, model::Plan> plans;  // every plan of the manifest, as it would be
  for (const auto& item : manifest.plans) {
    const model::Plan& plan = item.value;
    plans[plan.name] = plan;
    TIDE_ASSIGN_OR_RETURN(bool held, exists([&] { return ledger.plans().getPlan(plan.name); }));
    if (!held) {
      changes.push_back(change("plan", plan.name, item.location, "create"));
      fresh.plans.push_back(item);
      continue;
    }
    applies = false;
    Result<ledger::PlanChange> updated = ledger.plans().updatePlan(plan, std::nullopt, principal.name);
    if (!updated.isOk()) return updated.status().withPrefix(item.location);
    Json entry = change("plan", plan.name, item.location, updated->changed.empty() ? "unchanged" : "update");
    entry["changed"] = updated->changed;
    changes.push_back(std::move(entry));
    for (ErrorDetail warning : updated->warnings) {
      if (warning.location.empty()) warning.location = item.location;
      warnings.push_back(std::move(warning));
    }
  }

  std::vector<std::pair<Json, const model::Sourced<model::Deployment>*>> added;
  for (const auto& item : manifest.deployments) {
    const model::Deployment& deployment = item.value;
    const std::string name = deployment.plan + "/" + deployment.deployment_id;
    TIDE_ASSIGN_OR_RETURN(
        bool held, exists([&] { return ledger.plans().getDeployment(deployment.plan, deployment.deployment_id); }));
    if (held) {
      applies = false;
      changes.push_back(change("deployment", name, item.location, "exists"));
      continue;
    }
    fresh.deployments.push_back(item);
    added.emplace_back(change("deployment", name, item.location, "create"), &item);
  }

  if (!fresh.empty()) {
    TIDE_ASSIGN_OR_RETURN(ledger::AppliedManifest applied, ledger.applyManifest(fresh, principal.name));
    warnings.insert(warnings.end(), applied.warnings.begin(), applied.warnings.end());
  }
  for (auto& [entry, item] : added) {
    const model::Deployment& deployment = item->value;
    model::Plan plan;
    if (auto it = plans.find(deployment.plan); it != plans.end()) {
      plan = it->second;
    } else {
      TIDE_ASSIGN_OR_RETURN(plan, ledger.plans().getPlan(deployment.plan));
    }
    TIDE_ASSIGN_OR_RETURN(entry["rollout"], rolloutPreview(context, principal, plan, deployment));
    changes.push_back(std::move(entry));
  }
  return Json{
      {"dry_run", true}, {"applies", applies}, {"changes", std::move(changes)}, {"warnings", warningsJson(warnings)}};
}

}  // namespace tide::api
