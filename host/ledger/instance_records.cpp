// Meta instances, runtime instances and operations: where the rules of docs/architecture.md#records-and-states that
// involve more than one row are enforced (reservations, one active runtime instance,
// one unfinished operation per meta instance).

#include <algorithm>
#include <cmath>
#include <map>

#include "host/core/names.h"
#include "host/ledger/ledger_internal.h"

namespace tide::ledger {
namespace {

const char* kMetaSelect =
    "SELECT m.id, m.generation, m.created_at, m.updated_at, m.name, p.name, d.deployment_id, m.state, m.message "
    "FROM meta_instances m JOIN plans p ON p.id = m.plan_id JOIN deployments d ON d.id = m.deployment_ref";

MetaInstance metaFromRow(const soci::row& r) {
  MetaInstance m;
  m.meta = {rowInt(r, 0), rowInt(r, 1), rowString(r, 2), rowString(r, 3)};
  m.name = rowString(r, 4);
  m.plan = rowString(r, 5);
  m.deployment_id = rowString(r, 6);
  m.state = rowEnum<MetaState>(r, 7);
  m.message = rowString(r, 8);
  return m;
}

Result<MetaInstance> loadMeta(Db& db, const std::string& name) {
  Where where(kMetaSelect);
  where.eq("m.name", name);
  return fetchOne(db, where, "instance '" + name + "' not found", metaFromRow);
}

const char* kRuntimeSelect =
    "SELECT r.id, r.generation, r.created_at, r.updated_at, m.name, n.name, r.is_active, r.coordinates, "
    "r.reserved_cores, r.reserved_memory_gib, r.ports, r.volumes, r.driver_handle, r.healthy, r.ready_since, "
    "r.state, r.message FROM runtime_instances r JOIN meta_instances m ON m.id = r.meta_instance_id "
    "JOIN nodes n ON n.id = r.node_id JOIN plans p ON p.id = m.plan_id";

RuntimeInstance runtimeFromRow(const soci::row& r) {
  RuntimeInstance ri;
  ri.meta = {rowInt(r, 0), rowInt(r, 1), rowString(r, 2), rowString(r, 3)};
  ri.meta_instance = rowString(r, 4);
  ri.node = rowString(r, 5);
  ri.is_active = rowInt(r, 6) != 0;
  ri.coordinates = rowJson(r, 7);
  ri.reservation = {rowDouble(r, 8), rowDouble(r, 9)};
  ri.ports = rowJson(r, 10);
  ri.volumes = rowJson(r, 11);
  ri.driver_handle = rowString(r, 12);
  ri.healthy = rowInt(r, 13) != 0;
  ri.ready_since = rowString(r, 14);
  ri.state = rowEnum<RuntimeState>(r, 15);
  ri.message = rowString(r, 16);
  return ri;
}

Result<RuntimeInstance> loadRuntime(Db& db, int64_t id) {
  Where where(kRuntimeSelect);
  where.raw("r.id = " + where.bind(std::to_string(id)));
  return fetchOne(db, where, "runtime instance " + std::to_string(id) + " not found", runtimeFromRow);
}

const char* kOperationSelect =
    "SELECT o.id, o.generation, o.created_at, o.updated_at, m.name, p.name, o.type, o.intent, o.requested_by, "
    "o.approved_by, o.decision, o.attempts, o.next_attempt_at, o.priority, o.state, o.message, o.target "
    "FROM operations o JOIN meta_instances m ON m.id = o.meta_instance_id JOIN plans p ON p.id = m.plan_id";

Operation operationFromRow(const soci::row& r) {
  Operation o;
  o.meta = {rowInt(r, 0), rowInt(r, 1), rowString(r, 2), rowString(r, 3)};
  o.meta_instance = rowString(r, 4);
  o.plan = rowString(r, 5);
  o.type = rowEnum<OperationType>(r, 6);
  o.intent = rowString(r, 7);
  o.requested_by = rowString(r, 8);
  o.approved_by = rowString(r, 9);
  o.decision = rowJson(r, 10);
  o.attempts = rowInt(r, 11);
  o.next_attempt_at = rowString(r, 12);
  o.priority = rowInt(r, 13);
  o.state = rowEnum<OperationState>(r, 14);
  o.message = rowString(r, 15);
  o.target = rowJson(r, 16);
  return o;
}

Result<Operation> loadOperation(Db& db, int64_t id) {
  Where where(kOperationSelect);
  where.raw("o.id = " + where.bind(std::to_string(id)));
  return fetchOne(db, where, "operation " + std::to_string(id) + " not found", operationFromRow);
}

std::string operationSubject(const Operation& o) { return "operation/" + std::to_string(o.meta.id); }

// Every volume the instance asks for must fit the node's local volume it names, counting
// the volumes of the node's live runtime instances; checked inside the reservation's
// transaction so two placements racing for the last GiB cannot both win.
Status checkVolumeRoom(Tx& tx, long long node_id, const RuntimeInstance& instance, const std::string& node_spec) {
  if (!instance.volumes.is_array() || instance.volumes.empty()) return Status::ok();
  std::map<std::string, double> capacity;  // local volume mount path -> GiB
  const Json spec = Json::parse(node_spec, nullptr, false);
  if (spec.is_object() && spec.contains("local_volumes") && spec["local_volumes"].is_array()) {
    for (const Json& v : spec["local_volumes"]) capacity[v.value("mount_path", "")] += v.value("capacity_gib", 0.0);
  }
  std::map<std::string, double> asked;
  for (const Json& v : instance.volumes) asked[v.value("local_volume", "")] += v.value("capacity_gib", 0.0);
  std::map<std::string, double> used;
  Bindings values;
  values.set("id", node_id);
  tx.db().forEachRow(
      "SELECT volumes FROM runtime_instances WHERE node_id = :id AND state NOT IN " +
          boundStates(values, "released", model::kReleasedRuntimeStates),
      [&](const soci::row& row) {
        const Json volumes = Json::parse(rowString(row, 0), nullptr, false);
        if (!volumes.is_array()) return;
        for (const Json& v : volumes) used[v.value("local_volume", "")] += v.value("capacity_gib", 0.0);
      },
      values);
  for (const auto& [local, gib] : asked) {
    auto found = capacity.find(local);
    if (found == capacity.end()) {
      return Status(Code::kUnprocessable, "node '" + instance.node + "' has no local volume '" + local + "'");
    }
    const double room = found->second - used[local];
    if (gib > room + 1e-9) {
      return Status(Code::kUnprocessable, "local volume '" + local + "' of node '" + instance.node + "' cannot hold " +
                                              std::to_string(gib) + " GiB (remaining " + std::to_string(room) +
                                              " GiB)");
    }
  }
  return Status::ok();
}

// A node's free cores and memory as the ledger derives them (total − system reserved − the
// reservations of its runtime instances that hold resources), read inside the writing
// transaction, so two reservations racing for the last core cannot both win.
struct NodeRoom {
  long long id = 0;
  std::string spec;
  double free_cores = 0;
  double free_memory = 0;

