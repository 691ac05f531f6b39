#pragma once
// The ledger's records (docs/architecture.md#records-and-states) as plain values. Everything that crosses a boundary
// (ledger rows, API bodies, manifests, Lua snapshots) is one of these. JSON conversion
// (to_json/from_json, snake_case keys) lives in records.cpp and is the API's wire shape.
//
// States and operation types are the enums of states.h (their JSON form the upper-case strings of
// docs/architecture.md#records-and-states); the legal moves between them are in transitions.h, the only place that
// knows them.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/status.h"
#include "host/model/states.h"
#include "host/model/traffic.h"

namespace tide::model {

using Json = nlohmann::json;

// Carried by every record. `generation` starts at 1 and is bumped by every change; an
// update names the generation it read and fails with kConflict if it moved.
struct Meta {
  int64_t id = 0;
  int64_t generation = 0;
  std::string created_at;
  std::string updated_at;
};

struct Resources {
  double cores = 0;
  double memory_gib = 0;
};

struct Capability {
  Meta meta;
  std::string name;
  std::string type;   // "GPU", "CPU", ...
  int64_t score = 0;  // higher is better within a type
};

struct Cluster {
  Meta meta;
  std::string name;
  std::string driver_kind = "process";  // process | fault | ssh | lua:<script> | kubernetes
  Json driver_config = Json::object();
  ClusterState state = ClusterState::kActive;
  std::string message;
};

struct LocalVolume {
  std::string mount_path;
  std::string storage_class;
  double capacity_gib = 0;
};

struct Node {
  Meta meta;
  std::string name;
  std::string cluster;  // cluster name; empty while UNALLOCATED
  std::string update_domain;
  Resources total;
  Resources system_reserved;
  std::vector<std::string> capabilities;  // capability names
  std::vector<LocalVolume> local_volumes;
  std::map<std::string, std::string> labels;
  NodeState state = NodeState::kUnallocated;
  std::string message;
  // Who moved the node to DRAINING: the relocations that empty it count as requested by
  // this person (four eyes). Empty unless DRAINING.
  std::string drained_by;
  // Derived on read, never stored: total - system_reserved - reservations of runtime
  // instances on this node that are not TERMINATED/FAILED.
  Resources remaining;
};

// Canonical comparators: IN, NOT_IN, EQ, GTE, LTE.
struct CapabilityMatch {
  std::string type;
  std::string comparator;
  std::vector<std::string> names;
};

struct Port {
  std::string protocol;  // TCP | UDP
  int port = 0;
};

struct PersistentVolume {
  std::string storage_class;
  double capacity_gib = 0;
  std::string mount_path;
};

// How the observer decides an instance is healthy (docs/architecture.md#health-checks).
struct HealthCheck {
  std::string type;  // http | tcp | exec
  int port = 0;      // the declared port to probe (http/tcp)
  std::string path = "/";
  std::vector<std::string> command;  // exec
  double interval_seconds = 5;
  double timeout_seconds = 2;
  int healthy_threshold = 1;
  int unhealthy_threshold = 3;
};

struct Application {
  std::string payload_name;
  Resources resources;
  std::vector<Port> ports;
  std::vector<PersistentVolume> persistent_volumes;
  std::optional<HealthCheck> health_check;
  // The applications of the same plan this one starts after (docs/architecture.md#applications):
  // payload names, none of them itself, with no cycle among the plan's applications.
  std::vector<std::string> depends_on;
  // The application of the same plan whose pod this one joins (docs/architecture.md#applications):
  // one network namespace, so each reaches the other on localhost at its declared port, like a
  // sidecar. "" = none. Only drivers that run pods (container) take it.
  std::string pod;
};

// The strategy a plan runs when it names none.
inline constexpr char kDefaultStrategy[] = "rolling";

struct StrategyRef {
  std::string script = kDefaultStrategy;
  Json params = Json::object();
};

// The most instances of one plan a plan may allow on one node.
inline constexpr int kMaxPerNodeLimit = 1000;
// The largest approval.min_approvals a plan may ask for (and manual{approvals} in Lua).
inline constexpr int kMaxMinApprovals = 20;

// How the scheduler places a plan's instances (docs/architecture.md#scheduling). The
// defaults are one instance per node, spread over the least-allocated nodes.
struct PlanPlacement {
  int max_per_node = 1;   // 1..kMaxPerNodeLimit instances of the plan on one node
  bool bin_pack = false;  // true: the fullest node that fits first, instead of the emptiest
};

struct Plan {
  Meta meta;
  std::string name;
  std::string ns;  // "namespace" on the wire
  std::string service_name;
  std::vector<CapabilityMatch> matching_capabilities;
  std::vector<Application> applications;
  StrategyRef strategy;
  std::vector<std::string> approval_policies;  // advisory policies to add; hard and soft ones always apply
  // The fewest approvals an operation of the plan waits for when it waits for people
  // (approval.min_approvals; docs/architecture.md#human-approval).
  int approval_min_approvals = 1;
  PlanPlacement placement;
  // The plan's stable endpoint (docs/architecture.md#traffic); !traffic.declared() = none.
  PlanTraffic traffic;
  // The split the plan's strategy last asked for with route(...), as the engine keeps it
  // (PlanRecords::setPlanTrafficRoute): {"deployment": id, "weights": {deployment id: percent}},
  // {} before any. Not part of the spec: a plan update neither changes nor compares it.
  Json traffic_route = Json::object();
  PlanState state = PlanState::kActive;
  std::string message;
};

// The order an instance of `plan` starts its applications in: each after the ones it
// depends_on, otherwise in the order the plan declares them. It stops them in reverse. A name
// that is not one of the plan's applications is ignored, and a cycle is broken where the
// declared order first meets it (the manifest refuses both).
std::vector<const Application*> startOrder(const Plan& plan);

// One application's health check.
struct ApplicationCheck {
  std::string application;  // its payload name
  HealthCheck check;
};
// The health checks of `plan`'s applications that have one, in start order: an instance is
// healthy when all of them pass.
std::vector<ApplicationCheck> healthChecksOf(const Plan& plan);

struct PayloadCoordinates {
  std::string payload_name;
  Json coordinates = Json::object();  // {image: ...} or {command: [...], env: {...}}
};

// The deployment signal that says a runtime hook holds the rollout (docs/architecture.md#runtime-hooks):
// {operation, kind, message, since}. Persistent like "hold"; never one a strategy sees or consumes.
inline constexpr const char* kHookHoldSignal = "hook_hold";

struct Deployment {
  Meta meta;
  std::string plan;
  std::string deployment_id;
  std::vector<PayloadCoordinates> payload_coordinates;
  int64_t instance_count = 0;
  Json strategy = nullptr;              // optional override: {script?, params?}
  Json rollout_state = Json::object();  // owned by the strategy script
  // Controls (PlanRecords::controlDeployment, docs/architecture.md#rollout-controls): one-shot signals not yet consumed
  // by the strategy ({"promote": {"by", "at"}, ...}), and the persistent "hold" (a user pause), "restore" (this
  // deployment was re-opened after a newer one was rolled back or aborted) and kHookHoldSignal (a runtime hook
  // holds one of its operations: PlanRecords::holdForHook).
  Json signals = Json::object();
  DeploymentState state = DeploymentState::kPending;
  std::string message;
  std::string started_at;     // first IN_PROGRESS; "" before
  std::string completed_at;   // last COMPLETED; "" if it never completed
  double paused_seconds = 0;  // closed PAUSED intervals
  std::string paused_since;   // "" unless PAUSED now
  // Who added it (the actor of PlanRecords::addDeployment; "" in a ledger older than migration 005).
  // The operations the controller asks for to roll it out are requested by this person.
  std::string added_by;
  // The plan as it was when this deployment was added (docs/architecture.md#changing-a-plan):
  // its instances are placed, started, probed and approved by this, whatever the plan says
  // since. Shared, so copies of a deployment do not copy the plan. Null only for a
  // deployment read without its plan (every ledger row has one since migration 012).
  std::shared_ptr<const Plan> plan_snapshot;
  int64_t plan_generation = 0;  // the plan's generation the snapshot was taken at
};

struct MetaInstance {
  Meta meta;
  std::string name;  // <service>-<random>
  std::string plan;
  std::string deployment_id;  // the deployment it belongs to now
  MetaState state = MetaState::kActive;
  std::string message;
};

struct RuntimeInstance {
  Meta meta;
  std::string meta_instance;
  std::string node;
  bool is_active = true;
  Json coordinates = Json::object();
  Resources reservation;
  Json ports = Json::object();  // {"tcp/80": 31080}
  Json volumes = Json::array();
  std::string driver_handle;
  bool healthy = false;
  std::string ready_since;
  RuntimeState state = RuntimeState::kPending;
  std::string message;
};

struct Operation {
  Meta meta;
  std::string meta_instance;
  std::string plan;
  OperationType type = OperationType::kCreate;
  std::string intent;  // deployment id, or "user"
  std::string requested_by;
  std::string approved_by;
  Json decision = nullptr;  // combined verdict and reasons
  int64_t attempts = 0;
  std::string next_attempt_at;
  int64_t priority = 0;
  // What the control loop keeps between steps: {"runtime_instance": id reserved at
  // approval, "from_runtime_instance": id it replaces, "node", "coordinates"}.
  Json target = Json::object();
  OperationState state = OperationState::kPending;
  std::string message;
};

// Append-only, hash-chained: hash = sha256(prev_hash | seq | at | actor | kind | subject | data).
struct Event {
  int64_t seq = 0;
  std::string at;
  std::string actor;
  std::string kind;     // "node.created", "node.state", ...
  std::string subject;  // "node/kind-worker"
  Json data = Json::object();
  std::string prev_hash;
  std::string hash;
};

// The control loop's halt (docs/architecture.md#observer): while one is in force no stage of
// the loop writes; an admin ends it.
struct ControlHalt {
  std::string kind;               // the alarm event that raised it: "alarm.discrepancy"
  std::string reason;             // a sentence for people
  Json details = Json::object();  // e.g. the instances that disagreed with their drivers
  std::string since;
  std::string by;  // the actor that halted it
};

struct ScriptVersion {
  int64_t id = 0;
  std::string path;
  std::string kind;  // policy | strategy | hook | lib
  std::string sha256;
  std::string loaded_at;
  std::string status;  // active | failed | superseded | unloaded
  std::string error;
};

struct Decision {
  int64_t id = 0;
  int64_t operation_id = 0;  // 0 for dry runs
  std::string policy;
  std::string script_sha256;
  std::string verdict;  // approve | deny | manual | abstain
  Json reasons = Json::array();
  int64_t duration_us = 0;
  std::string error_class;  // "", timeout, memory, runtime, load
  std::string at;
};

struct ApiToken {
  int64_t id = 0;
  std::string name;
  std::string role;  // viewer | operator | approver | admin | agent
  std::string created_at;
  std::string expires_at;  // "" never expires
  std::string revoked_at;  // "" while live
  std::string revoked_by;
  std::string node;  // the node an agent token serves; "" for the other roles
  std::string created_by;  // the actor that minted it ("system" for the bootstrap token)
  // The namespaces the role acts in (docs/architecture.md#namespace-scoped-tokens): its
  // writes and approvals reach only plans of these namespaces. Empty: every namespace.
  std::vector<std::string> namespaces;
};

// What a deployment runs: the script its own strategy override names, else its plan's, else
// kDefaultStrategy; and both layers of params, which the strategy engine lays over the script's
// defaults (script ← plan ← deployment). `plan` is nullptr when the plan is not known.
struct EffectiveStrategy {
  std::string script;
  Json plan_params = Json::object();
  Json deployment_params = Json::object();
};
EffectiveStrategy effectiveStrategy(const Plan* plan, const Deployment& deployment);

// What is wrong with the payloads `deployment` gives coordinates for, against `plan`'s
// applications: a payload the plan has no application for (field
// "payload_coordinates[i].payload_name"), and an application left without coordinates
// (field "payload_coordinates"). Empty when each application has them.
std::vector<ErrorDetail> payloadCoordinateProblems(const Plan& plan, const Deployment& deployment);

// What is wrong with scoping a token of `role` to `namespaces` (ApiToken::namespaces), or ""
// when nothing is: each a valid name (nameProblem), given once, and only for the roles that
// change things (operator, approver, admin). A viewer reads every namespace and an agent
// serves one node, so neither is scoped.
std::string tokenScopeProblem(const std::string& role, const std::vector<std::string>& namespaces);

// Whether a deployment's signal stays until its rollout ends (a hold, a restore, a hook's
// hold, the approvals of the whole rollout) rather than being used up once its strategy saw it
// (promote, promote_full).
bool isPersistentSignal(const std::string& key);

// The plan `deployment` was made with: its snapshot, or `current` when it has none.
const Plan& planAsDeployed(const Plan& current, const Deployment& deployment);

// Whether a node with the capabilities `node_capabilities` meets `rule`, given the declared
// capabilities by name (docs/architecture.md#scheduling): IN/EQ it has one of the names,
// NOT_IN none; GTE/LTE it has a declared capability of the rule's type scoring at least
// the lowest (at most the highest) declared score among the names, and no such name
// matches nothing. The scheduler's compiled form of the same rule is sched/plan_demand.cpp;
// this one is for checks that look at a handful of nodes.
bool meetsCapabilityRule(const CapabilityMatch& rule, const std::vector<std::string>& node_capabilities,
                         const std::map<std::string, Capability>& declared);

void to_json(Json& j, const Meta& v);
void to_json(Json& j, const Resources& v);
void from_json(const Json& j, Resources& v);
void to_json(Json& j, const Capability& v);
void to_json(Json& j, const Cluster& v);
void to_json(Json& j, const LocalVolume& v);
void from_json(const Json& j, LocalVolume& v);
void to_json(Json& j, const Node& v);
void to_json(Json& j, const CapabilityMatch& v);
void from_json(const Json& j, CapabilityMatch& v);
void to_json(Json& j, const Port& v);
void from_json(const Json& j, Port& v);
void to_json(Json& j, const PersistentVolume& v);
void from_json(const Json& j, PersistentVolume& v);
void to_json(Json& j, const HealthCheck& v);
void from_json(const Json& j, HealthCheck& v);
void to_json(Json& j, const Application& v);
void from_json(const Json& j, Application& v);
void to_json(Json& j, const StrategyRef& v);
void from_json(const Json& j, StrategyRef& v);
void to_json(Json& j, const PlanPlacement& v);
void to_json(Json& j, const Plan& v);
void to_json(Json& j, const PayloadCoordinates& v);
void from_json(const Json& j, PayloadCoordinates& v);
void to_json(Json& j, const Deployment& v);
void to_json(Json& j, const MetaInstance& v);
void to_json(Json& j, const RuntimeInstance& v);
void to_json(Json& j, const Operation& v);
void to_json(Json& j, const Event& v);
void to_json(Json& j, const ControlHalt& v);
void to_json(Json& j, const ScriptVersion& v);
void to_json(Json& j, const Decision& v);

}  // namespace tide::model
