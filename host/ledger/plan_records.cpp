// Plans and their deployments.

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>

#include "host/core/listen_probe.h"
#include "host/core/names.h"
#include "host/ledger/ledger_internal.h"

namespace tide::ledger {
namespace {

const char* kPlanSelect =
    "SELECT id, generation, created_at, updated_at, name, namespace, service_name, spec, state, message, "
    "max_per_node, bin_pack, traffic_route FROM plans";

// The parts of a plan that a PUT may change and a deployment snapshots, as plans.spec holds
// them (placement has columns of its own there; a snapshot carries it inside).
Json specOf(const Plan& plan) {
  Json spec{{"matching_capabilities", plan.matching_capabilities},
            {"applications", plan.applications},
            {"strategy", plan.strategy},
            {"approval_policies", plan.approval_policies},
            {"approval_min_approvals", plan.approval_min_approvals}};
  // Only when declared: a plan without traffic keeps the spec it had before migration 013.
  if (plan.traffic.declared()) spec["traffic"] = plan.traffic;
  return spec;
}

void readSpec(const Json& spec, Plan& p) {
  p.matching_capabilities = spec.value("matching_capabilities", std::vector<CapabilityMatch>{});
  p.applications = spec.value("applications", std::vector<Application>{});
  p.strategy = spec.value("strategy", StrategyRef{});
  p.approval_policies = spec.value("approval_policies", std::vector<std::string>{});
  p.approval_min_approvals = spec.value("approval_min_approvals", 1);
  p.traffic = spec.value("traffic", model::PlanTraffic{});
}

// What a deployment keeps of its plan (docs/architecture.md#changing-a-plan).
Json snapshotOf(const Plan& plan) {
  Json snapshot = specOf(plan);
  snapshot["placement"] = plan.placement;
  snapshot["generation"] = plan.meta.generation;
  return snapshot;
}

Plan planFromRow(const soci::row& r) {
  Plan p;
  p.meta = {rowInt(r, 0), rowInt(r, 1), rowString(r, 2), rowString(r, 3)};
  p.name = rowString(r, 4);
  p.ns = rowString(r, 5);
  p.service_name = rowString(r, 6);
  readSpec(rowJson(r, 7), p);
  p.state = rowEnum<PlanState>(r, 8);
  p.message = rowString(r, 9);
  p.placement.max_per_node = static_cast<int>(rowInt(r, 10));
  p.placement.bin_pack = rowInt(r, 11) != 0;
  p.traffic_route = rowJson(r, 12);
  if (!p.traffic_route.is_object()) p.traffic_route = Json::object();
  return p;
}

Result<Plan> loadPlan(Db& db, const std::string& name) {
  Where where(kPlanSelect);
  where.eq("name", name).raw("deleted_at IS NULL");
  return fetchOne(db, where, "plan '" + name + "' not found", planFromRow);
}

const char* kDeploymentSelect =
    "SELECT d.id, d.generation, d.created_at, d.updated_at, p.name, d.deployment_id, d.spec, d.instance_count, "
    "d.rollout_state, d.state, d.message, d.signals, d.started_at, d.completed_at, d.paused_seconds, d.paused_since, "
    "d.added_by, p.namespace, p.service_name "
    "FROM deployments d JOIN plans p ON p.id = d.plan_id";

Deployment deploymentFromRow(const soci::row& r) {
  Deployment d;
  d.meta = {rowInt(r, 0), rowInt(r, 1), rowString(r, 2), rowString(r, 3)};
  d.plan = rowString(r, 4);
  d.deployment_id = rowString(r, 5);
  const Json spec = rowJson(r, 6);
  d.payload_coordinates = spec.value("payload_coordinates", std::vector<PayloadCoordinates>{});
  d.strategy = spec.contains("strategy") ? spec["strategy"] : Json(nullptr);
  d.instance_count = rowInt(r, 7);
  d.rollout_state = rowJson(r, 8);
  d.state = rowEnum<DeploymentState>(r, 9);
  d.message = rowString(r, 10);
  d.signals = rowJson(r, 11);
  d.started_at = rowString(r, 12);
  d.completed_at = rowString(r, 13);
  d.paused_seconds = rowDouble(r, 14);
  d.paused_since = rowString(r, 15);
  d.added_by = rowString(r, 16);
  if (auto it = spec.find("plan"); it != spec.end() && it->is_object()) {
    auto plan = std::make_shared<Plan>();
    plan->name = d.plan;
    plan->ns = rowString(r, 17);
    plan->service_name = rowString(r, 18);
    readSpec(*it, *plan);
    const Json placement = it->value("placement", Json::object());
    plan->placement.max_per_node = placement.value("max_per_node", 1);
    plan->placement.bin_pack = placement.value("bin_pack", false);
    d.plan_generation = it->value("generation", int64_t{0});
    plan->meta.generation = d.plan_generation;
    d.plan_snapshot = std::move(plan);
  }
  return d;
}

Result<Deployment> loadDeployment(Db& db, const std::string& plan, const std::string& deployment_id) {
  Where where(kDeploymentSelect);
  where.eq("p.name", plan).raw("p.deleted_at IS NULL").eq("d.deployment_id", deployment_id);
  return fetchOne(db, where, "deployment '" + deployment_id + "' of plan '" + plan + "' not found", deploymentFromRow);
}

std::string subjectOf(const std::string& plan, const std::string& deployment_id) {
  return "deployment/" + plan + "/" + deployment_id;
}

double secondsBetween(const std::string& from, const std::string& to) {
  auto a = parseTimestamp(from);
  auto b = parseTimestamp(to);
  if (!a.isOk() || !b.isOk()) return 0;
  return std::max(0.0, std::chrono::duration<double>(*b - *a).count());
}

// Replaces the deployment's signals (and, when given, its rollout state) without a
// generation check: controls and the controller's consumption are merges the callers
// computed inside this transaction.
void writeSignals(Tx& tx, const Deployment& d, const Json& signals,
                  const std::optional<Json>& rollout_state = std::nullopt) {
  Assignments set;
  set.set("signals", signals.dump());
  if (rollout_state) set.set("rollout_state", rollout_state->dump());
  // Cannot fail: without a generation nothing is stale, and `d` was read in this transaction.
  (void)updateGuarded(tx, "deployments", d.meta.id, std::nullopt, set.sql(), set.values());
}

// Moves deployment `d` to `to` and keeps the host's rollout timing in the same transaction:
// started_at on the first IN_PROGRESS (and again when a restore or retry re-opens it),
// paused_since while PAUSED, paused_seconds summing closed pauses, completed_at.
Status changeDeploymentState(Tx& tx, const Deployment& d, DeploymentState to, Generation generation,
                             const std::string& message) {
  TIDE_RETURN_IF_ERROR(
      changeState(tx, "deployments", d.meta.id, subjectOf(d.plan, d.deployment_id), d.state, to, generation, message));
  Assignments timing;
  const bool reopened = to == DeploymentState::kInProgress &&
                        (d.state == DeploymentState::kCompleted || d.state == DeploymentState::kFailed);
  if (to == DeploymentState::kInProgress && (d.started_at.empty() || reopened)) timing.set("started_at", tx.now());
  if (reopened) timing.set("paused_seconds", 0.0);
  if (d.state == DeploymentState::kPaused && to != DeploymentState::kPaused) {
    if (!reopened) timing.set("paused_seconds", d.paused_seconds + secondsBetween(d.paused_since, tx.now()));
    timing.set("paused_since", std::string());
  }
  if (to == DeploymentState::kPaused && d.state != DeploymentState::kPaused) timing.set("paused_since", tx.now());
  if (to == DeploymentState::kCompleted) timing.set("completed_at", tx.now());
  // A hook's hold (PlanRecords::holdForHook) ends with the rollout.
  if (model::isRolloutOver(to) && d.signals.is_object() && d.signals.contains(model::kHookHoldSignal)) {
    Json signals = d.signals;
    signals.erase(model::kHookHoldSignal);
    writeSignals(tx, d, signals);
  }
  if (timing.empty()) return Status::ok();
  timing.values().set("id", static_cast<long long>(d.meta.id));
  tx.db().update("UPDATE deployments SET " + timing.sql() + " WHERE id = :id", timing.values());
  return Status::ok();
}

}  // namespace

// --- plans -------------------------------------------------------------------------------------------

namespace {

// What insertPlan and updatePlan check before anything is written: names, applications,
// placement bounds.
Status checkPlanShape(const Plan& plan) {
  for (const auto& [what, value] : {std::pair<const char*, const std::string*>{"name", &plan.name},
                                    {"namespace", &plan.ns},
                                    {"service_name", &plan.service_name}}) {
    if (std::string problem = nameProblem(*value); !problem.empty()) {
      return Status::invalidArgument("plan " + std::string(what) + " '" + *value + "' " + problem,
                                     {{what, problem, ""}});
    }
  }
  if (plan.applications.empty()) {
    return Status::invalidArgument("plan '" + plan.name + "' needs at least one application",
                                   {{"applications", "required", ""}});
  }
  if (plan.placement.max_per_node < 1 || plan.placement.max_per_node > model::kMaxPerNodeLimit) {
    const std::string bounds = "must be between 1 and " + std::to_string(model::kMaxPerNodeLimit);
    return Status::invalidArgument("plan '" + plan.name + "': placement.max_per_node " + bounds,
                                   {{"placement.max_per_node", bounds, ""}});
  }
  return Status::ok();
}

// The port of a validated traffic address ("127.0.0.1:8080" → "8080").
std::string portOf(const std::string& address) {
  const auto colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(colon + 1);
}

// A plan's traffic (docs/architecture.md#traffic): well-formed addresses, listen and
// preview_listen apart, no port another live plan declares (kConflict naming it), and none
// another program on this machine listens on (kUnprocessable). `served` is what the plan
// declared before this change: those addresses are the router's own, so they are not probed.
Status checkPlanTraffic(Db& db, const Plan& plan, const model::PlanTraffic& served) {
  const model::PlanTraffic& t = plan.traffic;
  if (!t.declared()) {
    if (!t.preview_listen.empty()) {
      return Status::invalidArgument("plan '" + plan.name + "': traffic.listen is required",
                                     {{"traffic.listen", "required", ""}});
    }
    return Status::ok();
  }
  std::vector<std::pair<std::string, std::string>> addresses{{"traffic.listen", t.listen}};
  if (!t.preview_listen.empty()) addresses.emplace_back("traffic.preview_listen", t.preview_listen);
  for (const auto& [field, address] : addresses) {
    if (std::string problem = model::trafficAddressProblem(address); !problem.empty()) {
      return Status::invalidArgument("plan '" + plan.name + "': " + field + " '" + address + "' " + problem,
                                     {{field, problem, ""}});
    }
  }
  if (!t.preview_listen.empty() && portOf(t.listen) == portOf(t.preview_listen)) {
    const std::string problem = "must use another port than traffic.listen (" + t.listen + ")";
    return Status::invalidArgument("plan '" + plan.name + "': traffic.preview_listen " + problem,
                                   {{"traffic.preview_listen", problem, ""}});
  }
  if (t.drain_seconds < model::kMinDrainSeconds || t.drain_seconds > model::kMaxDrainSeconds) {
    const std::string problem = "must be between 0 and " + std::to_string(static_cast<int>(model::kMaxDrainSeconds));
    return Status::invalidArgument("plan '" + plan.name + "': traffic.drain_seconds " + problem,
                                   {{"traffic.drain_seconds", problem, ""}});
  }
  // One port, one plan: the router binds every plan's endpoints on this machine.
  std::optional<Status> taken;
  db.forEachRow("SELECT name, spec FROM plans WHERE deleted_at IS NULL", [&](const soci::row& r) {
    if (taken) return;
    const std::string other = rowString(r, 0);
    if (other == plan.name) return;
    const Json spec = rowJson(r, 1);
    if (!spec.is_object() || !spec.contains("traffic")) return;
    const model::PlanTraffic theirs = spec["traffic"].get<model::PlanTraffic>();
    for (const std::string& mine : {t.listen, t.preview_listen}) {
      if (mine.empty()) continue;
      for (const std::string& their : {theirs.listen, theirs.preview_listen}) {
        if (their.empty() || portOf(their) != portOf(mine)) continue;
        const std::string problem =
            "port " + portOf(mine) + " is already the traffic endpoint of plan '" + other + "' (" + their + ")";
        taken = Status(Code::kConflict, "plan '" + plan.name + "': traffic " + mine + ": " + problem,
                       {{mine == t.listen ? "traffic.listen" : "traffic.preview_listen", problem, ""}});
        return;
      }
    }
  });
  if (taken) return *taken;
  for (const auto& [field, address] : addresses) {
    if (address == served.listen || address == served.preview_listen) continue;
    if (Status free = checkCanListen(address); !free.isOk()) {
      return Status(free.code(), "plan '" + plan.name + "': " + field + ": " + free.message(),
                    {{field, free.message(), ""}});
    }
  }
  return Status::ok();
}

// Every declared capability, by name.
std::map<std::string, Capability> declaredCapabilities(Db& db) {
  std::map<std::string, Capability> out;
  db.forEachRow("SELECT name, type, score FROM capabilities WHERE deleted_at IS NULL", [&](const soci::row& r) {
    Capability c;
    c.name = rowString(r, 0);
    c.type = rowString(r, 1);
    c.score = rowInt(r, 2);
    out[c.name] = c;
  });
  return out;
}

// A declared capability of another type than its rule names is an error; an undeclared one
// is a warning (MRDS's plans name capabilities nobody declared: docs/mrds.md). Appends the
// warnings to `warnings` and returns the errors.
Status checkCapabilityNames(Db& db, const Plan& plan, std::vector<ErrorDetail>& warnings) {
  const std::map<std::string, Capability> declared = declaredCapabilities(db);
  std::vector<ErrorDetail> problems;
  for (size_t i = 0; i < plan.matching_capabilities.size(); ++i) {
    const auto& match = plan.matching_capabilities[i];
    const std::string field = "matching_capabilities[" + std::to_string(i) + "].names";
    for (const auto& name : match.names) {
      auto it = declared.find(name);
      if (it == declared.end()) {
        warnings.push_back({field,
                            "capability '" + name +
                                "' is not declared: the plan's instances wait until a node "
                                "has it" +
                                std::string(match.comparator == "GTE" || match.comparator == "LTE"
                                                ? " and it is declared with type " + match.type + " and a score"
                                                : ""),
                            ""});
      } else if (it->second.type != match.type) {
        problems.push_back(
            {field, "capability '" + name + "' has type " + it->second.type + ", not " + match.type, ""});
      }
    }
  }
  if (!problems.empty()) {
    return Status(Code::kUnprocessable, "plan '" + plan.name + "': " + problems.front().message, problems);
  }
  return Status::ok();
}

}  // namespace

void appendWarnings(Tx& tx, const std::string& kind, const std::string& subject,
                    const std::vector<ErrorDetail>& warnings) {
  if (warnings.empty()) return;
  Json list = Json::array();
  for (const auto& w : warnings) list.push_back(Json{{"field", w.field}, {"message", w.message}});
  tx.event(kind, subject, Json{{"warnings", list}});
}

Result<Plan> insertPlan(Tx& tx, const Plan& plan, std::vector<ErrorDetail>* warnings) {
  TIDE_RETURN_IF_ERROR(checkPlanShape(plan));
  if (liveIdByName(tx.db(), "plans", plan.name) != 0) {
    return Status::alreadyExists("plan '" + plan.name + "' already exists");
  }
  TIDE_RETURN_IF_ERROR(checkPlanTraffic(tx.db(), plan, model::PlanTraffic{}));
  std::vector<ErrorDetail> found;
  TIDE_RETURN_IF_ERROR(checkCapabilityNames(tx.db(), plan, found));
  const std::string spec = specOf(plan).dump();
  const std::string state = model::toString(PlanState::kActive);
  const int max_per_node = plan.placement.max_per_node;
  const int bin_pack = plan.placement.bin_pack ? 1 : 0;
  long long id = 0;
  tx.db().run(
      "INSERT INTO plans (name, namespace, service_name, spec, state, max_per_node, bin_pack, created_at, "
      "updated_at) VALUES (:n, :ns, :s, :spec, :st, :mpn, :bp, :c, :u) RETURNING id",
      soci::use(plan.name), soci::use(plan.ns), soci::use(plan.service_name), soci::use(spec), soci::use(state),
      soci::use(max_per_node), soci::use(bin_pack), soci::use(tx.now()), soci::use(tx.now()), soci::into(id));
  tx.event("plan.created", "plan/" + plan.name, Json{{"namespace", plan.ns}, {"service_name", plan.service_name}});
  appendWarnings(tx, "plan.warning", "plan/" + plan.name, found);
  if (warnings) warnings->insert(warnings->end(), found.begin(), found.end());
  return loadPlan(tx.db(), plan.name);
}

namespace {

std::string joinedNames(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Where the plan's instances run: (meta instance, node) of every STARTING or RUNNING runtime
// instance of a meta instance that is not DELETED. A reservation not started yet belongs to an
// operation of a deployment, which keeps the plan it was made with.
std::vector<std::pair<std::string, std::string>> placedInstances(Db& db, int64_t plan_id) {
  std::vector<std::pair<std::string, std::string>> out;
  Bindings values;
  values.set("p", static_cast<long long>(plan_id));
  values.set("deleted", model::toString(MetaState::kDeleted));
  std::vector<RuntimeState> runs_or_starts;
  for (RuntimeState state : model::valuesOf<RuntimeState>()) {
    if (model::runsOrStarts(state)) runs_or_starts.push_back(state);
  }
  db.forEachRow(
      "SELECT m.name, n.name FROM runtime_instances r JOIN meta_instances m ON m.id = r.meta_instance_id "
      "JOIN nodes n ON n.id = r.node_id WHERE m.plan_id = :p AND m.state <> :deleted "
      "AND r.state IN " +
          boundStates(values, "runs", runs_or_starts) + " ORDER BY m.name",
      [&](const soci::row& r) { out.emplace_back(rowString(r, 0), rowString(r, 1)); }, values);
  return out;
}

// The instances `next` would strand (docs/architecture.md#changing-a-plan), one detail per
// field: applications they run that it removes, capability rules their nodes do not meet.
std::vector<ErrorDetail> strandedBy(Db& db, const Plan& current, const Plan& next) {
  std::vector<ErrorDetail> problems;
  std::vector<std::string> live;
  Bindings values;
  values.set("p", static_cast<long long>(current.meta.id));
  values.set("deleted", model::toString(MetaState::kDeleted));
  db.forEachRow(
      "SELECT name FROM meta_instances WHERE plan_id = :p AND state <> :deleted ORDER BY name",
      [&](const soci::row& r) { live.push_back(rowString(r, 0)); }, values);
  if (live.empty()) return problems;
  for (const auto& app : current.applications) {
    const bool kept = std::any_of(next.applications.begin(), next.applications.end(),
                                  [&](const Application& a) { return a.payload_name == app.payload_name; });
    if (kept) continue;
    problems.push_back({"applications",
                        "removing application '" + app.payload_name + "' would strand the instances that run it: " +
                            joinedNames(live) + "; scale the plan to 0 first (a deployment with instance_count 0)",
                        ""});
  }
  if (Json(next.matching_capabilities) == Json(current.matching_capabilities)) return problems;
  const auto placed = placedInstances(db, current.meta.id);
  if (placed.empty()) return problems;
  const std::map<std::string, Capability> declared = declaredCapabilities(db);
  std::map<std::string, std::vector<std::string>> capabilities_of;
  for (const auto& [instance, node] : placed) {
    if (capabilities_of.count(node)) continue;
    std::string spec_text;
    db.run("SELECT spec FROM nodes WHERE name = :n AND deleted_at IS NULL", soci::use(node), soci::into(spec_text));
    Json spec = Json::parse(spec_text, nullptr, false);
    capabilities_of[node] =
        spec.is_object() ? spec.value("capabilities", std::vector<std::string>{}) : std::vector<std::string>{};
  }
  for (size_t i = 0; i < next.matching_capabilities.size(); ++i) {
    const CapabilityMatch& rule = next.matching_capabilities[i];
    std::vector<std::string> stranded;
    for (const auto& [instance, node] : placed) {
      if (!model::meetsCapabilityRule(rule, capabilities_of[node], declared))
        stranded.push_back(instance + " on " + node);
    }
    if (stranded.empty()) continue;
    problems.push_back({"matching_capabilities[" + std::to_string(i) + "]",
                        "instances run on nodes that do not meet capability type " + rule.type + " " + rule.comparator +
                            " " + joinedNames(rule.names) + ": " + joinedNames(stranded),
                        ""});
  }
  return problems;
}

// The spec fields in which `a` and `b` differ, in the manifest's order.
std::vector<std::string> changedFields(const Plan& a, const Plan& b) {
  std::vector<std::string> out;
  if (Json(a.matching_capabilities) != Json(b.matching_capabilities)) out.push_back("matching_capabilities");
  if (Json(a.applications) != Json(b.applications)) out.push_back("applications");
  if (Json(a.strategy) != Json(b.strategy)) out.push_back("strategy");
  if (a.approval_policies != b.approval_policies || a.approval_min_approvals != b.approval_min_approvals) {
    out.push_back("approval");
  }
  if (Json(a.placement) != Json(b.placement)) out.push_back("placement");
  if (a.traffic != b.traffic) out.push_back("traffic");
  return out;
}

}  // namespace

Result<PlanChange> PlanRecords::updatePlan(const Plan& plan, Generation generation, const std::string& actor) {
  return write("update plan", actor, [&](Tx& tx) -> Result<PlanChange> {
    TIDE_ASSIGN_OR_RETURN(Plan current, loadPlan(tx.db(), plan.name));
    if (generation && *generation != current.meta.generation) {
      return Status::preconditionFailed("plan '" + plan.name + "': If-Match names generation " +
                                        std::to_string(*generation) + ", the plan is now at " +
                                        std::to_string(current.meta.generation) + "; read it again");
    }
    TIDE_RETURN_IF_ERROR(checkPlanShape(plan));
    for (const auto& [field, was, now] :
         {std::tuple<const char*, std::string, std::string>{"namespace", current.ns, plan.ns},
          {"service_name", current.service_name, plan.service_name}}) {
      if (was == now) continue;
      const std::string problem = "cannot change ('" + was + "' to '" + now + "'): create a new plan instead";
      return Status(Code::kUnprocessable, "plan '" + plan.name + "': " + field + " " + problem, {{field, problem, ""}});
    }
    PlanChange change;
    TIDE_RETURN_IF_ERROR(checkCapabilityNames(tx.db(), plan, change.warnings));
    change.changed = changedFields(current, plan);
    if (change.changed.empty()) {
      change.plan = std::move(current);
      return change;
    }
    if (plan.traffic != current.traffic) TIDE_RETURN_IF_ERROR(checkPlanTraffic(tx.db(), plan, current.traffic));
    std::vector<ErrorDetail> stranded = strandedBy(tx.db(), current, plan);
    if (!stranded.empty()) {
      return Status(Code::kUnprocessable,
                    "plan '" + plan.name + "': " + stranded.front().field + ": " + stranded.front().message, stranded);
    }
    Bindings values;
    values.set("spec", specOf(plan).dump());
    values.set("max_per_node", plan.placement.max_per_node);
    values.set("bin_pack", plan.placement.bin_pack ? 1 : 0);
    TIDE_RETURN_IF_ERROR(updateGuarded(tx, "plans", current.meta.id, current.meta.generation,
                                       "spec = :spec, max_per_node = :max_per_node, bin_pack = :bin_pack", values));
    tx.event("plan.updated", "plan/" + plan.name,
             Json{{"changed", change.changed},
                  {"from_generation", current.meta.generation},
                  {"generation", current.meta.generation + 1}});
    appendWarnings(tx, "plan.warning", "plan/" + plan.name, change.warnings);
    TIDE_ASSIGN_OR_RETURN(change.plan, loadPlan(tx.db(), plan.name));
    return change;
  });
}

Status PlanRecords::setPlanTrafficRoute(const std::string& plan, const Json& route, const std::string& actor) {
  return write("set plan traffic route", actor, [&](Tx& tx) -> Status {
    TIDE_ASSIGN_OR_RETURN(Plan p, loadPlan(tx.db(), plan));
    if (p.traffic_route == route) return Status::ok();
    // Engine state, not the plan's spec: no generation bump, so a person's If-Match still holds.
    const std::string text = route.dump();
    tx.db().run("UPDATE plans SET traffic_route = :r WHERE id = :id", soci::use(text),
                soci::use(static_cast<long long>(p.meta.id)));
    return Status::ok();
  });
}

Result<Plan> PlanRecords::createPlan(const Plan& plan, const std::string& actor, std::vector<ErrorDetail>* warnings) {
  return write("create plan", actor, [&](Tx& tx) { return insertPlan(tx, plan, warnings); });
}

Result<Plan> PlanRecords::getPlan(const std::string& name) {
  return read("get plan", [&](Db& db) -> Result<Plan> { return loadPlan(db, name); });
}

Result<Page<Plan>> PlanRecords::listPlans(const ListOptions& options) {
  static const FilterColumns kPlansFilters = {{"namespace", "namespace"}, {"state", "state"}};
  TIDE_RETURN_IF_ERROR(checkFilters(options, kPlansFilters));
  return read("list plans", [&](Db& db) -> Result<Page<Plan>> {
    Where where(kPlanSelect);
    where.raw("deleted_at IS NULL").greater("id", options.after).filters(options, kPlansFilters);
    return fetchPage<Plan>(db, where, "id", options, planFromRow);
  });
}

Result<Plan> PlanRecords::setPlanState(const std::string& name, PlanState state, Generation generation,
                                       const std::string& actor, const std::string& message) {
  return write("set plan state", actor, [&](Tx& tx) -> Result<Plan> {
    TIDE_ASSIGN_OR_RETURN(Plan p, loadPlan(tx.db(), name));
    TIDE_RETURN_IF_ERROR(changeState(tx, "plans", p.meta.id, "plan/" + name, p.state, state, generation, message));
    return loadPlan(tx.db(), name);
  });
}

Status PlanRecords::deletePlan(const std::string& name, Generation generation, const std::string& actor) {
  return write("delete plan", actor, [&](Tx& tx) -> Status {
    TIDE_ASSIGN_OR_RETURN(Plan p, loadPlan(tx.db(), name));
    const long long id = p.meta.id;
    long long live_instances = 0, unfinished = 0;
    Bindings live_values, unfinished_values;
    live_values.set("id", id);
    live_values.set("deleted", model::toString(MetaState::kDeleted));
    tx.db().run("SELECT COUNT(*) FROM meta_instances WHERE plan_id = :id AND state <> :deleted", live_values,
                soci::into(live_instances));
    std::vector<DeploymentState> under_way;
    for (DeploymentState state : model::valuesOf<DeploymentState>()) {
      if (!model::isRolloutOver(state)) under_way.push_back(state);
    }
    unfinished_values.set("id", id);
    tx.db().run("SELECT COUNT(*) FROM deployments WHERE plan_id = :id AND state IN " +
                    boundStates(unfinished_values, "under_way", under_way),
                unfinished_values, soci::into(unfinished));
    if (live_instances > 0 || unfinished > 0) {
      return Status::conflict("plan '" + name + "' still has " + std::to_string(live_instances) + " instance(s) and " +
                              std::to_string(unfinished) + " unfinished deployment(s); scale it to 0 first");
    }
    Bindings values;
    values.set("deleted_at", tx.now());
    TIDE_RETURN_IF_ERROR(
        updateGuarded(tx, "plans", id, generation, "deleted_at = :deleted_at", values).withPrefix("plan " + name));
    tx.event("plan.deleted", "plan/" + name, Json::object());
    return Status::ok();
  });
}

// --- deployments -------------------------------------------------------------------------------------

Result<Deployment> insertDeployment(Tx& tx, const Deployment& deployment) {
  if (std::string problem = nameProblem(deployment.deployment_id); !problem.empty()) {
    return Status::invalidArgument("deployment_id '" + deployment.deployment_id + "' " + problem,
                                   {{"deployment_id", problem, ""}});
  }
  if (deployment.instance_count < 0) {
    return Status::invalidArgument("instance_count must not be negative", {{"instance_count", "negative", ""}});
  }
  {
    TIDE_ASSIGN_OR_RETURN(Plan plan, loadPlan(tx.db(), deployment.plan));
    if (plan.state != PlanState::kActive) {
      return Status(Code::kUnprocessable,
                    "plan '" + plan.name + "' is " + model::toString(plan.state) + "; activate it first");
    }
    const std::vector<ErrorDetail> problems = model::payloadCoordinateProblems(plan, deployment);
    if (!problems.empty()) {
      return Status(Code::kUnprocessable, "deployment '" + deployment.deployment_id + "': " + problems.front().message,
                    problems);
    }
    long long exists = 0;
    const long long plan_id = plan.meta.id;
    tx.db().run("SELECT COUNT(*) FROM deployments WHERE plan_id = :p AND deployment_id = :d", soci::use(plan_id),
                soci::use(deployment.deployment_id), soci::into(exists));
    if (exists > 0) {
      return Status::alreadyExists("deployment '" + deployment.deployment_id + "' already exists in plan '" +
                                   plan.name + "'");
    }
    Json spec{{"payload_coordinates", deployment.payload_coordinates}, {"plan", snapshotOf(plan)}};
    if (!deployment.strategy.is_null()) spec["strategy"] = deployment.strategy;
    const std::string spec_text = spec.dump();
    const std::string state = model::toString(DeploymentState::kPending);
    const long long count = deployment.instance_count;
    long long id = 0;
    tx.db().run(
        "INSERT INTO deployments (plan_id, deployment_id, spec, instance_count, state, added_by, created_at, "
        "updated_at) VALUES (:p, :d, :spec, :n, :st, :by, :c, :u) RETURNING id",
        soci::use(plan_id), soci::use(deployment.deployment_id), soci::use(spec_text), soci::use(count),
        soci::use(state), soci::use(tx.actor()), soci::use(tx.now()), soci::use(tx.now()), soci::into(id));
    tx.event(
        "deployment.created", subjectOf(plan.name, deployment.deployment_id),
        Json{{"instance_count", deployment.instance_count}, {"payload_coordinates", deployment.payload_coordinates}});
    return loadDeployment(tx.db(), plan.name, deployment.deployment_id);
  }
}

Result<Deployment> PlanRecords::addDeployment(const Deployment& deployment, const std::string& actor) {
  return write("add deployment", actor, [&](Tx& tx) { return insertDeployment(tx, deployment); });
}

Result<Deployment> PlanRecords::getDeployment(const std::string& plan, const std::string& deployment_id) {
  return read("get deployment", [&](Db& db) -> Result<Deployment> { return loadDeployment(db, plan, deployment_id); });
}

Result<Page<Deployment>> PlanRecords::listDeployments(const ListOptions& options) {
  static const FilterColumns kDeploymentsFilters = {{"plan", "p.name"}, {"state", "d.state"}};
  TIDE_RETURN_IF_ERROR(checkFilters(options, kDeploymentsFilters));
  return read("list deployments", [&](Db& db) -> Result<Page<Deployment>> {
    Where where(kDeploymentSelect);
    where.raw("p.deleted_at IS NULL").greater("d.id", options.after).filters(options, kDeploymentsFilters);
    return fetchPage<Deployment>(db, where, "d.id", options, deploymentFromRow);
  });
}

Result<Deployment> PlanRecords::setDeploymentState(const std::string& plan, const std::string& deployment_id,
                                                   DeploymentState state, Generation generation,
                                                   const std::string& actor, const std::string& message) {
  return write("set deployment state", actor, [&](Tx& tx) -> Result<Deployment> {
    TIDE_ASSIGN_OR_RETURN(Deployment d, loadDeployment(tx.db(), plan, deployment_id));
    TIDE_RETURN_IF_ERROR(changeDeploymentState(tx, d, state, generation, message));
    return loadDeployment(tx.db(), plan, deployment_id);
  });
}

Result<Deployment> PlanRecords::setRolloutState(const std::string& plan, const std::string& deployment_id,
                                                const Json& rollout_state, Generation generation,
                                                const std::string& actor) {
  return write("set rollout state", actor, [&](Tx& tx) -> Result<Deployment> {
    TIDE_ASSIGN_OR_RETURN(Deployment d, loadDeployment(tx.db(), plan, deployment_id));
    Bindings values;
    values.set("rollout_state", rollout_state.dump());
    TIDE_RETURN_IF_ERROR(
        updateGuarded(tx, "deployments", d.meta.id, generation, "rollout_state = :rollout_state", values)
            .withPrefix(subjectOf(plan, deployment_id)));
    return loadDeployment(tx.db(), plan, deployment_id);
  });
}

// --- rollout controls (docs/architecture.md#rollouts) ------------------------------------------------------------

namespace {

// Every deployment of `plan`, oldest first.
std::vector<Deployment> deploymentsOf(Db& db, const std::string& plan) {
  Where where(kDeploymentSelect);
  where.eq("p.name", plan).raw("p.deleted_at IS NULL");
  std::vector<Deployment> out;
  db.forEachRow(
      where.clause() + " ORDER BY d.id", [&](const soci::row& row) { out.push_back(deploymentFromRow(row)); },
      where.values());
  return out;
}

// Cancels every unfinished operation the deployment asked for, RUNNING ones included (the
// executor stops working on an operation once it sees it CANCELLED), but a DELETE that has
// started (RUNNING, or waiting for its next attempt): what it removed cannot come back, so it
// runs to its end (cancelled, it left its instance MARKED_FOR_DELETION with nothing under
// way; the 1 h soak found one cancelled between two attempts).
Status cancelOperationsOf(Tx& tx, const Deployment& d, const std::string& message) {
  std::vector<std::pair<long long, std::string>> ops;
  std::vector<std::tuple<long long, OperationState, std::string, std::string, std::string>> found;
  Bindings values;
  values.set("d", static_cast<long long>(d.meta.id));
  values.set("intent", d.deployment_id);
  values.set("delete", model::toString(OperationType::kDelete));
  values.set("running", model::toString(OperationState::kRunning));
  tx.db().forEachRow(
      "SELECT o.id, o.state, m.name, o.type, o.target FROM operations o JOIN meta_instances m ON m.id = "
      "o.meta_instance_id "
      "WHERE m.plan_id = (SELECT plan_id FROM deployments WHERE id = :d) AND o.intent = :intent AND o.state IN " +
          boundStates(values, "unfinished", unfinishedOperationStates()) +
          " AND NOT (o.type = :delete AND (o.state = :running OR o.attempts > 0))",
      [&](const soci::row& r) {
        found.emplace_back(rowInt(r, 0), rowEnum<OperationState>(r, 1), rowString(r, 2), rowString(r, 3),
                           rowString(r, 4));
      },
      values);
  for (const auto& [id, state, instance, type, target] : found) {
    TIDE_RETURN_IF_ERROR(changeState(tx, "operations", id, "operation/" + std::to_string(id), state,
                                     OperationState::kCancelled, std::nullopt, message,
                                     Json{{"instance", instance}, {"type", type}}));
    TIDE_RETURN_IF_ERROR(settleResize(tx, id, Json::parse(target, nullptr, false), OperationState::kCancelled));
  }
  return Status::ok();
}

Json stamp(const Tx& tx, const std::string& reason = "") {
  Json j{{"by", tx.actor()}, {"at", tx.now()}};
  if (!reason.empty()) j["reason"] = reason;
  return j;
}

}  // namespace

Result<Deployment> PlanRecords::restoreDeployment(const std::string& plan, const std::string& deployment_id,
                                                  const RestoreRequest& request, const std::string& actor) {
  return write("restore deployment", actor, [&](Tx& tx) -> Result<Deployment> {
    TIDE_ASSIGN_OR_RETURN(Deployment d, loadDeployment(tx.db(), plan, deployment_id));
    TIDE_RETURN_IF_ERROR(checkTransition(d.state, request.final_state).withPrefix(subjectOf(plan, deployment_id)));
    // The target: the newest earlier deployment that completed and was not rolled back
    // since (one already being restored counts: it completed before).
    const Deployment* target = nullptr;
    const std::vector<Deployment> all = deploymentsOf(tx.db(), plan);
    for (const auto& other : all) {
      if (other.meta.id >= d.meta.id || other.completed_at.empty() || other.state == DeploymentState::kRolledBack)
        continue;
      if (other.state != DeploymentState::kCompleted && model::isRolloutOver(other.state)) continue;
      target = &other;
    }
    std::vector<const Deployment*> passed;  // completed ones between the named target and `d`
    if (!request.to.empty()) {
      auto named =
          std::find_if(all.begin(), all.end(), [&](const Deployment& o) { return o.deployment_id == request.to; });
      if (named == all.end()) return Status::notFound("plan '" + plan + "' has no deployment '" + request.to + "'");
      const std::string cannot = "cannot roll deployment '" + deployment_id + "' back to '" + request.to + "': ";
      if (named->meta.id >= d.meta.id) {
        return Status(Code::kUnprocessable, cannot + "it is not an earlier deployment of the plan");
      }
      if (named->state == DeploymentState::kRolledBack) {
        return Status(Code::kUnprocessable, cannot + "it was rolled back itself (" + named->message + ")");
      }
      if (named->completed_at.empty() ||
          (named->state != DeploymentState::kCompleted && model::isRolloutOver(named->state))) {
        return Status(Code::kUnprocessable,
                      cannot + "it never completed (it is " + model::toString(named->state) + ")");
      }
      target = &*named;
      for (const Deployment& other : all) {
        if (other.meta.id > named->meta.id && other.meta.id < d.meta.id && other.state == DeploymentState::kCompleted) {
          passed.push_back(&other);
        }
      }
    }
    if (target == nullptr && request.kind == "rollback") {
      return Status(Code::kUnprocessable, "deployment '" + deployment_id + "' of plan '" + plan +
                                              "' has nothing to roll back to: no earlier deployment completed");
    }
    for (const Deployment* skipped : passed) {
      TIDE_RETURN_IF_ERROR(changeDeploymentState(tx, *skipped, DeploymentState::kRolledBack, std::nullopt,
                                                 "rolled back past by " + actor + " to " + request.to +
                                                     (request.reason.empty() ? "" : ": " + request.reason)));
    }
    TIDE_RETURN_IF_ERROR(changeDeploymentState(tx, d, request.final_state, std::nullopt, request.message));
    Json signals = d.signals.is_object() ? d.signals : Json::object();
    for (const char* held : {"hold", model::kHookHoldSignal}) signals.erase(held);
    for (const char* once : {"promote", "promote_full"}) signals.erase(once);
    writeSignals(tx, d, signals);
    TIDE_RETURN_IF_ERROR(cancelOperationsOf(tx, d, "deployment " + deployment_id + " " + request.message));
    tx.event("deployment.control", subjectOf(plan, deployment_id),
             Json{{"control", request.kind},
                  {"by", actor},
                  {"reason", request.reason},
                  {"target", target ? Json(target->deployment_id) : Json(nullptr)}});
    if (target != nullptr) {
      TIDE_ASSIGN_OR_RETURN(Deployment t, loadDeployment(tx.db(), plan, target->deployment_id));
      Json restore{{"from", deployment_id}, {"kind", request.kind}, {"reason", request.reason}, {"at", tx.now()}};
      Json target_signals = Json::object();
      target_signals["restore"] = restore;
      if (t.state == DeploymentState::kCompleted) {
        TIDE_RETURN_IF_ERROR(changeDeploymentState(tx, t, DeploymentState::kInProgress, std::nullopt,
                                                   "restoring after the " + request.kind + " of " + deployment_id));
        TIDE_ASSIGN_OR_RETURN(t, loadDeployment(tx.db(), plan, target->deployment_id));
      }
      writeSignals(tx, t, target_signals, Json::object());
    }
    return loadDeployment(tx.db(), plan, deployment_id);
  });
}

Result<Deployment> PlanRecords::controlDeployment(const std::string& plan, const std::string& deployment_id,
                                                  const std::string& control, const std::string& reason,
                                                  const std::string& actor, const std::string& rollback_to) {
  const std::string by = actor + (reason.empty() ? "" : ": " + reason);
  if (control == "abort" || control == "rollback") {
    TIDE_ASSIGN_OR_RETURN(Deployment d, getDeployment(plan, deployment_id));
    const bool allowed = control == "abort"
                             ? !model::isRolloutOver(d.state)
                             : d.state != DeploymentState::kRolledBack && d.state != DeploymentState::kCancelled &&
                                   d.state != DeploymentState::kPending;
    if (!allowed) {
      return Status::conflict("deployment '" + deployment_id + "' is " + model::toString(d.state) + "; " +
                              (control == "abort"
                                   ? "only a rollout in progress can be aborted"
                                   : "only a rollout in progress, completed or failed can be rolled back"));
    }
  }
  if (control == "abort") {
    return restoreDeployment(plan, deployment_id, {DeploymentState::kFailed, "aborted by " + by, "abort", reason, ""},
                             actor);
  }
  if (control == "rollback") {
    return restoreDeployment(plan, deployment_id,
                             {DeploymentState::kRolledBack, "rolled back by " + by, "rollback", reason, rollback_to},
                             actor);
  }
  return write("control deployment", actor, [&](Tx& tx) -> Result<Deployment> {
    TIDE_ASSIGN_OR_RETURN(Deployment d, loadDeployment(tx.db(), plan, deployment_id));
    const std::string subject = subjectOf(plan, deployment_id);
    Json signals = d.signals.is_object() ? d.signals : Json::object();
    auto refuse = [&](const std::string& what) {
      return Status::conflict("deployment '" + deployment_id + "' is " + model::toString(d.state) + "; " + what);
    };
    const bool running = !model::isRolloutOver(d.state);
    if (control == "promote" || control == "promote_full") {
      if (!running) return refuse("only a rollout in progress can be promoted");
      signals[control] = stamp(tx, reason);
      signals.erase("hold");  // promoting a rollout a person paused resumes it
    } else if (control == "pause") {
      if (d.state != DeploymentState::kInProgress && d.state != DeploymentState::kPaused)
        return refuse("only a rollout in progress can be paused");
      signals["hold"] = stamp(tx, reason);
      const std::string message = "paused by " + by;
      if (d.state == DeploymentState::kInProgress) {
        TIDE_RETURN_IF_ERROR(changeDeploymentState(tx, d, DeploymentState::kPaused, std::nullopt, message));
      } else {
        Bindings values;
        values.set("message", message);
        TIDE_RETURN_IF_ERROR(updateGuarded(tx, "deployments", d.meta.id, std::nullopt, "message = :message", values));
      }
    } else if (control == "resume") {
      if (!running) return refuse("only a paused rollout can be resumed");
      if (!signals.contains("hold") && d.state != DeploymentState::kPaused) return refuse("it is not paused");
      signals.erase("hold");
      if (d.state == DeploymentState::kPaused) {
        TIDE_RETURN_IF_ERROR(
            changeDeploymentState(tx, d, DeploymentState::kInProgress, std::nullopt, "resumed by " + actor));
      }
    } else if (control == "retry") {
      if (d.state != DeploymentState::kFailed) return refuse("only a FAILED (aborted) rollout can be retried");
      for (const auto& other : deploymentsOf(tx.db(), plan)) {
        if (other.meta.id > d.meta.id) {
          return Status::conflict("deployment '" + deployment_id + "' has been followed by '" + other.deployment_id +
                                  "'; only the newest deployment can be retried");
        }
      }
      TIDE_RETURN_IF_ERROR(
          changeDeploymentState(tx, d, DeploymentState::kInProgress, std::nullopt, "retried by " + by));
      TIDE_ASSIGN_OR_RETURN(d, loadDeployment(tx.db(), plan, deployment_id));
      writeSignals(tx, d, Json::object(), Json::object());
      tx.event("deployment.control", subject, Json{{"control", control}, {"by", actor}, {"reason", reason}});
      return loadDeployment(tx.db(), plan, deployment_id);
    } else {
      return Status::invalidArgument(
          "unknown rollout control '" + control + "'",
          {{"control", "one of promote, promote_full, pause, resume, abort, rollback, retry", ""}});
    }
    TIDE_ASSIGN_OR_RETURN(d, loadDeployment(tx.db(), plan, deployment_id));
    writeSignals(tx, d, signals);
    tx.event("deployment.control", subject, Json{{"control", control}, {"by", actor}, {"reason", reason}});
    return loadDeployment(tx.db(), plan, deployment_id);
  });
}

Result<Deployment> PlanRecords::approveRollout(const std::string& plan, const std::string& deployment_id,
                                               model::GivenApproval approval) {
  return write("approve rollout", approval.actor, [&](Tx& tx) -> Result<Deployment> {
    TIDE_ASSIGN_OR_RETURN(Deployment d, loadDeployment(tx.db(), plan, deployment_id));
    if (model::isRolloutOver(d.state)) {
      return Status::conflict("deployment '" + deployment_id + "' is " + model::toString(d.state) +
                              "; only a rollout in progress can be approved");
    }
    Json signals = d.signals.is_object() ? d.signals : Json::object();
    for (const model::GivenApproval& given : model::rolloutApprovals(signals)) {
      if (given.actor == approval.actor) return d;  // once is enough
    }
    approval.minted_by = ledger::mintersOf(tx.db(), approval.actor);
    approval.at = tx.now();
    Json& approvals = signals[model::kRolloutApprovalsSignal];
    if (!approvals.is_array()) approvals = Json::array();
    approvals.push_back(model::givenApprovalJson(approval));
    writeSignals(tx, d, signals);
    tx.event("deployment.control", subjectOf(plan, deployment_id),
             Json{{"control", "approve"}, {"by", approval.actor}, {"reason", approval.reason}});
    return loadDeployment(tx.db(), plan, deployment_id);
  });
}

Result<Deployment> PlanRecords::consumeSignals(const std::string& plan, const std::string& deployment_id,
                                               const Json& seen, const std::string& actor) {
  return write("consume signals", actor, [&](Tx& tx) -> Result<Deployment> {
    TIDE_ASSIGN_OR_RETURN(Deployment d, loadDeployment(tx.db(), plan, deployment_id));
    if (!d.signals.is_object() || !seen.is_object()) return d;
    Json signals = d.signals;
    bool changed = false;
    for (const auto& [key, value] : seen.items()) {
      if (model::isPersistentSignal(key)) continue;
      if (signals.contains(key) && signals[key] == value) {
        signals.erase(key);
        changed = true;
      }
    }
    if (!changed) return d;
    writeSignals(tx, d, signals);
    return loadDeployment(tx.db(), plan, deployment_id);
  });
}

Result<Deployment> PlanRecords::setDeploymentMessage(const std::string& plan, const std::string& deployment_id,
                                                     const std::string& message, const std::string& actor) {
  return write("set deployment message", actor, [&](Tx& tx) -> Result<Deployment> {
    TIDE_ASSIGN_OR_RETURN(Deployment d, loadDeployment(tx.db(), plan, deployment_id));
    if (d.message == message) return d;
    Bindings values;
    values.set("message", message);
    TIDE_RETURN_IF_ERROR(updateGuarded(tx, "deployments", d.meta.id, std::nullopt, "message = :message", values));
    tx.event("deployment.message", subjectOf(plan, deployment_id), Json{{"state", d.state}, {"message", message}});
    return loadDeployment(tx.db(), plan, deployment_id);
  });
}

Result<Deployment> PlanRecords::finishRestore(const std::string& plan, const std::string& deployment_id,
                                              const std::string& message, const std::string& actor) {
  return write("finish restore", actor, [&](Tx& tx) -> Result<Deployment> {
    TIDE_ASSIGN_OR_RETURN(Deployment d, loadDeployment(tx.db(), plan, deployment_id));
    TIDE_RETURN_IF_ERROR(changeDeploymentState(tx, d, DeploymentState::kCompleted, std::nullopt, message));
    TIDE_ASSIGN_OR_RETURN(d, loadDeployment(tx.db(), plan, deployment_id));
    Json signals = d.signals.is_object() ? d.signals : Json::object();
    signals.erase("restore");
    writeSignals(tx, d, signals);
    return loadDeployment(tx.db(), plan, deployment_id);
  });
}

Result<Deployment> PlanRecords::holdForHook(const std::string& plan, const std::string& deployment_id,
                                            const HookHold& hold, const std::string& actor) {
  return write("hold deployment for hook", actor, [&](Tx& tx) -> Result<Deployment> {
    TIDE_ASSIGN_OR_RETURN(Deployment d, loadDeployment(tx.db(), plan, deployment_id));
    const std::string subject = subjectOf(plan, deployment_id);
    if (d.state != DeploymentState::kInProgress && d.state != DeploymentState::kPaused) {
      return Status::conflict("deployment '" + deployment_id + "' is " + model::toString(d.state) +
                              "; only a rollout in progress can be held by a hook");
    }
    if (d.state == DeploymentState::kInProgress) {
      TIDE_RETURN_IF_ERROR(changeDeploymentState(tx, d, DeploymentState::kPaused, std::nullopt, hold.message));
    } else if (d.message != hold.message) {
      Bindings values;
      values.set("message", hold.message);
      TIDE_RETURN_IF_ERROR(updateGuarded(tx, "deployments", d.meta.id, std::nullopt, "message = :message", values));
    }
    TIDE_ASSIGN_OR_RETURN(d, loadDeployment(tx.db(), plan, deployment_id));
    Json signals = d.signals.is_object() ? d.signals : Json::object();
    const Json before = signals.value(model::kHookHoldSignal, Json());
    Json note{{"operation", hold.operation}, {"kind", hold.kind}, {"message", hold.message}};
    if (!before.is_object() || before.value("message", "") != hold.message) {
      tx.event("deployment.held", subject, note);
    }
    note["since"] = before.is_object() ? before.value("since", tx.now()) : tx.now();
    signals[model::kHookHoldSignal] = note;
    writeSignals(tx, d, signals);
    return loadDeployment(tx.db(), plan, deployment_id);
  });
}

Result<Deployment> PlanRecords::releaseHookHold(const std::string& plan, const std::string& deployment_id,
                                                const std::string& actor) {
  return write("release hook hold", actor, [&](Tx& tx) -> Result<Deployment> {
    TIDE_ASSIGN_OR_RETURN(Deployment d, loadDeployment(tx.db(), plan, deployment_id));
    if (!d.signals.is_object() || !d.signals.contains(model::kHookHoldSignal)) return d;
    Json signals = d.signals;
    Json note = signals[model::kHookHoldSignal];
    signals.erase(model::kHookHoldSignal);
    writeSignals(tx, d, signals);
    const std::string message = note.value("message", "");
    if (d.state == DeploymentState::kPaused && d.message == message) {
      Bindings values;
      values.set("message", "hold ended: " + message);
      TIDE_RETURN_IF_ERROR(updateGuarded(tx, "deployments", d.meta.id, std::nullopt, "message = :message", values));
    }
    note["held_seconds"] = secondsBetween(note.value("since", ""), tx.now());
    note.erase("since");
    tx.event("deployment.released", subjectOf(plan, deployment_id), note);
    return loadDeployment(tx.db(), plan, deployment_id);
  });
}

Result<PlanTeardown> PlanRecords::scalePlanToZero(const std::string& name, const Operation& delete_operation,
                                                  const std::string& reason, const std::string& actor) {
  return write("scale plan to zero", actor, [&](Tx& tx) -> Result<PlanTeardown> {
    TIDE_ASSIGN_OR_RETURN(Plan plan, loadPlan(tx.db(), name));
    PlanTeardown teardown;
    const std::string why = "plan " + name + " scaled to zero by " + actor;
    for (const Deployment& d : deploymentsOf(tx.db(), name)) {
      if (model::isRolloutOver(d.state)) continue;
      TIDE_RETURN_IF_ERROR(
          changeDeploymentState(tx, d, DeploymentState::kCancelled, std::nullopt, "cancelled: " + why));
      TIDE_RETURN_IF_ERROR(cancelOperationsOf(tx, d, "deployment " + d.deployment_id + " cancelled: " + why));
      teardown.cancelled_deployments.push_back(d.deployment_id);
    }
    std::vector<std::string> instances;
    Bindings values;
    values.set("p", static_cast<long long>(plan.meta.id));
    values.set("deleted", model::toString(MetaState::kDeleted));
    tx.db().forEachRow(
        "SELECT name FROM meta_instances WHERE plan_id = :p AND state <> :deleted ORDER BY id",
        [&](const soci::row& row) { instances.push_back(rowString(row, 0)); }, values);
    std::vector<ErrorDetail> busy;
    Json operation_ids = Json::array();
    for (const std::string& instance : instances) {
      Operation operation = delete_operation;
      operation.meta_instance = instance;
      Result<Operation> asked = insertDeleteOnce(tx, operation);
      if (!asked.isOk()) {
        if (asked.status().code() != Code::kConflict) return asked.status();
        busy.push_back({instance, asked.status().message(), ""});
        continue;
      }
      operation_ids.push_back(asked->meta.id);
      teardown.operations.push_back(std::move(asked).value());
    }
    if (!busy.empty()) {
      const std::string message = "plan '" + name + "' cannot be scaled to zero now: " + std::to_string(busy.size()) +
                                  " of its " + std::to_string(instances.size()) +
                                  " instance(s) cannot take a DELETE yet; nothing was asked";
      return Status(Code::kConflict, message, std::move(busy));
    }
    tx.event("plan.scale_to_zero", "plan/" + name,
             Json{{"operations", operation_ids},
                  {"cancelled_deployments", teardown.cancelled_deployments},
                  {"reason", reason}});
    return teardown;
  });
}

}  // namespace tide::ledger