  // OK when `more` (cores and memory on top of what the node holds now) fits, else
  // kUnprocessable naming the node and what remains.
  Status holds(const std::string& node, const Resources& more) const {
    if (more.cores <= free_cores + 1e-9 && more.memory_gib <= free_memory + 1e-9) return Status::ok();
    return Status(Code::kUnprocessable, "node '" + node + "' cannot hold " + std::to_string(more.cores) + " cores / " +
                                            std::to_string(more.memory_gib) + " GiB (remaining " +
                                            std::to_string(free_cores) + " cores / " + std::to_string(free_memory) +
                                            " GiB)");
  }
};

Result<NodeRoom> nodeRoom(Tx& tx, const std::string& node) {
  NodeRoom room;
  double total_cores = 0, total_memory = 0, reserved_cores = 0, reserved_memory = 0;
  if (!tx.db().run("SELECT id, total_cores, total_memory_gib, reserved_cores, reserved_memory_gib, spec FROM "
                   "nodes WHERE name = :n AND deleted_at IS NULL",
                   soci::use(node), soci::into(room.id), soci::into(total_cores), soci::into(total_memory),
                   soci::into(reserved_cores), soci::into(reserved_memory), soci::into(room.spec))) {
    return Status::notFound("node '" + node + "' not found");
  }
  soci::row used;
  Bindings values;
  values.set("id", room.id);
  tx.db().run(
      "SELECT COALESCE(SUM(reserved_cores), 0), COALESCE(SUM(reserved_memory_gib), 0) FROM "
      "runtime_instances WHERE node_id = :id AND state NOT IN " +
          boundStates(values, "released", model::kReleasedRuntimeStates),
      values, soci::into(used));
  room.free_cores = total_cores - reserved_cores - rowDouble(used, 0);
  room.free_memory = total_memory - reserved_memory - rowDouble(used, 1);
  return room;
}

bool sameReservation(const Resources& a, const Resources& b) {
  return std::abs(a.cores - b.cores) <= 1e-9 && std::abs(a.memory_gib - b.memory_gib) <= 1e-9;
}

// Changes the reservation of `ri` (which holds resources) to `to` in place, with a
// `runtime_instance.resized` event {instance, node, from, to, reason}. A growth must fit the
// node (kUnprocessable otherwise); a shrink always does.
Status resizeRuntime(Tx& tx, const RuntimeInstance& ri, const Resources& to, const std::string& reason) {
  if (sameReservation(ri.reservation, to)) return Status::ok();
  if (to.cores < 0 || to.memory_gib < 0) {
    return Status::invalidArgument("reservation must not be negative", {{"reservation", "negative", ""}});
  }
  const Resources more{std::max(0.0, to.cores - ri.reservation.cores),
                       std::max(0.0, to.memory_gib - ri.reservation.memory_gib)};
  if (more.cores > 0 || more.memory_gib > 0) {
    TIDE_ASSIGN_OR_RETURN(const NodeRoom room, nodeRoom(tx, ri.node));
    TIDE_RETURN_IF_ERROR(room.holds(ri.node, more).withPrefix("runtime instance " + std::to_string(ri.meta.id)));
  }
  Bindings values;
  values.set("reserved_cores", to.cores);
  values.set("reserved_memory_gib", to.memory_gib);
  TIDE_RETURN_IF_ERROR(updateGuarded(tx, "runtime_instances", ri.meta.id, std::nullopt,
                                     "reserved_cores = :reserved_cores, reserved_memory_gib = :reserved_memory_gib",
                                     values));
  tx.event(
      "runtime_instance.resized", "runtime/" + std::to_string(ri.meta.id),
      Json{
          {"instance", ri.meta_instance}, {"node", ri.node}, {"from", ri.reservation}, {"to", to}, {"reason", reason}});
  return Status::ok();
}

// The body of createRuntimeInstance, shared with reserveForOperation.
Result<RuntimeInstance> insertRuntime(Tx& tx, const RuntimeInstance& instance) {
  if (instance.reservation.cores < 0 || instance.reservation.memory_gib < 0) {
    return Status::invalidArgument("reservation must not be negative", {{"reservation", "negative", ""}});
  }
  TIDE_ASSIGN_OR_RETURN(MetaInstance meta, loadMeta(tx.db(), instance.meta_instance));
  if (meta.state == MetaState::kDeleted || meta.state == MetaState::kMarkedForDeletion) {
    return Status::conflict("instance '" + meta.name + "' is " + model::toString(meta.state));
  }
  TIDE_ASSIGN_OR_RETURN(const NodeRoom room, nodeRoom(tx, instance.node));
  const long long node_id = room.id;
  TIDE_RETURN_IF_ERROR(checkVolumeRoom(tx, node_id, instance, room.spec));
  TIDE_RETURN_IF_ERROR(room.holds(instance.node, instance.reservation));
  const long long meta_id = meta.meta.id;
  if (instance.is_active) {
    long long active = 0;
    Bindings values;
    values.set("m", meta_id);
    tx.db().run(
        "SELECT COUNT(*) FROM runtime_instances WHERE meta_instance_id = :m AND is_active = 1 AND state "
        "NOT IN " +
            boundStates(values, "released", model::kReleasedRuntimeStates),
        values, soci::into(active));
    if (active > 0) {
      return Status::conflict("instance '" + meta.name + "' already has an active runtime instance");
    }
  }
  const int is_active = instance.is_active ? 1 : 0;
  const std::string coordinates = instance.coordinates.dump(), ports = instance.ports.dump(),
                    volumes = instance.volumes.dump(), state = model::toString(RuntimeState::kPending);
  long long id = 0;
  tx.db().run(
      "INSERT INTO runtime_instances (meta_instance_id, node_id, is_active, coordinates, reserved_cores, "
      "reserved_memory_gib, ports, volumes, driver_handle, state, created_at, updated_at) VALUES (:m, :n, "
      ":a, :c, :rc, :rm, :p, :v, :h, :s, :ca, :ua) RETURNING id",
      soci::use(meta_id), soci::use(node_id), soci::use(is_active), soci::use(coordinates),
      soci::use(instance.reservation.cores), soci::use(instance.reservation.memory_gib), soci::use(ports),
      soci::use(volumes), soci::use(instance.driver_handle), soci::use(state), soci::use(tx.now()), soci::use(tx.now()),
      soci::into(id));
  tx.event("runtime_instance.created", "runtime/" + std::to_string(id),
           Json{{"instance", meta.name},
                {"node", instance.node},
                {"is_active", instance.is_active},
                {"reservation", instance.reservation}});
  return loadRuntime(tx.db(), id);
}

// The body of setRuntimeInstanceState, for the writes that end a runtime instance with
// something else in one transaction.
Status changeRuntimeState(Tx& tx, const RuntimeInstance& ri, RuntimeState state, Generation generation,
                          const std::string& message) {
  Json extra{{"instance", ri.meta_instance}, {"node", ri.node}};
  // The reservation stops counting the moment the state is terminal (see the node
  // derivation); say so in the event for anyone auditing capacity.
  if (!model::holdsResources(state)) extra["released"] = ri.reservation;
  return changeState(tx, "runtime_instances", ri.meta.id, "runtime/" + std::to_string(ri.meta.id), ri.state, state,
                     generation, message, extra);
}

// The state of the meta instance's active runtime instance that holds resources, nullopt
// when none does.
std::optional<RuntimeState> activeRuntimeState(Db& db, const MetaInstance& meta) {
  soci::row row;
  Bindings values;
  values.set("m", static_cast<long long>(meta.meta.id));
  if (!db.run("SELECT state FROM runtime_instances WHERE meta_instance_id = :m AND is_active = 1 "
              "AND state NOT IN " +
                  boundStates(values, "released", model::kReleasedRuntimeStates),
              values, soci::into(row))) {
    return std::nullopt;
  }
  return rowEnum<RuntimeState>(row, 0);
}

}  // namespace

Status settleResize(Tx& tx, int64_t operation_id, const Json& target, OperationState state) {
  if (!target.is_object() || !target.contains("resize")) return Status::ok();
  const Json& resize = target["resize"];
  auto ri = loadRuntime(tx.db(), resize.value("runtime_instance", int64_t{0}));
  if (!ri.isOk()) return ri.status().code() == Code::kNotFound ? Status::ok() : ri.status();
  const Resources from = resize.value("from", Resources{}), held = resize.value("held", Resources{});
  // Nothing to give back once the runtime instance ended, or when its reservation is no
  // longer the held one (the UPDATE installed its size), or when nothing grew.
  if (!model::holdsResources(ri->state) || !sameReservation(ri->reservation, held) || sameReservation(held, from)) {
    return Status::ok();
  }
  return resizeRuntime(tx, *ri, from, "operation " + std::to_string(operation_id) + " " + model::toString(state));
}

namespace {

// What ends with an operation that never ran (REJECTED or CANCELLED), in its transaction:
// the placement it reserved at approval (the PENDING runtime instance its target names) is
// released. A rejected one whose meta instance is ACTIVE with nothing left running (a
// CREATE, or a RESTART of an instance whose process died) leaves the meta instance
// STOPPED: it holds nothing and nothing starts it again unless someone asks (RESTART).
Status settleUnstartedOperation(Tx& tx, const Operation& o, OperationState state) {
  TIDE_RETURN_IF_ERROR(settleResize(tx, o.meta.id, o.target, state));
  if (o.target.is_object() && o.target.contains("runtime_instance")) {
    TIDE_ASSIGN_OR_RETURN(RuntimeInstance reserved, loadRuntime(tx.db(), o.target["runtime_instance"].get<int64_t>()));
    if (reserved.state == RuntimeState::kPending) {
      TIDE_RETURN_IF_ERROR(changeRuntimeState(
          tx, reserved, RuntimeState::kTerminated, std::nullopt,
          "reservation released: operation " + std::to_string(o.meta.id) + " " + model::toString(state)));
    }
  }
  if (state != OperationState::kRejected) return Status::ok();
  TIDE_ASSIGN_OR_RETURN(MetaInstance meta, loadMeta(tx.db(), o.meta_instance));
  if (meta.state != MetaState::kActive || activeRuntimeState(tx.db(), meta).has_value()) return Status::ok();
  return changeState(
      tx, "meta_instances", meta.meta.id, "instance/" + meta.name, meta.state, MetaState::kStopped, std::nullopt,
      "nothing runs: its " + model::toString(o.type) + " (operation " + std::to_string(o.meta.id) + ") was rejected");
}

// The body of createOperation, shared with createInstanceWithOperation.
Result<Operation> insertOperation(Tx& tx, const MetaInstance& meta, const Operation& operation) {
  if (meta.state == MetaState::kDeleted) {
    return Status::conflict("instance '" + meta.name + "' is " + model::toString(meta.state));
  }
  Where open(kOperationSelect);
  open.eq("m.name", meta.name)
      .raw("o.state IN " + boundStates(open.values(), "unfinished", unfinishedOperationStates()));
  std::vector<Operation> unfinished;
  tx.db().forEachRow(
      open.clause(), [&](const soci::row& row) { unfinished.push_back(operationFromRow(row)); }, open.values());
  for (const auto& existing : unfinished) {
    const bool replaceable =
        existing.state == OperationState::kPending || existing.state == OperationState::kPendingApproval;
    if (!replaceable || existing.priority >= operation.priority) {
      return Status::conflict("instance '" + meta.name + "' already has operation " + std::to_string(existing.meta.id) +
                              " (" + model::toString(existing.type) + ", " + model::toString(existing.state) + ")");
    }
    TIDE_RETURN_IF_ERROR(changeState(tx, "operations", existing.meta.id, operationSubject(existing), existing.state,
                                     OperationState::kCancelled, std::nullopt,
                                     "superseded by a " + model::toString(operation.type) + " of higher priority"));
    TIDE_RETURN_IF_ERROR(settleResize(tx, existing.meta.id, existing.target, OperationState::kCancelled));
  }
  // After the check above, so that a busy instance says so first; a refusal here rolls the
  // supersede back with everything else.
  const std::string intent = operation.intent.empty() ? "user" : operation.intent;
  if (intent == "user") {
    const Status fits = model::checkOperationFits(operation.type, meta.state, activeRuntimeState(tx.db(), meta));
    if (!fits.isOk()) return Status::conflict("instance '" + meta.name + "': " + fits.message());
  }
  const long long meta_id = meta.meta.id, priority = operation.priority;
  const std::string requested_by = operation.requested_by.empty() ? tx.actor() : operation.requested_by;
  const std::string type = model::toString(operation.type), state = model::toString(OperationState::kPending),
                    decision = operation.decision.dump();
  long long id = 0;
  // The requester's reason is the operation's first message (a later state change replaces
  // it) and stays in the operation.created event.
  tx.db().run(
      "INSERT INTO operations (meta_instance_id, type, intent, requested_by, decision, priority, state, message, "
      "created_at, updated_at) VALUES (:m, :t, :i, :r, :d, :p, :s, :msg, :c, :u) RETURNING id",
      soci::use(meta_id), soci::use(type), soci::use(intent), soci::use(requested_by), soci::use(decision),
      soci::use(priority), soci::use(state), soci::use(operation.message), soci::use(tx.now()), soci::use(tx.now()),
      soci::into(id));
  Json created = {{"instance", meta.name}, {"type", operation.type}, {"intent", intent}};
  if (!operation.message.empty()) created["reason"] = operation.message;
  tx.event("operation.created", "operation/" + std::to_string(id), std::move(created));
  return loadOperation(tx.db(), id);
}

}  // namespace

Result<Operation> insertDeleteOnce(Tx& tx, const Operation& operation) {
  TIDE_ASSIGN_OR_RETURN(MetaInstance meta, loadMeta(tx.db(), operation.meta_instance));
  Where open(kOperationSelect);
  open.eq("m.name", meta.name)
      .eq("o.type", model::toString(OperationType::kDelete))
      .raw("o.state IN " + boundStates(open.values(), "unfinished", unfinishedOperationStates()));
  if (Result<Operation> asked = fetchOne(tx.db(), open, "", operationFromRow); asked.isOk()) return asked;
  return insertOperation(tx, meta, operation);
}

namespace {

// The body of createMetaInstance, shared with createInstanceWithOperation.
Result<MetaInstance> insertMeta(Tx& tx, const std::string& plan, const std::string& deployment_id) {
  long long plan_id = 0, deployment_ref = 0;
  std::string service, plan_state;
  soci::indicator ind = soci::i_null;
  if (!tx.db().run("SELECT p.id, p.service_name, p.state, d.id FROM plans p JOIN deployments d ON d.plan_id = p.id "
                   "WHERE p.name = :p AND p.deleted_at IS NULL AND d.deployment_id = :d",
                   soci::use(plan), soci::use(deployment_id), soci::into(plan_id, ind), soci::into(service),
                   soci::into(plan_state), soci::into(deployment_ref))) {
    return Status::notFound("deployment '" + deployment_id + "' of plan '" + plan + "' not found");
  }
  std::string name;
  do {
    name = randomName(service, 10);
  } while (liveIdByName(tx.db(), "meta_instances", name) != 0);
  const std::string state = model::toString(MetaState::kActive);
  long long id = 0;
  tx.db().run(
      "INSERT INTO meta_instances (name, plan_id, deployment_ref, state, created_at, updated_at) "
      "VALUES (:n, :p, :d, :s, :c, :u) RETURNING id",
      soci::use(name), soci::use(plan_id), soci::use(deployment_ref), soci::use(state), soci::use(tx.now()),
      soci::use(tx.now()), soci::into(id));
  tx.event("meta_instance.created", "instance/" + name, Json{{"plan", plan}, {"deployment_id", deployment_id}});
  return loadMeta(tx.db(), name);
}

}  // namespace

// --- meta instances ------------------------------------------------------------------------------------

Result<MetaInstance> InstanceRecords::createMetaInstance(const std::string& plan, const std::string& deployment_id,
                                                         const std::string& actor) {
  return write("create meta instance", actor,
               [&](Tx& tx) -> Result<MetaInstance> { return insertMeta(tx, plan, deployment_id); });
}

Result<MetaInstance> InstanceRecords::setMetaInstanceDeployment(const std::string& name,
                                                                const std::string& deployment_id,
                                                                const std::string& actor) {
  return write("set instance deployment", actor, [&](Tx& tx) -> Result<MetaInstance> {
    TIDE_ASSIGN_OR_RETURN(MetaInstance m, loadMeta(tx.db(), name));
    if (m.deployment_id == deployment_id) return m;
    long long deployment_ref = 0;
    if (!tx.db().run("SELECT d.id FROM deployments d JOIN plans p ON p.id = d.plan_id WHERE p.name = :p AND "
                     "p.deleted_at IS NULL AND d.deployment_id = :d",
                     soci::use(m.plan), soci::use(deployment_id), soci::into(deployment_ref))) {
      return Status::notFound("deployment '" + deployment_id + "' of plan '" + m.plan + "' not found");
    }
    Bindings values;
    values.set("deployment_ref", deployment_ref);
    TIDE_RETURN_IF_ERROR(
        updateGuarded(tx, "meta_instances", m.meta.id, std::nullopt, "deployment_ref = :deployment_ref", values));
    tx.event("meta_instance.deployment", "instance/" + name, Json{{"from", m.deployment_id}, {"to", deployment_id}});
    return loadMeta(tx.db(), name);
  });
}

Result<MetaInstance> InstanceRecords::getMetaInstance(const std::string& name) {
  return read("get instance", [&](Db& db) -> Result<MetaInstance> { return loadMeta(db, name); });
}

Result<Page<MetaInstance>> InstanceRecords::listMetaInstances(const ListOptions& options) {
  static const FilterColumns kMetaInstancesFilters = {
      {"plan", "p.name"}, {"deployment_id", "d.deployment_id"}, {"state", "m.state"}};
  TIDE_RETURN_IF_ERROR(checkFilters(options, kMetaInstancesFilters));
  return read("list instances", [&](Db& db) -> Result<Page<MetaInstance>> {
    Where where(kMetaSelect);
    where.greater("m.id", options.after).filters(options, kMetaInstancesFilters);
    return fetchPage<MetaInstance>(db, where, "m.id", options, metaFromRow);
  });
}

Result<MetaInstance> InstanceRecords::setMetaInstanceState(const std::string& name, MetaState state,
                                                           Generation generation, const std::string& actor,
                                                           const std::string& message) {
  return write("set instance state", actor, [&](Tx& tx) -> Result<MetaInstance> {
    TIDE_ASSIGN_OR_RETURN(MetaInstance m, loadMeta(tx.db(), name));
    TIDE_RETURN_IF_ERROR(
        changeState(tx, "meta_instances", m.meta.id, "instance/" + name, m.state, state, generation, message));
    if (state == MetaState::kDeleted) {
      Bindings values;
      values.set("deleted_at", tx.now());
      TIDE_RETURN_IF_ERROR(
          updateGuarded(tx, "meta_instances", m.meta.id, std::nullopt, "deleted_at = :deleted_at", values));
    }
    return loadMeta(tx.db(), name);
  });
}

// --- runtime instances -------------------------------------------------------------------------------

Result<RuntimeInstance> InstanceRecords::createRuntimeInstance(const RuntimeInstance& instance,
                                                               const std::string& actor) {
  return write("create runtime instance", actor,
               [&](Tx& tx) -> Result<RuntimeInstance> { return insertRuntime(tx, instance); });
}

Result<RuntimeInstance> InstanceRecords::reserveForOperation(int64_t operation_id, const RuntimeInstance& instance,
                                                             const std::string& actor) {
  return write("reserve for operation", actor, [&](Tx& tx) -> Result<RuntimeInstance> {
    TIDE_ASSIGN_OR_RETURN(Operation o, loadOperation(tx.db(), operation_id));
    if (o.meta_instance != instance.meta_instance) {
      return Status::invalidArgument("operation " + std::to_string(operation_id) + " is for instance '" +
                                     o.meta_instance + "', not '" + instance.meta_instance + "'");
    }
    if (o.target.contains("runtime_instance")) {
      return Status::conflict("operation " + std::to_string(operation_id) + " already reserved runtime instance " +
                              o.target["runtime_instance"].dump());
    }
    TIDE_ASSIGN_OR_RETURN(RuntimeInstance created, insertRuntime(tx, instance));
    Json target = o.target.is_object() ? o.target : Json::object();
    target["runtime_instance"] = created.meta.id;
    target["node"] = created.node;
    Bindings values;
    values.set("target", target.dump());
    TIDE_RETURN_IF_ERROR(updateGuarded(tx, "operations", o.meta.id, std::nullopt, "target = :target", values));
    return created;
  });
}

Result<Operation> OperationRecords::resizeForOperation(int64_t operation_id, const Resources& to,
                                                       const std::string& actor) {
  return write("resize for operation", actor, [&](Tx& tx) -> Result<Operation> {
    TIDE_ASSIGN_OR_RETURN(Operation o, loadOperation(tx.db(), operation_id));
    const std::string subject = "operation " + std::to_string(operation_id);
    if (o.type != OperationType::kUpdate || o.state != OperationState::kPending) {
      return Status::conflict(subject + " is a " + model::toString(o.state) + " " + model::toString(o.type) +
                              "; only a PENDING UPDATE is resized");
    }
    if (o.target.is_object() && o.target.contains("resize")) return o;
    TIDE_ASSIGN_OR_RETURN(MetaInstance meta, loadMeta(tx.db(), o.meta_instance));
    long long active_id = 0;
    soci::indicator ind = soci::i_null;
    Bindings active_of;
    active_of.set("m", static_cast<long long>(meta.meta.id));
    tx.db().run("SELECT id FROM runtime_instances WHERE meta_instance_id = :m AND is_active = 1 AND state NOT IN " +
                    boundStates(active_of, "released", model::kReleasedRuntimeStates),
                active_of, soci::into(active_id, ind));
    if (ind != soci::i_ok) return Status::conflict("instance '" + meta.name + "' runs nowhere: nothing to resize");
    TIDE_ASSIGN_OR_RETURN(RuntimeInstance active, loadRuntime(tx.db(), active_id));
    const Resources from = active.reservation;
    const Resources held{std::max(from.cores, to.cores), std::max(from.memory_gib, to.memory_gib)};
    TIDE_RETURN_IF_ERROR(resizeRuntime(tx, active, held, subject + " holds the larger size until it runs"));
    Json target = o.target.is_object() ? o.target : Json::object();
    target["resize"] =
        Json{{"runtime_instance", active.meta.id}, {"node", active.node}, {"from", from}, {"to", to}, {"held", held}};
    Bindings values;
    values.set("target", target.dump());
    TIDE_RETURN_IF_ERROR(updateGuarded(tx, "operations", o.meta.id, std::nullopt, "target = :target", values));
    return loadOperation(tx.db(), operation_id);
  });
}

Result<RuntimeInstance> InstanceRecords::getRuntimeInstance(int64_t id) {
  return read("get runtime instance", [&](Db& db) -> Result<RuntimeInstance> { return loadRuntime(db, id); });
}

Result<Page<RuntimeInstance>> InstanceRecords::listRuntimeInstances(const ListOptions& options) {
  static const FilterColumns kRuntimeInstancesFilters = {
      {"meta_instance", "m.name"}, {"node", "n.name"}, {"state", "r.state"}, {"plan", "p.name"}};
  TIDE_RETURN_IF_ERROR(checkFilters(options, kRuntimeInstancesFilters));
  return read("list runtime instances", [&](Db& db) -> Result<Page<RuntimeInstance>> {
    Where where(kRuntimeSelect);
    where.greater("r.id", options.after).filters(options, kRuntimeInstancesFilters);
    return fetchPage<RuntimeInstance>(db, where, "r.id", options, runtimeFromRow);
  });
}

Result<RuntimeInstance> InstanceRecords::updateRuntimeInstance(int64_t id, const RuntimeUpdate& update,
                                                               Generation generation, const std::string& actor) {
  return write("update runtime instance", actor, [&](Tx& tx) -> Result<RuntimeInstance> {
    TIDE_ASSIGN_OR_RETURN(RuntimeInstance ri, loadRuntime(tx.db(), id));
    Assignments assign;
    if (update.driver_handle) assign.set("driver_handle", *update.driver_handle);
    if (update.ports) assign.set("ports", update.ports->dump());
    if (update.volumes) assign.set("volumes", update.volumes->dump());
    if (update.coordinates) assign.set("coordinates", update.coordinates->dump());
    if (update.healthy) assign.set("healthy", *update.healthy ? 1 : 0);
    if (update.ready_since) assign.set("ready_since", *update.ready_since);
    if (update.message) assign.set("message", *update.message);
    if (update.reservation) {
      if (!model::holdsResources(ri.state)) {
        return Status::conflict("runtime instance " + std::to_string(id) + " is " + model::toString(ri.state) +
                                ": it reserves nothing");
      }
      if (generation && *generation != ri.meta.generation) {
        return Status::conflict("runtime instance " + std::to_string(id) + " changed since generation " +
                                std::to_string(*generation));
      }
      TIDE_RETURN_IF_ERROR(resizeRuntime(tx, ri, *update.reservation, update.reservation_reason));
      if (assign.empty()) return loadRuntime(tx.db(), id);
      generation = std::nullopt;  // checked above; the resize moved it
    }
    if (assign.empty()) return ri;
    TIDE_RETURN_IF_ERROR(updateGuarded(tx, "runtime_instances", id, generation, assign.sql(), assign.values()));
    const std::string subject = "runtime/" + std::to_string(id);
    if (update.healthy && *update.healthy != ri.healthy) {
      Json data{{"instance", ri.meta_instance}, {"node", ri.node}, {"healthy", *update.healthy}};
      if (update.message) data["message"] = *update.message;
      tx.event("runtime_instance.health", subject, data);
    }
    if (update.coordinates && *update.coordinates != ri.coordinates) {
      tx.event("runtime_instance.coordinates", subject,
               Json{{"instance", ri.meta_instance}, {"from", ri.coordinates}, {"to", *update.coordinates}});
    }
    return loadRuntime(tx.db(), id);
  });
}

Result<std::vector<RuntimeInstance>> InstanceRecords::currentRuntimeInstances() {
  return read("current runtime instances", [&](Db& db) -> Result<std::vector<RuntimeInstance>> {
    Where where(kRuntimeSelect);
    where.raw("m.deleted_at IS NULL")
        .raw("(r.state NOT IN " + boundStates(where.values(), "released", model::kReleasedRuntimeStates) +
             " OR r.id IN (SELECT MAX(r2.id) FROM runtime_instances r2 "
             "GROUP BY r2.meta_instance_id))");
    std::vector<RuntimeInstance> out;
    db.forEachRow(
        where.clause() + " ORDER BY r.id", [&](const soci::row& row) { out.push_back(runtimeFromRow(row)); },
        where.values());
    return out;
  });
}

namespace {

// "(1, 2, 3)" for an IN list of row ids (numbers only: nothing to escape).
std::string idList(const std::vector<int64_t>& ids) {
  std::string out = "(";
  for (int64_t id : ids) {
    if (out.size() > 1) out += ", ";
    out += std::to_string(id);
  }
  return out + ")";
}

constexpr size_t kIdsPerQuery = 500;

// Calls `each(const soci::row&)` for every row of `query` with `values` bound, on a statement
// of its own: for text that differs on every call (an IN list of ids), which would only churn
// the statement cache.
template <class Each>
void forEachOneOffRow(Db& db, const std::string& query, const Bindings& values, Each&& each) {
  soci::row row;
  soci::statement statement(db.session());
  statement.alloc();
  statement.prepare(query);
  statement.exchange(soci::into(row));
  values.exchangeInto(statement);
  statement.define_and_bind();
  if (!statement.execute(true)) return;
  do {
    each(static_cast<const soci::row&>(row));
  } while (statement.fetch());
}

// Runs `each` with `ids` in slices small enough for one statement.
template <class Fn>
void inSlices(const std::vector<int64_t>& ids, Fn&& each) {
  for (size_t i = 0; i < ids.size(); i += kIdsPerQuery) {
    const auto end = ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), i + kIdsPerQuery));
    each(idList(std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(i), end)));
  }
}

}  // namespace

