// Applying a whole manifest as one transaction: either every record exists afterwards,
// or none of them does.

#include "host/ledger/ledger_internal.h"
#include "host/model/manifest.h"

namespace tide::ledger {
namespace {

// Where `detail` (whose field is a path below `item`, as the ledger names fields) is in the
// manifest: at the value of its field (of the list, for an item of one: "capabilities[0]"),
// named as written, where the record spells it out; else at the record. A detail already
// located is left as it is.
template <class T>
void place(ErrorDetail& detail, const model::Sourced<T>& item) {
  if (!detail.location.empty()) return;
  detail.location = item.location;
  std::string field = detail.field;
  std::string items;  // the "[i]" suffix left out
  while (!field.empty()) {
    if (const auto it = item.fields.find(field); it != item.fields.end()) {
      detail.field = it->second.field + items;
      detail.location = it->second.value;
      return;
    }
    const size_t open = field.rfind('[');
    if (!field.ends_with(']') || open == std::string::npos) return;
    items = field.substr(open) + items;
    field.resize(open);
  }
}

// Locates the error and its details in the manifest so the user can find the line even for
// errors only the ledger can see; the message starts with the first detail's location.
template <class T>
Status located(const Status& status, const model::Sourced<T>& item) {
  if (status.isOk() || item.location.empty()) return status;
  std::vector<ErrorDetail> details = status.details();
  if (details.empty()) details.push_back({"", status.message(), ""});
  for (auto& d : details) place(d, item);
  std::string message = details.front().location + ": " + status.message();
  return Status(status.code(), std::move(message), std::move(details));
}

template <class T, class Insert>
Status insertAll(Tx& tx, const std::vector<model::Sourced<T>>& items, std::vector<std::string>& names,
                 Insert&& insert) {
  for (const auto& item : items) {
    auto result = insert(tx, item.value);
    if (!result.isOk()) return located(result.status(), item);
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
    for (size_t i = before; i < warnings.size(); ++i) place(warnings[i], item);
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
      if (!result.isOk()) return located(result.status(), item);
      applied.deployments.push_back(item.value.plan + "/" + item.value.deployment_id);
    }
    return applied;
  });
}

}  // namespace tide::ledger
