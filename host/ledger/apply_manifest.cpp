// Applying a whole manifest as one transaction: either every record exists afterwards,
// or none of them does.

#include "host/ledger/ledger_internal.h"
#include "host/model/manifest.h"

namespace tide::ledger {
namespace {

// Prefixes the record's manifest location ("nodes.yaml:14") to the error and its details
// so the user can find the line even for errors only the ledger can see.
Status located(const Status& status, const std::string& location) {
  if (status.isOk() || location.empty()) return status;
  std::vector<ErrorDetail> details = status.details();
  if (details.empty()) details.push_back({"", status.message(), location});
  for (auto& d : details) {
    if (d.location.empty()) d.location = location;
  }
  return Status(status.code(), location + ": " + status.message(), std::move(details));
}

template <class T, class Insert>
Status insertAll(Tx& tx, const std::vector<model::Sourced<T>>& items, std::vector<std::string>& names,
                 Insert&& insert) {
  for (const auto& item : items) {
    auto result = insert(tx, item.value);
    if (!result.isOk()) return located(result.status(), item.location);
    names.push_back(item.value.name);
  }
  return Status::ok();
}

// insertAll for the kinds that may be accepted with warnings, each warning located.
template <class T, class Insert>
Status insertAllWarned(Tx& tx, const std::vector<model::Sourced<T>>& items, std::vector<std::string>& names,
                       std::vector<ErrorDetail>& warnings, Insert&& insert) {
  return insertAll(tx, items, names, [&](Tx& t, const T& value) {
    const size_t before = warnings.size();
    auto result = insert(t, value, &warnings);
    const auto& item = items[names.size()];
    for (size_t i = before; i < warnings.size(); ++i) warnings[i].location = item.location;
    return result;
  });
}

}  // namespace

Result<AppliedManifest> Ledger::applyManifest(const model::Manifest& manifest, const std::string& actor) {
  if (manifest.empty()) return Status::invalidArgument("the manifest holds no records");
  return core_->write("apply manifest", actor, [&](Tx& tx) -> Result<AppliedManifest> {
    AppliedManifest applied;
    TIDE_RETURN_IF_ERROR(insertAll(tx, manifest.capabilities, applied.capabilities, insertCapability));
    TIDE_RETURN_IF_ERROR(insertAll(tx, manifest.clusters, applied.clusters, insertCluster));
    TIDE_RETURN_IF_ERROR(insertAllWarned(tx, manifest.nodes, applied.nodes, applied.warnings, insertNode));
    TIDE_RETURN_IF_ERROR(insertAllWarned(tx, manifest.plans, applied.plans, applied.warnings, insertPlan));
    for (const auto& item : manifest.deployments) {
      auto result = insertDeployment(tx, item.value);
      if (!result.isOk()) return located(result.status(), item.location);
      applied.deployments.push_back(item.value.plan + "/" + item.value.deployment_id);
    }
    return applied;
  });
}

}  // namespace tide::ledger