Result<InstanceSlice> InstanceRecords::instanceSlice(const std::vector<int64_t>& meta_ids,
                                                     const std::vector<int64_t>& runtime_ids,
                                                     const std::vector<int64_t>& operation_ids) {
  return read("instance slice", [&](Db& db) -> Result<InstanceSlice> {
    // Every IN list makes a new query text: these run past the statement cache.
    std::vector<int64_t> metas = meta_ids;
    auto owners = [&](const char* table, const std::vector<int64_t>& ids) {
      inSlices(ids, [&](const std::string& in) {
        soci::rowset<soci::row> rows =
            (db.session().prepare << std::string("SELECT meta_instance_id FROM ") + table + " WHERE id IN " + in);
        for (const auto& row : rows) metas.push_back(rowInt(row, 0));
      });
    };
    owners("runtime_instances", runtime_ids);
    owners("operations", operation_ids);
    std::sort(metas.begin(), metas.end());
    metas.erase(std::unique(metas.begin(), metas.end()), metas.end());

    InstanceSlice slice;
    inSlices(metas, [&](const std::string& in) {
      soci::rowset<soci::row> meta_rows = (db.session().prepare << std::string(kMetaSelect) + " WHERE m.id IN " + in);
      for (const auto& row : meta_rows) slice.metas.push_back(metaFromRow(row));
      Bindings released;
      forEachOneOffRow(db,
                       std::string(kRuntimeSelect) + " WHERE r.meta_instance_id IN " + in + " AND (r.state NOT IN " +
                           boundStates(released, "released", model::kReleasedRuntimeStates) +
                           " OR r.id IN (SELECT MAX(r2.id) FROM runtime_instances r2 WHERE r2.meta_instance_id IN " +
                           in + " GROUP BY r2.meta_instance_id)) ORDER BY r.id",
                       released, [&](const soci::row& row) { slice.runtimes.push_back(runtimeFromRow(row)); });
      soci::rowset<soci::row> operation_rows =
          (db.session().prepare
           << std::string(kOperationSelect) +
                  " WHERE o.id IN (SELECT MAX(o2.id) FROM operations o2 WHERE o2.meta_instance_id IN " + in +
                  " GROUP BY o2.meta_instance_id) ORDER BY o.id");
      for (const auto& row : operation_rows) slice.operations.push_back(operationFromRow(row));
    });
    return slice;
  });
}

