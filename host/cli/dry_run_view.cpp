#include "host/cli/dry_run_view.h"

#include "host/cli/joined.h"

namespace tide::cli {
namespace {

// "1 approval (approver)" from the requirement a PENDING_APPROVAL evaluation carries.
std::string needed(const Json& approvals) {
  if (!approvals.is_object()) return "";
  const int64_t count = approvals.value("required", int64_t{0});
  std::string out = std::to_string(count) + (count == 1 ? " approval" : " approvals");
  if (const std::string role = text(approvals, {"role"}); !role.empty()) out += " (" + role + ")";
  return out;
}

}  // namespace

std::string withDryRun(const std::string& path, bool dry_run) {
  if (!dry_run) return path;
  return path + (path.find('?') == std::string::npos ? "?" : "&") + "dry_run=true";
}

void printRolloutPreview(std::ostream& out, const Json& rollout, const std::string& indent) {
  const Json& replaces = at(rollout, {"replaces"});
  out << indent << "strategy " << text(rollout, {"strategy"}) << ", " << text(rollout, {"instance_count"})
      << " instances: ";
  if (at(replaces, {"deployment"}).is_string()) {
    out << "replaces " << text(rollout, {"updates"}) << " of the " << text(replaces, {"instances"})
        << " live instances (deployment " << text(replaces, {"deployment"}) << ")";
  } else {
    out << "no deployment runs yet";
  }
  out << ", creates " << text(rollout, {"creates"}) << ", removes " << text(rollout, {"removes"}) << "\n";
  const Json& approvals = at(rollout, {"approvals"});
  if (!approvals.is_array()) {
    out << indent << "approvals: " << text(rollout, {"approvals_note"}) << "\n";
    return;
  }
  for (const Json& step : approvals) {
    out << indent << text(step, {"type"}) << " x" << text(step, {"operations"}) << ": " << text(step, {"outcome"});
    if (const std::string need = needed(at(step, {"approvals"})); !need.empty()) out << ", needs " << need;
    const std::string policies = joined(items(at(step, {"decisions"})), ", ", [](const Json& decision) {
      return text(decision, {"policy"}) + " (" + text(decision, {"verdict"}) + ")";
    });
    out << "; decided by " << (policies.empty() ? "no policy (the default verdict)" : policies) << "\n";
  }
}

void printManifestDiff(std::ostream& out, const Json& diff) {
  Table table({"Action", "Kind", "Name", "Changed", "Location"});
  for (const Json& change : items(at(diff, {"changes"}))) {
    const std::string changed =
        joined(items(at(change, {"changed"})), ", ", [](const Json& field) { return text(field); });
    table.addRow({text(change, {"action"}), text(change, {"kind"}), text(change, {"name"}), changed,
                  text(change, {"location"})});
  }
  table.print(out);
  for (const Json& change : items(at(diff, {"changes"}))) {
    if (!change.contains("rollout")) continue;
    out << "\nDeployment " << text(change, {"name"}) << " would roll out:\n";
    printRolloutPreview(out, change["rollout"]);
  }
  for (const Json& warning : items(at(diff, {"warnings"}))) {
    out << "warning: " << text(warning, {"location"}) << ": " << text(warning, {"message"}) << "\n";
  }
  if (!at(diff, {"applies"}).is_null() && !diff.value("applies", true)) {
    out << "\nRecords marked exists are not changed by a manifest: `tide deployment update -m FILE` changes "
           "plans; the rest keep what they hold.\n";
  }
  out << kNothingWritten << "\n";
}

}  // namespace tide::cli
