#include "host/cli/views.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "host/cli/joined.h"
#include "host/cli/json_fields.h"
#include "host/cli/rollout_view.h"
#include "host/model/approvals.h"

namespace tide::cli {
namespace {

constexpr std::string_view kEntrySeparator = "----------------";

std::string join(const Json& values, std::string_view separator) {
  return joined(items(values), separator, [](const Json& value) { return text(value); });
}

std::string joinLines(const std::vector<std::string>& lines) { return joined(lines, "\n"); }

// Who approved an operation; while it waits for several approvals or an override, how far it
// got ("1 of 2 approvals (alice)"). A wait for one plain approval shows nothing, as before.
std::string approvedByText(const Json& operation) {
  const std::string approved_by = text(operation, {"approved_by"});
  // A rejection records who rejected in approved_by; it is not an approval.
  const std::string operation_state = text(operation, {"state"});
  if (spells(operation_state, model::OperationState::kRejected)) {
    return approved_by.empty() ? "" : "rejected by " + approved_by;
  }
  if (!approved_by.empty() || !spells(operation_state, model::OperationState::kPendingApproval)) return approved_by;
  const Json& decision = at(operation, {"decision"});
  const model::ApprovalState state = model::approvalStateOf(decision);
  if (state.requirement.approvals <= 1 && state.given.empty() && !state.overridable) return "";
  std::string out = model::describeApprovals(decision, text(operation, {"requested_by"}));
  const bool overridden =
      std::any_of(state.given.begin(), state.given.end(), [](const model::GivenApproval& g) { return g.override; });
  if (state.overridable && !overridden) out += "; soft-denied: needs an override";
  return out;
}

// Multi-line cell of several records, each a block of "Key: value" lines.
std::string blocks(const std::vector<std::vector<std::string>>& entries) {
  std::vector<std::string> lines;
  for (const auto& entry : entries) {
    if (!lines.empty()) lines.emplace_back(kEntrySeparator);
    lines.insert(lines.end(), entry.begin(), entry.end());
  }
  return joinLines(lines);
}

// {"tcp/80": 31080, ...} → "tcp/80 -> 31080, ...": declared port → the host's.
std::string hostPorts(const Json& ports) {
  std::string out;
  if (!ports.is_object()) return out;
  for (const auto& item : ports.items()) {
    out += (out.empty() ? "" : ", ") + item.key() + " -> " + text(item.value());
  }
  return out;
}

void printResources(std::ostream& out, std::string_view heading, const Json& resources) {
  printHeading(out, heading);
  printField(out, "Cores", text(resources, {"cores"}), true);
  printField(out, "Memory (GiB)", text(resources, {"memory_gib"}), true);
  out << '\n';
}

void printMatchingCapabilities(std::ostream& out, const Json& matches) {
  printHeading(out, "Matching Compute Capabilities");
  if (items(matches).empty()) {
    out << "No matching compute capabilities found\n";
    return;
  }
  Table table({"Capability Type", "Comparator", "Capability Names"});
  for (const Json& match : items(matches)) {
    table.addRow({text(match, {"type"}), text(match, {"comparator"}), join(at(match, {"names"}), ",")});
  }
  table.print(out);
}

void printApplications(std::ostream& out, const Json& applications) {
  printHeading(out, "Applications");
  if (items(applications).empty()) {
    out << "No applications found\n";
    return;
  }
  Table table({"Payload Name", "Cores", "Memory (GiB)", "Ports", "Persistent Volumes"}, {.row_separator = true});
  for (const Json& app : items(applications)) {
    std::vector<std::string> ports, volumes;
    for (const Json& port : items(at(app, {"ports"}))) {
      ports.push_back(text(port, {"protocol"}) + ":" + text(port, {"port"}));
    }
    for (const Json& volume : items(at(app, {"persistent_volumes"}))) {
      volumes.push_back("Storage Class: " + text(volume, {"storage_class"}) + ", Capacity: " +
                        text(volume, {"capacity_gib"}) + " GB" + ", Mount Path: " + text(volume, {"mount_path"}));
    }
    table.addRow({text(app, {"payload_name"}), text(app, {"resources", "cores"}),
                  text(app, {"resources", "memory_gib"}), joinLines(ports), joinLines(volumes)});
  }
  table.print(out);
}

void printDeployments(std::ostream& out, const Json& deployments) {
  printHeading(out, "Deployments");
  if (items(deployments).empty()) {
    out << "No deployments found\n";
    return;
  }
  Table table({"Deployment ID", "Instance Count", "State", "Message", "Payload Information"});
  for (const Json& deployment : items(deployments)) {
    std::vector<std::string> payloads;
    for (const Json& payload : items(at(deployment, {"payload_coordinates"}))) {
      payloads.push_back("Payload Name: " + text(payload, {"payload_name"}) +
                         ", Coordinates: " + at(payload, {"coordinates"}).dump());
    }
    table.addRow({text(deployment, {"deployment_id"}), text(deployment, {"instance_count"}),
                  text(deployment, {"state"}), text(deployment, {"message"}), joinLines(payloads)});
  }
  table.print(out);
}

void printOperationsSummary(std::ostream& out, const Json& summary) {
  printHeading(out, "Operations Summary");
  Table table({"Operation Type", "# Pending Approval", "# Approved", "# Failed", "# Succeeded"}, {.show_total = false});
  for (const std::string& type : model::namesOf<model::OperationType>()) {
    auto count = [&](model::OperationState state) {
      const Json& n = at(summary, {type.c_str(), model::toString(state).c_str()});
      return n.is_null() ? std::string("0") : text(n);
    };
    using enum model::OperationState;
    table.addRow({type, count(kPendingApproval), count(kApproved), count(kFailed), count(kSucceeded)});
  }
  table.print(out);
}

}  // namespace

namespace {

// A node's agent in one cell (docs/agents.md): "reachable, 0.14.0, heard 2s ago",
// "UNREACHABLE, 0.14.0, heard 45s ago", "UNREACHABLE, never heard", and for a new node still
// within heartbeat_ttl_s of the host's start or its creation, "no report yet"; "" for nodes
// without one.
std::string agentCell(const Json& node) {
  const Json& agent = at(node, {"agent"});
  if (!agent.is_object()) return "";
  const bool reachable = agent.value("reachable", false);
  const Json& age = at(agent, {"heartbeat_age_s"});
  if (!age.is_number()) return reachable ? "no report yet" : "UNREACHABLE, never heard";
  std::string cell = reachable ? "reachable" : "UNREACHABLE";
  if (const std::string version = agent.value("version", ""); !version.empty()) cell += ", " + version;
  return cell + ", heard " + std::to_string(static_cast<int64_t>(age.get<double>())) + "s ago";
}

}  // namespace

void printNodeTable(std::ostream& out, const Json& nodes) {
  Table table({"Node Name", "Update Domain", "Total Cores", "Total Memory", "System Reserved Cores",
               "System Reserved Memory", "Remaining Cores", "Remaining Memory", "Cluster", "State", "Message",
               "Agent"});
  for (const Json& node : items(nodes)) {
    table.addRow({text(node, {"name"}), text(node, {"update_domain"}), text(node, {"total", "cores"}),
                  text(node, {"total", "memory_gib"}), text(node, {"system_reserved", "cores"}),
                  text(node, {"system_reserved", "memory_gib"}), text(node, {"remaining", "cores"}),
                  text(node, {"remaining", "memory_gib"}), text(node, {"cluster"}), text(node, {"state"}),
                  text(node, {"message"}), agentCell(node)});
  }
  table.print(out);
}

void printCapabilityTable(std::ostream& out, const Json& capabilities) {
  Table table({"Capability Name", "Type", "Score"});
  for (const Json& capability : items(capabilities)) {
    table.addRow({text(capability, {"name"}), text(capability, {"type"}), text(capability, {"score"})});
  }
  table.print(out);
}

void printClusterTable(std::ostream& out, const Json& clusters) {
  Table table({"Cluster Name", "Driver", "State", "Message"});
  for (const Json& cluster : items(clusters)) {
    table.addRow({text(cluster, {"name"}), text(cluster, {"driver_kind"}), text(cluster, {"state"}),
                  text(cluster, {"message"})});
  }
  table.print(out);
}

void printPlanTable(std::ostream& out, const Json& plans, const std::map<std::string, int64_t>& deployment_counts) {
  Table table(
      {"Deployment Plan Name", "Namespace", "Service Name", "State", "Message", "# Applications", "# Deployments"});
  for (const Json& plan : items(plans)) {
    std::string name = text(plan, {"name"});
    auto count = deployment_counts.find(name);
    table.addRow({name, text(plan, {"namespace"}), text(plan, {"service_name"}), text(plan, {"state"}),
                  text(plan, {"message"}), std::to_string(items(at(plan, {"applications"})).size()),
                  count == deployment_counts.end() ? "" : std::to_string(count->second)});
  }
  table.print(out);
}

namespace {

// Whether a runtime instance serves: only a RUNNING one can, whatever health it last had (a
// TERMINATED runtime of a DELETED instance keeps its last probe).
std::string healthyText(const Json& runtime) {
  const Json& healthy = at(runtime, {"health", "healthy"});
  if (!spells(text(runtime, {"state"}), model::RuntimeState::kRunning) && healthy.is_boolean()) return "false";
  return text(healthy);
}

// The operations an instance list entry carries: all of them (`instances show`), the newest
// (the plan view), or the one under way (the instance list's "unfinished_operation").
Json operationsOf(const Json& entry) {
  const Json& operations = at(entry, {"operations"});
  if (operations.is_array()) return operations;
  const Json& unfinished = at(entry, {"unfinished_operation"});
  return unfinished.is_object() ? Json::array({unfinished}) : Json::array();
}

// What a runtime instance runs, a line a payload: "Image: nginx:1.27" or "Command: ...".
// Coordinates come by payload ({"nginx-payload": {"image": ...}}), or flat; with several
// payloads each line names its own.
std::vector<std::string> coordinateLines(const Json& coordinates) {
  auto describe = [](const Json& payload, const std::string& prefix, std::vector<std::string>& lines) {
    const Json& image = at(payload, {"image"});
    const Json& command = at(payload, {"command"});
    if (!image.is_null()) lines.push_back(prefix + "Image: " + text(image));
    if (!command.is_null())
      lines.push_back(prefix + "Command: " + (command.is_array() ? join(command, " ") : text(command)));
  };
  std::vector<std::string> lines;
  if (!coordinates.is_object()) return lines;
  if (coordinates.contains("image") || coordinates.contains("command")) {
    describe(coordinates, "", lines);
    return lines;
  }
  for (const auto& [payload, value] : coordinates.items()) {
    describe(value, coordinates.size() > 1 ? payload + " " : "", lines);
  }
  return lines;
}

}  // namespace

void printInstanceTable(std::ostream& out, const Json& instances) {
  Table table(
      {"Meta Instance Name", "Deployment Plan Name", "Deployment ID", "State", "Runtime Instances", "Operations"},
      {.row_separator = true, .align_left = true});
  for (const Json& entry : items(instances)) {
    const Json& meta = at(entry, {"meta_instance"});
    std::vector<std::vector<std::string>> runtimes, operations;
    for (const Json& runtime : items(at(entry, {"runtime_instances"}))) {
      std::vector<std::string> lines = {"Node Name: " + text(runtime, {"node"}),
                                        "Is Active: " + text(runtime, {"is_active"}),
                                        "ID: " + text(runtime, {"metadata", "id"}),
                                        "State: " + text(runtime, {"state"}),
                                        "Host Ports: " + hostPorts(at(runtime, {"ports"})),
                                        "Healthy: " + healthyText(runtime),
                                        "Ready Since: " + text(runtime, {"health", "ready_since"})};
      for (std::string& line : coordinateLines(at(runtime, {"coordinates"}))) lines.push_back(std::move(line));
      lines.push_back("Message: " + text(runtime, {"message"}));
      runtimes.push_back(std::move(lines));
    }
    const Json shown_operations = operationsOf(entry);
    for (const Json& operation : items(shown_operations)) {
      operations.push_back({"ID: " + text(operation, {"metadata", "id"}), "Type: " + text(operation, {"type"}),
                            "Intent ID: " + text(operation, {"intent"}), "State: " + text(operation, {"state"}),
                            "Requested By: " + text(operation, {"requested_by"}),
                            "Approved By: " + approvedByText(operation),
                            "Attempts: " + text(operation, {"attempts"}), "Message: " + text(operation, {"message"})});
    }
    table.addRow({text(meta, {"name"}), text(meta, {"plan"}), text(meta, {"deployment_id"}), text(meta, {"state"}),
                  blocks(runtimes), blocks(operations)});
  }
  table.print(out);
}

void printOperationTable(std::ostream& out, const Json& operations) {
  Table table({"Operation ID", "Meta Instance Name", "Deployment Plan Name", "Type", "Intent ID", "State",
               "Requested By", "Approved By", "Message"});
  for (const Json& op : items(operations)) {
    table.addRow({text(op, {"metadata", "id"}), text(op, {"meta_instance"}), text(op, {"plan"}), text(op, {"type"}),
                  text(op, {"intent"}), text(op, {"state"}), text(op, {"requested_by"}), approvedByText(op),
                  text(op, {"message"})});
  }
  table.print(out);
}

void printEventTable(std::ostream& out, const Json& events, TableStyle style) {
  Table table({"Seq", "At", "Actor", "Kind", "Subject", "Data"}, style);
  for (const Json& event : items(events)) {
    const Json& data = at(event, {"data"});
    table.addRow({text(event, {"seq"}), text(event, {"at"}), text(event, {"actor"}), text(event, {"kind"}),
                  text(event, {"subject"}), data.empty() ? "" : data.dump()});
  }
  table.print(out);
}

namespace {

// A DRAINING node: who drained it and where each instance still on it stands.
void printDrainProgress(std::ostream& out, const Json& node, const Json& drain) {
  printHeading(out, "Drain");
  printField(out, "Drained By", text(node, {"drained_by"}), true);
  printField(out, "Instances Left", text(drain, {"instances_left"}), true);
  if (items(at(drain, {"instances"})).empty()) {
    out << "The node is empty: it can be deleted\n\n";
    return;
  }
  Table table({"Instance", "Runtime State", "Operation", "Operation State", "Message"});
  for (const Json& instance : items(at(drain, {"instances"}))) {
    const Json& op = at(instance, {"operation"});
    table.addRow({text(instance, {"instance"}), text(instance, {"state"}),
                  op.is_object() ? text(op, {"type"}) + " " + text(op, {"id"}) : "-", text(op, {"state"}),
                  text(op, {"message"})});
  }
  table.print(out);
  out << '\n';
}

}  // namespace

void printNodeInfo(std::ostream& out, const Json& node) {
  printHeading(out, "Node Info");
  printField(out, "Name", text(node, {"name"}));
  printField(out, "ID", text(node, {"metadata", "id"}));
  printField(out, "Version", text(node, {"metadata", "generation"}));
  printField(out, "Cluster", text(node, {"cluster"}));
  printField(out, "Update Domain", text(node, {"update_domain"}));
  out << '\n';

  printHeading(out, "Status");
  printField(out, "State", text(node, {"state"}), true);
  printField(out, "Message", text(node, {"message"}), true);
  if (std::string agent = agentCell(node); !agent.empty()) printField(out, "Agent", agent, true);
  out << '\n';

  if (const Json& drain = at(node, {"drain"}); drain.is_object()) printDrainProgress(out, node, drain);

  printHeading(out, "Capabilities");
  printField(out, "Capability Names", join(at(node, {"capabilities"}), ", "), true);
  out << '\n';

  printResources(out, "Total Resources", at(node, {"total"}));
  printResources(out, "System Reserved Resources", at(node, {"system_reserved"}));
  printResources(out, "Remaining Resources", at(node, {"remaining"}));

  printHeading(out, "Local Volumes");
  if (items(at(node, {"local_volumes"})).empty()) {
    out << "No local volumes found\n";
  } else {
    Table table({"Mount Path", "Storage Class", "Capacity (GiB)"});
    for (const Json& volume : items(at(node, {"local_volumes"}))) {
      table.addRow({text(volume, {"mount_path"}), text(volume, {"storage_class"}), text(volume, {"capacity_gib"})});
    }
    table.print(out);
  }
  out << '\n';

  printHeading(out, "Labels");
  const Json& labels = at(node, {"labels"});
  if (!labels.is_object() || labels.empty()) {
    out << "No labels found\n";
  } else {
    Table table({"Key", "Value"});
    for (const auto& [key, value] : labels.items()) table.addRow({key, text(value)});
    table.print(out);
  }
}

namespace {

// The control loop's halt, when one is in force (docs/architecture.md#observer).
void printControlLoopHalt(std::ostream& out, const Json& control_loop) {
  const Json& halt = at(control_loop, {"halt"});
  if (!halt.is_object()) return;
  printHeading(out, "Control Loop HALTED");
  printField(out, "Reason", text(halt, {"reason"}), true);
  printField(out, "Alarm", text(halt, {"kind"}), true);
  printField(out, "Since", text(halt, {"since"}), true);
  printField(out, "Halted By", text(halt, {"by"}), true);
  out << "Nothing is changed until an admin runs: tide resume\n\n";
}

}  // namespace

// {"v2": 10, "v1": 90} → "v2 10%, v1 90%"; "none" when empty.
std::string trafficShares(const Json& shares) {
  if (!shares.is_object() || shares.empty()) return "none";
  std::string out;
  for (const auto& [deployment, pct] : shares.items()) {
    out += (out.empty() ? "" : ", ") + deployment + " " + text(pct) + "%";
  }
  return out;
}

// docs/architecture.md#traffic: the plan's endpoint, the split asked and the split applied.
void printTraffic(std::ostream& out, const Json& traffic) {
  if (!traffic.is_object()) return;
  printHeading(out, "Traffic");
  printField(out, "Endpoint", text(traffic, {"listen"}), true);
  if (traffic.contains("preview_listen")) printField(out, "Preview", text(traffic, {"preview_listen"}), true);
  printField(out, "Router", text(traffic, {"router"}), true);
  printField(out, "Weights Asked", trafficShares(at(traffic, {"asked"})), true);
  printField(out, "Weights Applied", trafficShares(at(traffic, {"applied"})), true);
  if (traffic.contains("metrics_url")) printField(out, "Router Metrics", text(traffic, {"metrics_url"}), true);
  if (traffic.contains("reason")) printField(out, "Reason", text(traffic, {"reason"}), true);
  out << '\n';
}

void printPlanShow(std::ostream& out, const Json& view, TimePoint now) {
  const Json& plan = at(view, {"plan"});
  printControlLoopHalt(out, at(view, {"control_loop"}));
  printHeading(out, "Deployment Plan Info");
  printField(out, "Name", text(plan, {"name"}));
  printField(out, "ID", text(plan, {"metadata", "id"}));
  printField(out, "Version", text(plan, {"metadata", "generation"}));
  printField(out, "Namespace", text(plan, {"namespace"}));
  printField(out, "Service Name", text(plan, {"service_name"}));
  printField(out, "Strategy", text(plan, {"strategy", "script"}));
  printField(out, "Max Per Node", text(plan, {"placement", "max_per_node"}));
  printField(out, "Bin Pack", text(plan, {"placement", "bin_pack"}));
  out << '\n';

  printHeading(out, "Status");
  printField(out, "State", text(plan, {"state"}), true);
  printField(out, "Message", text(plan, {"message"}), true);
  out << '\n';

  printMatchingCapabilities(out, at(plan, {"matching_capabilities"}));
  out << '\n';
  printApplications(out, at(plan, {"applications"}));
  out << '\n';
  printDeployments(out, at(view, {"deployments"}));
  out << '\n';
  printTraffic(out, at(view, {"traffic"}));
  if (const Json* newest = newestDeployment(at(view, {"deployments"}))) {
    printRolloutSection(out, plan, *newest, now, at(view, {"waiting_for_approval"}));
    out << '\n';
  }

  printHeading(out, "Instance Summary");
  const Json& summary = at(view, {"instance_summary"});
  const Json& total = at(summary, {"total"});
  if (!total.is_number() || total.get<double>() == 0) {
    out << "No instances found\n";
    return;
  }
  printField(out, "Total Instances", text(total), true);
  printField(out, "Running Instances", text(summary, {"running"}), true);
  printField(out, "Pending Instances", text(summary, {"pending"}), true);
  printField(out, "Failed Instances", text(summary, {"failed"}), true);
  printField(out, "Ready Instances", text(summary, {"ready"}), true);
  out << '\n';
  printOperationsSummary(out, at(view, {"operations_summary"}));
  out << '\n';
  printHeading(out, "Instances");
  const Json& instances = at(view, {"instances"});
  printInstanceTable(out, instances);
  // The host sends one page of instances with the plan (the summaries above count them all).
  if (at(view, {"next_after"}).is_number()) {
    out << "Showing the first " << items(instances).size() << " of " << text(total)
        << " instances; all of them: tide instances list --plan " << text(plan, {"name"}) << "\n";
  }
}

namespace {

constexpr size_t kShortShaLength = 12;

// "1.25 ms", "840 us": how long a policy took.
std::string microseconds(const Json& duration) {
  if (!duration.is_number()) return "";
  const double us = duration.get<double>();
  return us >= 1000 ? formatNumber(std::round(us / 10) / 100) + " ms" : formatNumber(us) + " us";
}

// One line per approval given: "alice (approver) at 2026-...: looks fine [override]".
std::string givenApprovals(const Json& given) {
  std::vector<std::string> lines;
  for (const Json& approval : items(given)) {
    std::string line = text(approval, {"actor"});
    if (std::string role = text(approval, {"role"}); !role.empty()) line += " (" + role + ")";
    if (std::string when = text(approval, {"at"}); !when.empty()) line += " at " + when;
    if (std::string reason = text(approval, {"reason"}); !reason.empty()) line += ": " + reason;
    if (at(approval, {"override"}) == true) line += " [override]";
    lines.push_back(std::move(line));
  }
  return joinLines(lines);
}

void printApprovals(std::ostream& out, const Json& view) {
  const Json& approvals = at(view, {"approvals"});
  const Json& asked = at(view, {"decision", "approvals"});
  if (!approvals.is_object() && !asked.is_object()) return;
  printHeading(out, "Approvals");
  printField(out, "Progress", text(approvals, {"summary"}), true);
  if (spells(text(view, {"state"}), model::OperationState::kPendingApproval))
    printField(out, "Still Needed", text(approvals, {"still_needed"}), true);
  if (std::string role = text(asked, {"role"}); !role.empty()) printField(out, "Role Required", role, true);
  if (!items(at(asked, {"distinct_from"})).empty()) {
    printField(out, "Distinct From", join(at(asked, {"distinct_from"}), ", "), true);
  }
  if (at(view, {"decision", "overridable"}) == true) {
    printField(out, "Soft-Denied", "one approval must override it: tide operations approve ID --override --reason TEXT",
               true);
  }
  if (std::string given = givenApprovals(at(asked, {"given"})); !given.empty()) printField(out, "Given", given, true);
  out << '\n';
}

void printPolicyDecisions(std::ostream& out, const Json& view) {
  printHeading(out, "Policy Decisions");
  const Json& decision = at(view, {"decision"});
  if (decision.is_object()) {
    printField(out, "Outcome", text(decision, {"outcome"}), true);
    printField(out, "Summary", text(decision, {"summary"}), true);
  }
  if (items(at(view, {"decisions"})).empty()) {
    out << "No policy decisions recorded\n";
    return;
  }
  Table table({"Policy", "Verdict", "Reasons", "Script", "Duration", "At"});
  for (const Json& d : items(at(view, {"decisions"}))) {
    std::string verdict = text(d, {"verdict"});
    if (std::string error = text(d, {"error_class"}); !error.empty()) verdict += " (" + error + " error)";
    table.addRow({text(d, {"policy"}), verdict, join(at(d, {"reasons"}), "\n"),
                  text(d, {"script_sha256"}).substr(0, kShortShaLength), microseconds(at(d, {"duration_us"})),
                  text(d, {"at"})});
  }
  table.print(out);
}

}  // namespace

void printOperationInfo(std::ostream& out, const Json& view) {
  printHeading(out, "Operation Info");
  printField(out, "ID", text(view, {"metadata", "id"}));
  printField(out, "Type", text(view, {"type"}));
  printField(out, "Meta Instance", text(view, {"meta_instance"}));
  printField(out, "Deployment Plan", text(view, {"plan"}));
  printField(out, "Intent ID", text(view, {"intent"}));
  printField(out, "Requested By", text(view, {"requested_by"}));
  printField(out, "Priority", text(view, {"priority"}));
  printField(out, "Version", text(view, {"metadata", "generation"}));
  printField(out, "Created At", text(view, {"metadata", "created_at"}));
  printField(out, "Updated At", text(view, {"metadata", "updated_at"}));
  out << '\n';

  printHeading(out, "Status");
  printField(out, "State", text(view, {"state"}), true);
  printField(out, "Message", text(view, {"message"}), true);
  const bool rejected = spells(text(view, {"state"}), model::OperationState::kRejected);
  printField(out, rejected ? "Rejected By" : "Approved By", text(view, {"approved_by"}), true);
  printField(out, "Attempts", text(view, {"attempts"}), true);
  if (std::string next = text(view, {"next_attempt_at"}); !next.empty()) printField(out, "Next Attempt At", next, true);
  out << '\n';

  printApprovals(out, view);
  printPolicyDecisions(out, view);
}

void printInstanceInfo(std::ostream& out, const Json& view, size_t operations_shown) {
  const Json& meta = at(view, {"meta_instance"});
  printHeading(out, "Meta Instance Info");
  printField(out, "Name", text(meta, {"name"}));
  printField(out, "ID", text(meta, {"metadata", "id"}));
  printField(out, "Version", text(meta, {"metadata", "generation"}));
  printField(out, "Deployment Plan", text(meta, {"plan"}));
  printField(out, "Deployment ID", text(meta, {"deployment_id"}));
  printField(out, "Created At", text(meta, {"metadata", "created_at"}));
  out << '\n';

  printHeading(out, "Status");
  printField(out, "State", text(meta, {"state"}), true);
  printField(out, "Message", text(meta, {"message"}), true);
  out << '\n';

  printHeading(out, "Runtime Instances");
  if (items(at(view, {"runtime_instances"})).empty()) {
    out << "No runtime instances: it has not been placed on a node\n";
  } else {
    Table table({"ID", "Node Name", "Is Active", "State", "Host Ports", "Healthy", "Ready Since", "Runs", "Message"});
    for (const Json& runtime : items(at(view, {"runtime_instances"}))) {
      table.addRow({text(runtime, {"metadata", "id"}), text(runtime, {"node"}), text(runtime, {"is_active"}),
                    text(runtime, {"state"}), hostPorts(at(runtime, {"ports"})), healthyText(runtime),
                    text(runtime, {"health", "ready_since"}), joinLines(coordinateLines(at(runtime, {"coordinates"}))),
                    text(runtime, {"message"})});
    }
    table.print(out);
  }
  out << '\n';

  printHeading(out, "Operations");
  const Json& operations = items(at(view, {"operations"}));
  if (operations.empty()) {
    out << "No operations found\n";
    return;
  }
  // Newest first: the list is in id order.
  Json newest = Json::array();
  for (auto it = operations.rbegin(); it != operations.rend() && newest.size() < operations_shown; ++it) {
    newest.push_back(*it);
  }
  printOperationTable(out, newest);
  if (newest.size() < operations.size()) {
    out << "Showing the newest " << newest.size() << " of " << operations.size()
        << " operations; all of them: tide operations list --meta-instance " << text(meta, {"name"}) << '\n';
  }
}

namespace {

// "3 (ACTIVE 2, INACTIVE 1)": a count with its breakdown by state.
std::string describeCounts(const Json& counts) {
  std::string out = text(counts, {"total"});
  std::string states;
  const Json& by_state = at(counts, {"by_state"});
  if (by_state.is_object()) {
    for (const auto& [state, n] : by_state.items()) states += (states.empty() ? "" : ", ") + state + " " + text(n);
  }
  return states.empty() ? out : out + " (" + states + ")";
}

// "new 50, old 50": the keys of a small object with their values.
std::string keyValues(const Json& object) {
  std::string out;
  if (!object.is_object()) return out;
  for (const auto& [key, value] : object.items()) out += (out.empty() ? "" : ", ") + key + " " + text(value);
  return out;
}

// Whether the control loop runs, and the alarms that stop it or part of it.
void printControlLoopState(std::ostream& out, const Json& control_loop) {
  if (at(control_loop, {"halt"}).is_object()) {
    printControlLoopHalt(out, control_loop);
  } else {
    printHeading(out, "Control Loop");
    printField(out, "State", "running", true);
    out << '\n';
  }
  const Json& partition = at(control_loop, {"partition"});
  if (!partition.is_object()) return;
  printHeading(out, "Partition Alarm: lost nodes' instances are not replaced");
  printField(out, "Since", text(partition, {"since"}), true);
  printField(out, "Nodes", join(at(partition, {"nodes"}), ", "), true);
  printField(out, "Message", text(partition, {"message"}), true);
  out << '\n';
}

void printRollouts(std::ostream& out, const Json& rollouts) {
  printHeading(out, "Rollouts in Flight");
  if (items(rollouts).empty()) {
    out << "No rollouts in flight\n";
    return;
  }
  Table table({"Deployment Plan Name", "Deployment ID", "State", "Strategy", "Step", "Weights", "New Ready",
               "Old Ready", "Waiting For"});
  for (const Json& rollout : items(rollouts)) {
    std::string step = text(rollout, {"step"});
    if (!step.empty() && at(rollout, {"steps"}).is_number()) step += "/" + text(rollout, {"steps"});
    table.addRow({text(rollout, {"plan"}), text(rollout, {"deployment_id"}), text(rollout, {"state"}),
                  text(rollout, {"strategy"}), step, keyValues(at(rollout, {"weights"})),
                  text(rollout, {"instances", "new", "ready"}) + "/" + text(rollout, {"instances", "new", "total"}),
                  text(rollout, {"instances", "old", "ready"}) + "/" + text(rollout, {"instances", "old", "total"}),
                  text(rollout, {"waiting_for"})});
  }
  table.print(out);
}

// "nginx-deployment-plan (1 of 3 running), ...": the plans with fewer instances running than
// their current deployment asks for.
std::string describeUnderReplicated(const Json& plans) {
  std::string out;
  for (const Json& plan : items(plans)) {
    if (at(plan, {"under_replicated"}) != true) continue;
    out += (out.empty() ? "" : ", ") + text(plan, {"name"}) + " (" + text(plan, {"instances", "running"}) + " of " +
           text(plan, {"desired"}) + " running)";
  }
  return out;
}

// Scripts whose current content failed to load; nothing when every one loaded.
void printFailedScripts(std::ostream& out, const Json& scripts) {
  if (items(scripts).empty()) return;
  printHeading(out, "Scripts That Failed to Load");
  Table table({"Path", "Kind", "Status", "Last Attempt At", "Last Error"});
  for (const Json& script : items(scripts)) {
    table.addRow({text(script, {"path"}), text(script, {"kind"}), text(script, {"status"}),
                  text(script, {"last_attempt_at"}), text(script, {"last_error"})});
  }
  table.print(out);
  out << '\n';
}

// Each plan's desired instances (its current deployment's count) against those running.
void printPlanInstances(std::ostream& out, const Json& plans) {
  printHeading(out, "Deployment Plan Instances");
  if (items(plans).empty()) {
    out << "No deployment plans\n";
    return;
  }
  Table table(
      {"Deployment Plan Name", "Current Deployment", "Desired", "Running", "Ready", "Failed", "Under-Replicated"});
  for (const Json& plan : items(plans)) {
    table.addRow({text(plan, {"name"}), text(plan, {"deployment_id"}), text(plan, {"desired"}),
                  text(plan, {"instances", "running"}), text(plan, {"instances", "ready"}),
                  text(plan, {"instances", "failed"}), at(plan, {"under_replicated"}) == true ? "yes" : ""});
  }
  table.print(out);
}

// One row per reason a rollout is held.
void printHeldRollouts(std::ostream& out, const Json& rollouts) {
  printHeading(out, "Held Rollouts");
  if (items(rollouts).empty()) {
    out << "No rollouts are held\n";
    return;
  }
  Table table({"Deployment Plan Name", "Deployment ID", "State", "Held By", "Reason"});
  for (const Json& rollout : items(rollouts)) {
    for (const Json& hold : items(at(rollout, {"holds"}))) {
      table.addRow({text(rollout, {"plan"}), text(rollout, {"deployment_id"}), text(rollout, {"state"}),
                    text(hold, {"kind"}), text(hold, {"reason"})});
    }
  }
  table.print(out);
}

void printWaitingForApproval(std::ostream& out, const Json& operations) {
  printHeading(out, "Waiting for Approval");
  if (items(operations).empty()) {
    out << "No operations are waiting for approval\n";
    return;
  }
  Table table(
      {"Operation ID", "Type", "Meta Instance Name", "Deployment Plan Name", "Requested By", "Approvals", "Message"});
  for (const Json& op : items(operations)) {
    table.addRow({text(op, {"id"}), text(op, {"type"}), text(op, {"meta_instance"}), text(op, {"plan"}),
                  text(op, {"requested_by"}), text(op, {"approvals"}), text(op, {"message"})});
  }
  table.print(out);
}

}  // namespace

void printStatus(std::ostream& out, const Json& status) {
  printControlLoopState(out, at(status, {"control_loop"}));
  printField(out, "Deployment Plans", describeCounts(at(status, {"plans"})));
  printField(out, "Nodes", describeCounts(at(status, {"nodes"})));
  if (const Json& unreachable = at(status, {"nodes", "unreachable_agents"}); !items(unreachable).empty()) {
    printField(out, "Unreachable Agents", join(unreachable, ", "));
  }
  if (std::string under = describeUnderReplicated(at(status, {"plan_instances"})); !under.empty()) {
    printField(out, "Under-Replicated Plans", under);
  }
  out << '\n';
  printFailedScripts(out, at(status, {"failed_scripts"}));
  printPlanInstances(out, at(status, {"plan_instances"}));
  out << '\n';
  printRollouts(out, at(status, {"rollouts"}));
  out << '\n';
  printHeldRollouts(out, at(status, {"held_rollouts"}));
  out << '\n';
  printWaitingForApproval(out, at(status, {"waiting_for_approval"}));
}

}  // namespace tide::cli