Result<std::vector<Operation>> OperationRecords::unfinishedOperations(const std::vector<int64_t>& meta_ids) {
  return read("unfinished operations", [&](Db& db) -> Result<std::vector<Operation>> {
    std::vector<Operation> out;
    inSlices(meta_ids, [&](const std::string& in) {
      Bindings unfinished;
      forEachOneOffRow(db,
                       std::string(kOperationSelect) + " WHERE o.meta_instance_id IN " + in + " AND o.state IN " +
                           boundStates(unfinished, "unfinished", unfinishedOperationStates()) + " ORDER BY o.id",
                       unfinished, [&](const soci::row& row) { out.push_back(operationFromRow(row)); });
    });
    return out;
  });
}

Result<PlanCounts> InstanceRecords::planCounts(const std::string& plan) {
  return read("count plan instances", [&](Db& db) -> Result<PlanCounts> {
    PlanCounts counts;
    Bindings values;
    values.set("plan", plan);
    values.set("deleted", model::toString(MetaState::kDeleted));
    db.forEachRow(
        "SELECT d.deployment_id, m.state, COALESCE(r.state, ''), COALESCE(r.healthy, 0), COUNT(*) "
        "FROM meta_instances m JOIN plans p ON p.id = m.plan_id JOIN deployments d ON d.id = m.deployment_ref "
        "LEFT JOIN runtime_instances r ON r.id = (SELECT MAX(r2.id) FROM runtime_instances r2 "
        "WHERE r2.meta_instance_id = m.id AND r2.is_active = 1) "
        "WHERE p.name = :plan AND m.state <> :deleted GROUP BY 1, 2, 3, 4",
        [&](const soci::row& row) {
          // No runtime instance reads as "", which no state spells: pending.
          const std::optional<RuntimeState> runtime_state = model::parse<RuntimeState>(rowString(row, 2));
          const bool healthy = rowInt(row, 3) != 0;
          const int64_t n = rowInt(row, 4);
          auto add = [&](PlanCounts::Instances& to) {
            to.total += n;
            if (runtime_state == RuntimeState::kRunning) {
              to.running += n;
              if (healthy) to.ready += n;
            } else if (runtime_state == RuntimeState::kFailed) {
              to.failed += n;
            } else {
              to.pending += n;
            }
          };
          add(counts.live);
          if (rowEnum<MetaState>(row, 1) != MetaState::kMarkedForDeletion) add(counts.staying[rowString(row, 0)]);
        },
        values);
    db.forEachRow(
        "SELECT o.type, o.state, COUNT(*) FROM operations o JOIN meta_instances m ON m.id = o.meta_instance_id "
        "JOIN plans p ON p.id = m.plan_id WHERE p.name = :plan GROUP BY 1, 2",
        [&](const soci::row& row) { counts.operations[rowString(row, 0)][rowString(row, 1)] = rowInt(row, 2); },
        soci::use(plan));
    return counts;
  });
}

