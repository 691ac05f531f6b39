#include "host/model/records.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "host/core/names.h"

namespace tide::model {

EffectiveStrategy effectiveStrategy(const Plan* plan, const Deployment& deployment) {
  EffectiveStrategy out;
  out.script = kDefaultStrategy;
  if (plan != nullptr) {
    if (!plan->strategy.script.empty()) out.script = plan->strategy.script;
    out.plan_params = plan->strategy.params;
  }
  if (deployment.strategy.is_object()) {
    if (auto it = deployment.strategy.find("script"); it != deployment.strategy.end() && it->is_string()) {
      out.script = it->get<std::string>();
    }
    if (auto it = deployment.strategy.find("params"); it != deployment.strategy.end()) out.deployment_params = *it;
  }
  return out;
}

std::vector<ErrorDetail> payloadCoordinateProblems(const Plan& plan, const Deployment& deployment) {
  std::set<std::string> payloads;
  for (const auto& app : plan.applications) payloads.insert(app.payload_name);
  std::vector<ErrorDetail> problems;
  std::set<std::string> given;
  for (size_t i = 0; i < deployment.payload_coordinates.size(); ++i) {
    const auto& pc = deployment.payload_coordinates[i];
    if (!payloads.count(pc.payload_name)) {
      problems.push_back({"payload_coordinates[" + std::to_string(i) + "].payload_name",
                          "plan '" + plan.name + "' has no application '" + pc.payload_name + "'", ""});
    }
    given.insert(pc.payload_name);
  }
  for (const auto& payload : payloads) {
    if (!given.count(payload)) {
      problems.push_back({"payload_coordinates", "no coordinates for application '" + payload + "'", ""});
    }
  }
  return problems;
}

std::string tokenScopeProblem(const std::string& role, const std::vector<std::string>& namespaces) {
  if (namespaces.empty()) return "";
  if (role != "operator" && role != "approver" && role != "admin") {
    return "only operator, approver and admin tokens are scoped to namespaces; a " + role +
           (role == "agent" ? " token serves one node" : " token reads every namespace");
  }
  std::set<std::string> seen;
  for (const std::string& ns : namespaces) {
    if (std::string problem = nameProblem(ns); !problem.empty()) return "namespace '" + ns + "': " + problem;
    if (!seen.insert(ns).second) return "namespace '" + ns + "' is given twice";
  }
  return "";
}

bool isPersistentSignal(const std::string& key) {
  return key == "hold" || key == "restore" || key == kHookHoldSignal || key == "approvals";
}

const Plan& planAsDeployed(const Plan& current, const Deployment& deployment) {
  return deployment.plan_snapshot ? *deployment.plan_snapshot : current;
}

bool meetsCapabilityRule(const CapabilityMatch& rule, const std::vector<std::string>& node_capabilities,
                         const std::map<std::string, Capability>& declared) {
  auto has = [&](const std::string& name) {
    return std::find(node_capabilities.begin(), node_capabilities.end(), name) != node_capabilities.end();
  };
  if (rule.comparator == "IN" || rule.comparator == "EQ" || rule.comparator == "NOT_IN") {
    const bool any = std::any_of(rule.names.begin(), rule.names.end(), has);
    return rule.comparator == "NOT_IN" ? !any : any;
  }
  const bool at_least = rule.comparator == "GTE";
  std::optional<int64_t> bound;
  for (const auto& name : rule.names) {
    auto it = declared.find(name);
    if (it == declared.end() || it->second.type != rule.type) continue;
    if (!bound || (at_least ? it->second.score < *bound : it->second.score > *bound)) bound = it->second.score;
  }
  if (!bound) return false;
  return std::any_of(node_capabilities.begin(), node_capabilities.end(), [&](const std::string& name) {
    auto it = declared.find(name);
    return it != declared.end() && it->second.type == rule.type &&
           (at_least ? it->second.score >= *bound : it->second.score <= *bound);
  });
}

void to_json(Json& j, const Meta& v) {
  j = Json{{"id", v.id}, {"generation", v.generation}, {"created_at", v.created_at}, {"updated_at", v.updated_at}};
}

void to_json(Json& j, const Resources& v) { j = Json{{"cores", v.cores}, {"memory_gib", v.memory_gib}}; }
void from_json(const Json& j, Resources& v) {
  v.cores = j.value("cores", 0.0);
  v.memory_gib = j.value("memory_gib", 0.0);
}

void to_json(Json& j, const Capability& v) {
  j = Json{{"metadata", v.meta}, {"name", v.name}, {"type", v.type}, {"score", v.score}};
}

void to_json(Json& j, const Cluster& v) {
  j = Json{
      {"metadata", v.meta}, {"name", v.name},      {"driver_kind", v.driver_kind}, {"driver_config", v.driver_config},
      {"state", v.state},   {"message", v.message}};
}

void to_json(Json& j, const LocalVolume& v) {
  j = Json{{"mount_path", v.mount_path}, {"storage_class", v.storage_class}, {"capacity_gib", v.capacity_gib}};
}
void from_json(const Json& j, LocalVolume& v) {
  v.mount_path = j.value("mount_path", "");
  v.storage_class = j.value("storage_class", "");
  v.capacity_gib = j.value("capacity_gib", 0.0);
}

void to_json(Json& j, const Node& v) {
  j = Json{{"metadata", v.meta},
           {"name", v.name},
           {"cluster", v.cluster},
           {"update_domain", v.update_domain},
           {"total", v.total},
           {"system_reserved", v.system_reserved},
           {"remaining", v.remaining},
           {"capabilities", v.capabilities},
           {"local_volumes", v.local_volumes},
           {"labels", v.labels},
           {"state", v.state},
           {"message", v.message}};
  if (!v.drained_by.empty()) j["drained_by"] = v.drained_by;
}

void to_json(Json& j, const CapabilityMatch& v) {
  j = Json{{"type", v.type}, {"comparator", v.comparator}, {"names", v.names}};
}
void from_json(const Json& j, CapabilityMatch& v) {
  v.type = j.value("type", "");
  v.comparator = j.value("comparator", "");
  v.names = j.value("names", std::vector<std::string>{});
}

void to_json(Json& j, const Port& v) { j = Json{{"protocol", v.protocol}, {"port", v.port}}; }
void from_json(const Json& j, Port& v) {
  v.protocol = j.value("protocol", "");
  v.port = j.value("port", 0);
}

void to_json(Json& j, const PersistentVolume& v) {
  j = Json{{"storage_class", v.storage_class}, {"capacity_gib", v.capacity_gib}, {"mount_path", v.mount_path}};
}
void from_json(const Json& j, PersistentVolume& v) {
  v.storage_class = j.value("storage_class", "");
  v.capacity_gib = j.value("capacity_gib", 0.0);
  v.mount_path = j.value("mount_path", "");
}

void to_json(Json& j, const HealthCheck& v) {
  j = Json{{"type", v.type},
           {"port", v.port},
           {"path", v.path},
           {"command", v.command},
           {"interval_seconds", v.interval_seconds},
           {"timeout_seconds", v.timeout_seconds},
           {"healthy_threshold", v.healthy_threshold},
           {"unhealthy_threshold", v.unhealthy_threshold}};
}
void from_json(const Json& j, HealthCheck& v) {
  HealthCheck d;
  v.type = j.value("type", d.type);
  v.port = j.value("port", d.port);
  v.path = j.value("path", d.path);
  v.command = j.value("command", d.command);
  v.interval_seconds = j.value("interval_seconds", d.interval_seconds);
  v.timeout_seconds = j.value("timeout_seconds", d.timeout_seconds);
  v.healthy_threshold = j.value("healthy_threshold", d.healthy_threshold);
  v.unhealthy_threshold = j.value("unhealthy_threshold", d.unhealthy_threshold);
}

void to_json(Json& j, const Application& v) {
  j = Json{{"payload_name", v.payload_name},
           {"resources", v.resources},
           {"ports", v.ports},
           {"persistent_volumes", v.persistent_volumes},
           {"health_check", v.health_check ? Json(*v.health_check) : Json(nullptr)},
           {"depends_on", v.depends_on}};
  if (!v.pod.empty()) j["pod"] = v.pod;  // absent for none: "" is no payload name
}
void from_json(const Json& j, Application& v) {
  v.payload_name = j.value("payload_name", "");
  v.resources = j.value("resources", Resources{});
  v.ports = j.value("ports", std::vector<Port>{});
  v.persistent_volumes = j.value("persistent_volumes", std::vector<PersistentVolume>{});
  if (j.contains("health_check") && j["health_check"].is_object()) {
    v.health_check = j["health_check"].get<HealthCheck>();
  } else {
    v.health_check.reset();
  }
  v.depends_on = j.value("depends_on", std::vector<std::string>{});
  v.pod = j.value("pod", "");
}

std::vector<const Application*> startOrder(const Plan& plan) {
  std::vector<const Application*> order;
  // The common case, asked per instance on every pass of the observer: declared order.
  const bool ordered = std::none_of(plan.applications.begin(), plan.applications.end(),
                                    [](const Application& app) { return !app.depends_on.empty(); });
  if (ordered) {
    for (const auto& app : plan.applications) order.push_back(&app);
    return order;
  }
  std::set<std::string> started;
  std::set<std::string> visiting;
  std::map<std::string, const Application*> by_name;
  for (const auto& app : plan.applications) by_name.emplace(app.payload_name, &app);
  // Depth first, dependencies before the application, in declared order.
  std::function<void(const Application&)> visit = [&](const Application& app) {
    if (started.count(app.payload_name) || !visiting.insert(app.payload_name).second) return;
    for (const std::string& name : app.depends_on) {
      if (auto it = by_name.find(name); it != by_name.end()) visit(*it->second);
    }
    visiting.erase(app.payload_name);
    if (started.insert(app.payload_name).second) order.push_back(&app);
  };
  for (const auto& app : plan.applications) visit(app);
  return order;
}

std::vector<ApplicationCheck> healthChecksOf(const Plan& plan) {
  std::vector<ApplicationCheck> checks;
  for (const Application* app : startOrder(plan)) {
    if (app->health_check) checks.push_back({app->payload_name, *app->health_check});
  }
  return checks;
}

void to_json(Json& j, const StrategyRef& v) { j = Json{{"script", v.script}, {"params", v.params}}; }
void from_json(const Json& j, StrategyRef& v) {
  v.script = j.value("script", kDefaultStrategy);
  v.params = j.contains("params") ? j["params"] : Json::object();
}

void to_json(Json& j, const PlanPlacement& v) { j = Json{{"max_per_node", v.max_per_node}, {"bin_pack", v.bin_pack}}; }

void to_json(Json& j, const Plan& v) {
  j = Json{{"metadata", v.meta},
           {"name", v.name},
           {"namespace", v.ns},
           {"service_name", v.service_name},
           {"matching_capabilities", v.matching_capabilities},
           {"applications", v.applications},
           {"strategy", v.strategy},
           {"approval", Json{{"policies", v.approval_policies}, {"min_approvals", v.approval_min_approvals}}},
           {"placement", v.placement},
           {"state", v.state},
           {"message", v.message}};
  if (v.traffic.declared()) j["traffic"] = v.traffic;
}

void to_json(Json& j, const PayloadCoordinates& v) {
  j = Json{{"payload_name", v.payload_name}, {"coordinates", v.coordinates}};
}
void from_json(const Json& j, PayloadCoordinates& v) {
  v.payload_name = j.value("payload_name", "");
  v.coordinates = j.contains("coordinates") ? j["coordinates"] : Json::object();
}

void to_json(Json& j, const Deployment& v) {
  j = Json{{"metadata", v.meta},
           {"plan", v.plan},
           {"deployment_id", v.deployment_id},
           {"payload_coordinates", v.payload_coordinates},
           {"instance_count", v.instance_count},
           {"strategy", v.strategy},
           {"rollout_state", v.rollout_state},
           {"signals", v.signals},
           {"state", v.state},
           {"message", v.message},
           {"started_at", v.started_at},
           {"completed_at", v.completed_at},
           {"paused_seconds", v.paused_seconds},
           {"paused_since", v.paused_since},
           {"added_by", v.added_by},
           {"plan_generation", v.plan_generation}};
  // What its rollout runs with: the plan as deployed, not the plan as it is since.
  if (v.plan_snapshot) {
    const EffectiveStrategy in_force = effectiveStrategy(v.plan_snapshot.get(), v);
    Json params = in_force.plan_params.is_object() ? in_force.plan_params : Json::object();
    if (in_force.deployment_params.is_object()) params.update(in_force.deployment_params);
    j["strategy_in_force"] = Json{{"script", in_force.script}, {"params", std::move(params)}};
  }
}

void to_json(Json& j, const MetaInstance& v) {
  j = Json{{"metadata", v.meta}, {"name", v.name},      {"plan", v.plan}, {"deployment_id", v.deployment_id},
           {"state", v.state},   {"message", v.message}};
}

void to_json(Json& j, const RuntimeInstance& v) {
  j = Json{{"metadata", v.meta},
           {"meta_instance", v.meta_instance},
           {"node", v.node},
           {"is_active", v.is_active},
           {"coordinates", v.coordinates},
           {"reservation", v.reservation},
           {"ports", v.ports},
           {"volumes", v.volumes},
           {"driver_handle", v.driver_handle},
           {"health", Json{{"healthy", v.healthy}, {"ready_since", v.ready_since}}},
           {"state", v.state},
           {"message", v.message}};
}

void to_json(Json& j, const Operation& v) {
  j = Json{{"metadata", v.meta},
           {"meta_instance", v.meta_instance},
           {"plan", v.plan},
           {"type", v.type},
           {"intent", v.intent},
           {"requested_by", v.requested_by},
           {"approved_by", v.approved_by},
           {"decision", v.decision},
           {"attempts", v.attempts},
           {"next_attempt_at", v.next_attempt_at},
           {"priority", v.priority},
           {"target", v.target},
           {"state", v.state},
           {"message", v.message}};
}

void to_json(Json& j, const ControlHalt& v) {
  j = Json{{"kind", v.kind}, {"reason", v.reason}, {"details", v.details}, {"since", v.since}, {"by", v.by}};
}

void to_json(Json& j, const Event& v) {
  j = Json{{"seq", v.seq},         {"at", v.at},     {"actor", v.actor},         {"kind", v.kind},
           {"subject", v.subject}, {"data", v.data}, {"prev_hash", v.prev_hash}, {"hash", v.hash}};
}

void to_json(Json& j, const ScriptVersion& v) {
  j = Json{{"id", v.id},         {"path", v.path},  {"kind", v.kind}, {"sha256", v.sha256}, {"loaded_at", v.loaded_at},
           {"status", v.status}, {"error", v.error}};
}

void to_json(Json& j, const Decision& v) {
  j = Json{{"id", v.id},
           {"operation_id", v.operation_id},
           {"policy", v.policy},
           {"script_sha256", v.script_sha256},
           {"verdict", v.verdict},
           {"reasons", v.reasons},
           {"duration_us", v.duration_us},
           {"error_class", v.error_class},
           {"at", v.at}};
}

}  // namespace tide::model