Result<Page<MetaInstance>> InstanceRecords::livePlanInstances(const std::string& plan, const ListOptions& options) {
  return read("list plan instances", [&](Db& db) -> Result<Page<MetaInstance>> {
    Where where(kMetaSelect);
    where.greater("m.id", options.after)
        .eq("p.name", plan)
        .raw("m.state <> " + where.bind(model::toString(MetaState::kDeleted)));
    return fetchPage<MetaInstance>(db, where, "m.id", options, metaFromRow);
  });
}

Result<RuntimeInstance> InstanceRecords::activateRuntimeInstance(int64_t id, const std::string& actor) {
  return write("activate runtime instance", actor, [&](Tx& tx) -> Result<RuntimeInstance> {
    TIDE_ASSIGN_OR_RETURN(RuntimeInstance ri, loadRuntime(tx.db(), id));
    if (!model::holdsResources(ri.state)) {
      return Status::conflict("runtime instance " + std::to_string(id) + " is " + model::toString(ri.state));
    }
    if (ri.is_active) return ri;
    long long previous = 0;
    soci::indicator ind = soci::i_null;
    Bindings values;
    values.set("m", ri.meta_instance);
    const bool found = tx.db().run(
        "SELECT r.id FROM runtime_instances r JOIN meta_instances m ON m.id = r.meta_instance_id WHERE "
        "m.name = :m AND r.is_active = 1 AND r.state NOT IN " +
            boundStates(values, "released", model::kReleasedRuntimeStates),
        values, soci::into(previous, ind));
    Bindings passive, active;
    passive.set("is_active", 0);
    active.set("is_active", 1);
    if (found && ind == soci::i_ok) {
      TIDE_RETURN_IF_ERROR(
          updateGuarded(tx, "runtime_instances", previous, std::nullopt, "is_active = :is_active", passive));
    }
    TIDE_RETURN_IF_ERROR(updateGuarded(tx, "runtime_instances", id, std::nullopt, "is_active = :is_active", active));
    tx.event("runtime_instance.activated", "runtime/" + std::to_string(id),
             Json{{"instance", ri.meta_instance}, {"node", ri.node}, {"previous", previous}});
    return loadRuntime(tx.db(), id);
  });
}

Result<RuntimeInstance> InstanceRecords::setRuntimeInstanceState(int64_t id, RuntimeState state, Generation generation,
                                                                 const std::string& actor, const std::string& message) {
  return write("set runtime instance state", actor, [&](Tx& tx) -> Result<RuntimeInstance> {
    TIDE_ASSIGN_OR_RETURN(RuntimeInstance ri, loadRuntime(tx.db(), id));
    TIDE_RETURN_IF_ERROR(changeRuntimeState(tx, ri, state, generation, message));
    return loadRuntime(tx.db(), id);
  });
}

// --- operations --------------------------------------------------------------------------------------------

Result<Operation> OperationRecords::createOperation(const Operation& operation, const std::string& actor) {
  return write("create operation", actor, [&](Tx& tx) -> Result<Operation> {
    TIDE_ASSIGN_OR_RETURN(MetaInstance meta, loadMeta(tx.db(), operation.meta_instance));
    return insertOperation(tx, meta, operation);
  });
}

Result<Operation> OperationRecords::createInstanceWithOperation(const std::string& plan,
                                                                const std::string& deployment_id,
                                                                const Operation& operation, const std::string& actor) {
  return write("create instance with operation", actor, [&](Tx& tx) -> Result<Operation> {
    TIDE_ASSIGN_OR_RETURN(MetaInstance meta, insertMeta(tx, plan, deployment_id));
    return insertOperation(tx, meta, operation);
  });
}

Result<std::map<std::pair<std::string, std::string>, int64_t>> OperationRecords::operationCounts() {
  return read("count operations", [&](Db& db) -> Result<std::map<std::pair<std::string, std::string>, int64_t>> {
    std::map<std::pair<std::string, std::string>, int64_t> out;
    db.forEachRow("SELECT type, state, COUNT(*) FROM operations GROUP BY type, state", [&](const soci::row& row) {
      out[{rowString(row, 0), rowString(row, 1)}] = rowInt(row, 2);
    });
    return out;
  });
}

Result<std::vector<Operation>> OperationRecords::latestOperations() {
  return read("latest operations", [&](Db& db) -> Result<std::vector<Operation>> {
    Where where(kOperationSelect);
    where.raw("m.deleted_at IS NULL")
        .raw("o.id IN (SELECT MAX(o2.id) FROM operations o2 GROUP BY o2.meta_instance_id)");
    std::vector<Operation> out;
    db.forEachRow(
        where.clause() + " ORDER BY o.id", [&](const soci::row& row) { out.push_back(operationFromRow(row)); },
        where.values());
    return out;
  });
}

Result<Operation> OperationRecords::updateOperation(int64_t id, const OperationUpdate& update,
                                                    const std::string& actor) {
  return write("update operation", actor, [&](Tx& tx) -> Result<Operation> {
    TIDE_ASSIGN_OR_RETURN(Operation o, loadOperation(tx.db(), id));
    Assignments assign;
    if (update.attempts) assign.set("attempts", static_cast<long long>(*update.attempts));
    if (update.next_attempt_at) assign.set("next_attempt_at", *update.next_attempt_at);
    if (update.target) assign.set("target", update.target->dump());
    if (update.decision) assign.set("decision", update.decision->dump());
    if (update.message) assign.set("message", *update.message);
    if (!assign.empty()) {
      TIDE_RETURN_IF_ERROR(
          updateGuarded(tx, "operations", o.meta.id, update.generation, assign.sql(), assign.values()));
    }
    return loadOperation(tx.db(), id);
  });
}

Result<Operation> OperationRecords::getOperation(int64_t id) {
  return read("get operation", [&](Db& db) -> Result<Operation> { return loadOperation(db, id); });
}

Result<Page<Operation>> OperationRecords::listOperations(const ListOptions& options) {
  static const FilterColumns kOperationsFilters = {
      {"state", "o.state"},        {"plan", "p.name"},        {"meta_instance", "m.name"}, {"type", "o.type"},
      {"actor", "o.requested_by"}, {"since", "o.created_at"}, {"until", "o.created_at"}};
  TIDE_RETURN_IF_ERROR(checkFilters(options, kOperationsFilters));
  return read("list operations", [&](Db& db) -> Result<Page<Operation>> {
    Where where(kOperationSelect);
    where.greater("o.id", options.after).filters(options, kOperationsFilters, {"state"});
    return fetchPage<Operation>(db, where, "o.id", options, operationFromRow);
  });
}

Result<Operation> OperationRecords::setOperationState(int64_t id, OperationState state, Generation generation,
                                                      const std::string& actor, const std::string& message,
                                                      const std::string& approved_by) {
  return write("set operation state", actor, [&](Tx& tx) -> Result<Operation> {
    TIDE_ASSIGN_OR_RETURN(Operation o, loadOperation(tx.db(), id));
    Json extra{{"instance", o.meta_instance}, {"type", o.type}};
    if (!approved_by.empty()) extra["approved_by"] = approved_by;
    TIDE_RETURN_IF_ERROR(
        changeState(tx, "operations", id, operationSubject(o), o.state, state, generation, message, extra));
    if (state == OperationState::kRejected) {
      TIDE_RETURN_IF_ERROR(settleUnstartedOperation(tx, o, state));
    } else if (state == OperationState::kCancelled || state == OperationState::kFailed) {
      TIDE_RETURN_IF_ERROR(settleResize(tx, o.meta.id, o.target, state));
    }
    if (!approved_by.empty()) {
      Bindings values;
      values.set("approved_by", approved_by);
      TIDE_RETURN_IF_ERROR(updateGuarded(tx, "operations", id, std::nullopt, "approved_by = :approved_by", values));
    }
    return loadOperation(tx.db(), id);
  });
}

Result<Operation> OperationRecords::cancelOperation(int64_t id, Generation generation, const std::string& actor,
                                                    const std::string& message) {
  return write("cancel operation", actor, [&](Tx& tx) -> Result<Operation> {
    TIDE_ASSIGN_OR_RETURN(Operation o, loadOperation(tx.db(), id));
    const bool unstarted = model::isBeforeRunning(o.state) && (o.state != OperationState::kApproved || o.attempts == 0);
    if (!unstarted) {
      const std::string state = o.state == OperationState::kApproved
                                    ? model::toString(o.state) + " after " + std::to_string(o.attempts) + " attempt" +
                                          (o.attempts == 1 ? "" : "s")
                                    : model::toString(o.state);
      return Status::conflict("operation " + std::to_string(id) + " is " + state +
                              "; only an operation that has not started (PENDING, PENDING_APPROVAL, or APPROVED before "
                              "its first attempt) can be cancelled");
    }
    TIDE_RETURN_IF_ERROR(changeState(tx, "operations", id, operationSubject(o), o.state, OperationState::kCancelled,
                                     generation, message, Json{{"instance", o.meta_instance}, {"type", o.type}}));
    TIDE_RETURN_IF_ERROR(settleUnstartedOperation(tx, o, OperationState::kCancelled));
    return loadOperation(tx.db(), id);
  });
}

Result<Operation> OperationRecords::addApproval(int64_t id, Generation generation, model::GivenApproval approval) {
  return write("add approval", approval.actor, [&](Tx& tx) -> Result<Operation> {
    TIDE_ASSIGN_OR_RETURN(Operation o, loadOperation(tx.db(), id));
    const std::string subject = "operation " + std::to_string(id);
    if (o.state != OperationState::kPendingApproval) {
      return Status::conflict(subject + " is " + model::toString(o.state) +
                              "; only an operation in PENDING_APPROVAL can be approved");
    }
    // Again in this transaction, against what is written now, with both parties' minters as
    // the tokens table holds them now. The host's four-eyes rule is the API's to add: it asked
    // the same function before it came here.
    approval.minted_by = ledger::mintersOf(tx.db(), approval.actor);
    model::ApprovalCase waiting{id, o.requested_by, model::approvalStateOf(o.decision),
                                1,  false,          ledger::mintersOf(tx.db(), o.requested_by)};
    model::ApprovalRuling ruling =
        model::judgeApproval(waiting, model::Approver{approval.actor, approval.role, model::ApprovalAct::kApprove,
                                                      approval.override, approval.reason, approval.minted_by});
    TIDE_RETURN_IF_ERROR(ruling.allowed);
    approval.at = tx.now();
    ruling.after.given.back().at = approval.at;
    const model::ApprovalState& state = ruling.after;
    Json decision = o.decision.is_object() ? o.decision : Json::object();
    decision["approvals"] = model::approvalsJson(state);
    Bindings values;
    values.set("decision", decision.dump());
    TIDE_RETURN_IF_ERROR(updateGuarded(tx, "operations", id, generation, "decision = :decision", values));
    const int override = approval.override ? 1 : 0;
    const long long operation_id = id;
    tx.db().run(
        "INSERT INTO operation_approvals (operation_id, actor, role, override, reason, at) "
        "VALUES (:o, :a, :r, :v, :why, :at)",
        soci::use(operation_id), soci::use(approval.actor), soci::use(approval.role), soci::use(override),
        soci::use(approval.reason), soci::use(approval.at));
    const int needed = ruling.still_needed;
    Json data{{"instance", o.meta_instance},
              {"actor", approval.actor},
              {"override", approval.override},
              {"approvals", model::describeApprovals(decision, o.requested_by)},
              {"still_needed", needed}};
    if (!approval.reason.empty()) data["reason"] = approval.reason;
    tx.event("operation.approval", operationSubject(o), data);
    if (needed > 0) return loadOperation(tx.db(), id);

    const std::string& approved_by = ruling.approved_by;
    const std::string message = approval.reason.empty() ? "approved by " + approved_by : approval.reason;
    TIDE_RETURN_IF_ERROR(
        changeState(tx, "operations", id, operationSubject(o), o.state, OperationState::kApproved, std::nullopt,
                    message, Json{{"instance", o.meta_instance}, {"type", o.type}, {"approved_by", approved_by}}));
    Bindings approver;
    approver.set("approved_by", approved_by);
    TIDE_RETURN_IF_ERROR(updateGuarded(tx, "operations", id, std::nullopt, "approved_by = :approved_by", approver));
    return loadOperation(tx.db(), id);
  });
}

Result<std::vector<model::GivenApproval>> OperationRecords::listApprovals(int64_t operation_id) {
  return read("list approvals", [&](Db& db) -> Result<std::vector<model::GivenApproval>> {
    const long long op = operation_id;
    std::vector<model::GivenApproval> out;
    db.forEachRow(
        "SELECT actor, role, override, reason, at FROM operation_approvals WHERE operation_id = :o ORDER BY id",
        [&](const soci::row& r) {
          out.push_back({rowString(r, 0), rowString(r, 1), rowInt(r, 2) != 0, rowString(r, 3), rowString(r, 4), {}});
        },
        soci::use(op));
    return out;
  });
}

}  // namespace tide::ledger
