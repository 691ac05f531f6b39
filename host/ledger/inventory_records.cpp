// Capabilities, clusters and nodes: the inventory the scheduler places onto.

#include "host/core/names.h"
#include "host/ledger/ledger_internal.h"

namespace tide::ledger {
namespace {

Status checkName(const char* what, const std::string& name) {
  const std::string problem = nameProblem(name);
  if (problem.empty()) return Status::ok();
  return Status::invalidArgument(std::string(what) + " name '" + name + "' " + problem, {{"name", problem, ""}});
}

Meta metaFromRow(const soci::row& r, std::size_t id, std::size_t generation, std::size_t created) {
  return Meta{rowInt(r, id), rowInt(r, generation), rowString(r, created), rowString(r, created + 1)};
}

// --- capabilities ---

const char* kCapabilitySelect = "SELECT id, generation, created_at, updated_at, name, type, score FROM capabilities";

Capability capabilityFromRow(const soci::row& r) {
  Capability c;
  c.meta = metaFromRow(r, 0, 1, 2);
  c.name = rowString(r, 4);
  c.type = rowString(r, 5);
  c.score = rowInt(r, 6);
  return c;
}

// --- clusters ---

const char* kClusterSelect =
    "SELECT id, generation, created_at, updated_at, name, driver_kind, driver_config, state, message FROM clusters";

Cluster clusterFromRow(const soci::row& r) {
  Cluster c;
  c.meta = metaFromRow(r, 0, 1, 2);
  c.name = rowString(r, 4);
  c.driver_kind = rowString(r, 5);
  c.driver_config = rowJson(r, 6);
  c.state = rowEnum<ClusterState>(r, 7);
  c.message = rowString(r, 8);
  return c;
}

// --- nodes ---

// Remaining resources are derived here, on every read (see ledger.h). A Where over the live
// nodes, the released runtime states it sums around bound.
Where nodeSelect() {
  static const std::string kNodeSelect =
      "SELECT n.id, n.generation, n.created_at, n.updated_at, n.name, COALESCE(c.name, ''), n.update_domain, "
      "n.total_cores, n.total_memory_gib, n.reserved_cores, n.reserved_memory_gib, n.spec, n.state, n.message, "
      "(SELECT COALESCE(SUM(r.reserved_cores), 0) FROM runtime_instances r "
      " WHERE r.node_id = n.id AND r.state NOT IN " +
      placeholderList("released_c", model::kReleasedRuntimeStates.size()) +
      "), "
      "(SELECT COALESCE(SUM(r.reserved_memory_gib), 0) FROM runtime_instances r "
      " WHERE r.node_id = n.id AND r.state NOT IN " +
      placeholderList("released_m", model::kReleasedRuntimeStates.size()) +
      "), n.drained_by "
      // Correlated per node (index runtime_instances_node), so reading one node costs its
      // own instances, not an aggregate over the whole fleet.
      "FROM nodes n LEFT JOIN clusters c ON c.id = n.cluster_id "
      "WHERE n.deleted_at IS NULL";
  Where where(kNodeSelect);
  boundStates(where.values(), "released_c", model::kReleasedRuntimeStates);
  boundStates(where.values(), "released_m", model::kReleasedRuntimeStates);
  return where;
}

Node nodeFromRow(const soci::row& r) {
  Node n;
  n.meta = metaFromRow(r, 0, 1, 2);
  n.name = rowString(r, 4);
  n.cluster = rowString(r, 5);
  n.update_domain = rowString(r, 6);
  n.total = {rowDouble(r, 7), rowDouble(r, 8)};
  n.system_reserved = {rowDouble(r, 9), rowDouble(r, 10)};
  const Json spec = rowJson(r, 11);
  n.capabilities = spec.value("capabilities", std::vector<std::string>{});
  n.local_volumes = spec.value("local_volumes", std::vector<LocalVolume>{});
  n.labels = spec.value("labels", std::map<std::string, std::string>{});
  n.state = rowEnum<NodeState>(r, 12);
  n.message = rowString(r, 13);
  n.remaining = {n.total.cores - n.system_reserved.cores - rowDouble(r, 14),
                 n.total.memory_gib - n.system_reserved.memory_gib - rowDouble(r, 15)};
  n.drained_by = rowString(r, 16);
  return n;
}

Result<Node> loadNode(Db& db, const std::string& name) {
  Where where = nodeSelect();
  where.eq("n.name", name);
  return fetchOne(db, where, "node '" + name + "' not found", nodeFromRow);
}

template <class T, class FromRow>
Result<T> loadOne(Db& db, const std::string& select, const std::string& name, const char* what, FromRow&& fromRow) {
  Where where(select);
  where.eq("name", name).raw("deleted_at IS NULL");
  return fetchOne(db, where, std::string(what) + " '" + name + "' not found", fromRow);
}

Status softDelete(Tx& tx, const char* table, const char* kind, int64_t id, const std::string& name,
                  Generation generation) {
  Bindings values;
  values.set("deleted_at", tx.now());
  TIDE_RETURN_IF_ERROR(updateGuarded(tx, table, id, generation, "deleted_at = :deleted_at", values)
                           .withPrefix(std::string(kind) + " " + name));
  tx.event(std::string(kind) + ".deleted", std::string(kind) + "/" + name, Json::object());
  return Status::ok();
}

}  // namespace

// --- capabilities --------------------------------------------------------------------------------

Result<Capability> insertCapability(Tx& tx, const Capability& capability) {
  TIDE_RETURN_IF_ERROR(checkName("capability", capability.name));
  if (capability.type.empty()) {
    return Status::invalidArgument("capability type must not be empty", {{"type", "required", ""}});
  }
  {
    if (liveIdByName(tx.db(), "capabilities", capability.name) != 0) {
      return Status::alreadyExists("capability '" + capability.name + "' already exists");
    }
    const long long score = capability.score;
    long long id = 0;
    tx.db().run(
        "INSERT INTO capabilities (name, type, score, created_at, updated_at) "
        "VALUES (:n, :t, :s, :c, :u) RETURNING id",
        soci::use(capability.name), soci::use(capability.type), soci::use(score), soci::use(tx.now()),
        soci::use(tx.now()), soci::into(id));
    tx.event("capability.created", "capability/" + capability.name,
             Json{{"type", capability.type}, {"score", capability.score}});
    return loadOne<Capability>(tx.db(), kCapabilitySelect, capability.name, "capability", capabilityFromRow);
  }
}

Result<Capability> InventoryRecords::createCapability(const Capability& capability, const std::string& actor) {
  return write("create capability", actor, [&](Tx& tx) { return insertCapability(tx, capability); });
}

Result<Capability> InventoryRecords::getCapability(const std::string& name) {
  return read("get capability", [&](Db& db) -> Result<Capability> {
    return loadOne<Capability>(db, kCapabilitySelect, name, "capability", capabilityFromRow);
  });
}

Result<Page<Capability>> InventoryRecords::listCapabilities(const ListOptions& options) {
  static const FilterColumns kCapabilitiesFilters = {{"type", "type"}};
  TIDE_RETURN_IF_ERROR(checkFilters(options, kCapabilitiesFilters));
  return read("list capabilities", [&](Db& db) -> Result<Page<Capability>> {
    Where where(kCapabilitySelect);
    where.raw("deleted_at IS NULL").greater("id", options.after).filters(options, kCapabilitiesFilters);
    return fetchPage<Capability>(db, where, "id", options, capabilityFromRow);
  });
}

Status InventoryRecords::deleteCapability(const std::string& name, Generation generation, const std::string& actor) {
  return write("delete capability", actor, [&](Tx& tx) -> Status {
    TIDE_ASSIGN_OR_RETURN(Capability c,
                          loadOne<Capability>(tx.db(), kCapabilitySelect, name, "capability", capabilityFromRow));
    // A capability still named by a live node would leave that node pointing at nothing.
    long long users = 0;
    const std::string needle = "%\"" + name + "\"%";
    tx.db().run("SELECT COUNT(*) FROM nodes WHERE deleted_at IS NULL AND spec LIKE :needle", soci::use(needle),
                soci::into(users));
    if (users > 0) {
      return Status::conflict("capability '" + name + "' is still used by " + std::to_string(users) + " node(s)");
    }
    return softDelete(tx, "capabilities", "capability", c.meta.id, name, generation);
  });
}

// --- clusters ------------------------------------------------------------------------------------

Result<Cluster> insertCluster(Tx& tx, const Cluster& cluster) {
  TIDE_RETURN_IF_ERROR(checkName("cluster", cluster.name));
  if (cluster.driver_kind.empty()) {
    return Status::invalidArgument("cluster driver must not be empty", {{"driver_kind", "required", ""}});
  }
  {
    if (liveIdByName(tx.db(), "clusters", cluster.name) != 0) {
      return Status::alreadyExists("cluster '" + cluster.name + "' already exists");
    }
    const std::string config = cluster.driver_config.is_null() ? "{}" : cluster.driver_config.dump();
    const std::string state = model::toString(ClusterState::kActive);
    long long id = 0;
    tx.db().run(
        "INSERT INTO clusters (name, driver_kind, driver_config, state, created_at, updated_at) "
        "VALUES (:n, :d, :c, :s, :ca, :ua) RETURNING id",
        soci::use(cluster.name), soci::use(cluster.driver_kind), soci::use(config), soci::use(state),
        soci::use(tx.now()), soci::use(tx.now()), soci::into(id));
    tx.event("cluster.created", "cluster/" + cluster.name, Json{{"driver_kind", cluster.driver_kind}});
    return loadOne<Cluster>(tx.db(), kClusterSelect, cluster.name, "cluster", clusterFromRow);
  }
}

Result<Cluster> InventoryRecords::createCluster(const Cluster& cluster, const std::string& actor) {
  return write("create cluster", actor, [&](Tx& tx) { return insertCluster(tx, cluster); });
}

Result<Cluster> InventoryRecords::getCluster(const std::string& name) {
  return read("get cluster", [&](Db& db) -> Result<Cluster> {
    return loadOne<Cluster>(db, kClusterSelect, name, "cluster", clusterFromRow);
  });
}

Result<Page<Cluster>> InventoryRecords::listClusters(const ListOptions& options) {
  static const FilterColumns kClustersFilters = {{"state", "state"}};
  TIDE_RETURN_IF_ERROR(checkFilters(options, kClustersFilters));
  return read("list clusters", [&](Db& db) -> Result<Page<Cluster>> {
    Where where(kClusterSelect);
    where.raw("deleted_at IS NULL").greater("id", options.after).filters(options, kClustersFilters);
    return fetchPage<Cluster>(db, where, "id", options, clusterFromRow);
  });
}

Result<Cluster> InventoryRecords::setClusterState(const std::string& name, ClusterState state, Generation generation,
                                                  const std::string& actor, const std::string& message) {
  return write("set cluster state", actor, [&](Tx& tx) -> Result<Cluster> {
    TIDE_ASSIGN_OR_RETURN(Cluster c, loadOne<Cluster>(tx.db(), kClusterSelect, name, "cluster", clusterFromRow));
    TIDE_RETURN_IF_ERROR(
        changeState(tx, "clusters", c.meta.id, "cluster/" + name, c.state, state, generation, message));
    return loadOne<Cluster>(tx.db(), kClusterSelect, name, "cluster", clusterFromRow);
  });
}

Status InventoryRecords::deleteCluster(const std::string& name, Generation generation, const std::string& actor) {
  return write("delete cluster", actor, [&](Tx& tx) -> Status {
    TIDE_ASSIGN_OR_RETURN(Cluster c, loadOne<Cluster>(tx.db(), kClusterSelect, name, "cluster", clusterFromRow));
    long long nodes = 0;
    const long long id = c.meta.id;
    tx.db().run("SELECT COUNT(*) FROM nodes WHERE cluster_id = :id AND deleted_at IS NULL", soci::use(id),
                soci::into(nodes));
    if (nodes > 0) {
      return Status::conflict("cluster '" + name + "' still has " + std::to_string(nodes) + " node(s)");
    }
    return softDelete(tx, "clusters", "cluster", c.meta.id, name, generation);
  });
}

// --- nodes -----------------------------------------------------------------------------------------

Result<Node> insertNode(Tx& tx, const Node& node, std::vector<ErrorDetail>* warnings) {
  TIDE_RETURN_IF_ERROR(checkName("node", node.name));
  if (node.total.cores < 0 || node.total.memory_gib < 0 || node.system_reserved.cores < 0 ||
      node.system_reserved.memory_gib < 0 || node.system_reserved.cores > node.total.cores ||
      node.system_reserved.memory_gib > node.total.memory_gib) {
    return Status::invalidArgument("node '" + node.name +
                                       "': resources must be non-negative and system reserved "
                                       "must not exceed total",
                                   {{"total", "invalid resources", ""}});
  }
  {
    if (liveIdByName(tx.db(), "nodes", node.name) != 0) {
      return Status::alreadyExists("node '" + node.name + "' already exists");
    }
    // MRDS's node files name no cluster: such a node joins the default one (docs/mrds.md).
    const std::string cluster = node.cluster.empty() ? kDefaultCluster : node.cluster;
    long long cluster_id = liveIdByName(tx.db(), "clusters", cluster);
    if (cluster_id == 0 && node.cluster.empty()) {
      Cluster default_cluster;
      default_cluster.name = kDefaultCluster;
      TIDE_ASSIGN_OR_RETURN(Cluster created, insertCluster(tx, default_cluster));
      cluster_id = created.meta.id;
    }
    if (cluster_id == 0) {
      return Status(Code::kUnprocessable, "node '" + node.name + "': cluster '" + node.cluster + "' does not exist",
                    {{"cluster", "no such cluster", ""}});
    }
    std::vector<ErrorDetail> found;
    for (size_t i = 0; i < node.capabilities.size(); ++i) {
      if (liveIdByName(tx.db(), "capabilities", node.capabilities[i]) != 0) continue;
      found.push_back({"capabilities[" + std::to_string(i) + "]",
                       "capability '" + node.capabilities[i] +
                           "' is not declared: plans match it by name (IN, EQ, NOT_IN), not by score (GTE, LTE)",
                       ""});
    }
    const std::string state = model::toString(NodeState::kAllocated);
    const std::string spec = Json{
        {"capabilities", node.capabilities},
        {"local_volumes", node.local_volumes},
        {"labels", node.labels}}.dump();
    long long id = 0;
    tx.db().run(
        "INSERT INTO nodes (name, cluster_id, update_domain, total_cores, total_memory_gib, "
        "reserved_cores, reserved_memory_gib, spec, state, created_at, updated_at) "
        "VALUES (:n, :c, :ud, :tc, :tm, :rc, :rm, :spec, :st, :ca, :ua) RETURNING id",
        soci::use(node.name), soci::use(cluster_id), soci::use(node.update_domain), soci::use(node.total.cores),
        soci::use(node.total.memory_gib), soci::use(node.system_reserved.cores),
        soci::use(node.system_reserved.memory_gib), soci::use(spec), soci::use(state), soci::use(tx.now()),
        soci::use(tx.now()), soci::into(id));
    tx.event("node.created", "node/" + node.name,
             Json{{"cluster", cluster}, {"update_domain", node.update_domain}, {"state", state}});
    appendWarnings(tx, "node.warning", "node/" + node.name, found);
    if (warnings) warnings->insert(warnings->end(), found.begin(), found.end());
    return loadNode(tx.db(), node.name);
  }
}

Result<Node> InventoryRecords::createNode(const Node& node, const std::string& actor,
                                          std::vector<ErrorDetail>* warnings) {
  return write("create node", actor, [&](Tx& tx) { return insertNode(tx, node, warnings); });
}

Result<Node> InventoryRecords::getNode(const std::string& name) {
  return read("get node", [&](Db& db) -> Result<Node> { return loadNode(db, name); });
}

Result<Page<Node>> InventoryRecords::listNodes(const ListOptions& options) {
  static const FilterColumns kNodesFilters = {
      {"state", "n.state"}, {"cluster", "c.name"}, {"update_domain", "n.update_domain"}};
  TIDE_RETURN_IF_ERROR(checkFilters(options, kNodesFilters));
  return read("list nodes", [&](Db& db) -> Result<Page<Node>> {
    Where where = nodeSelect();
    where.greater("n.id", options.after).filters(options, kNodesFilters);
    return fetchPage<Node>(db, where, "n.id", options, nodeFromRow);
  });
}

Result<Node> InventoryRecords::setNodeState(const std::string& name, NodeState state, Generation generation,
                                            const std::string& actor, const std::string& message) {
  return write("set node state", actor, [&](Tx& tx) -> Result<Node> {
    TIDE_ASSIGN_OR_RETURN(Node n, loadNode(tx.db(), name));
    if (state == NodeState::kAllocated && n.cluster.empty()) {
      return Status(Code::kUnprocessable, "node '" + name + "' has no cluster; it cannot be ALLOCATED");
    }
    TIDE_RETURN_IF_ERROR(changeState(tx, "nodes", n.meta.id, "node/" + name, n.state, state, generation, message));
    const std::string drained_by = state == NodeState::kDraining ? actor : "";
    const long long id = n.meta.id;
    tx.db().update("UPDATE nodes SET drained_by = :by WHERE id = :id", soci::use(drained_by), soci::use(id));
    return loadNode(tx.db(), name);
  });
}

Result<bool> InventoryRecords::fillNodeTotal(const std::string& name, const Resources& total,
                                             const std::string& actor) {
  // Most reports find the total set: read first, so they cost no write transaction.
  TIDE_ASSIGN_OR_RETURN(Node current, getNode(name));
  if (current.total.cores != 0 || current.total.memory_gib != 0) return false;
  return write("fill node total", actor, [&](Tx& tx) -> Result<bool> {
    TIDE_ASSIGN_OR_RETURN(Node n, loadNode(tx.db(), name));
    if (n.total.cores != 0 || n.total.memory_gib != 0) return false;
    Bindings values;
    values.set("total_cores", total.cores);
    values.set("total_memory_gib", total.memory_gib);
    TIDE_RETURN_IF_ERROR(updateGuarded(tx, "nodes", n.meta.id, n.meta.generation,
                                       "total_cores = :total_cores, total_memory_gib = :total_memory_gib", values));
    tx.event("node.resources_reported", "node/" + name, Json{{"total", total}});
    return true;
  });
}

Status InventoryRecords::deleteNode(const std::string& name, Generation generation, const std::string& actor) {
  return write("delete node", actor, [&](Tx& tx) -> Status {
    TIDE_ASSIGN_OR_RETURN(Node n, loadNode(tx.db(), name));
    long long live = 0;
    Bindings values;
    values.set("id", static_cast<long long>(n.meta.id));
    tx.db().run(
        "SELECT COUNT(*) FROM runtime_instances WHERE node_id = :id AND state NOT "
        "IN " +
            boundStates(values, "released", model::kReleasedRuntimeStates),
        values, soci::into(live));
    if (live > 0) {
      return Status::conflict("node '" + name + "' still holds " + std::to_string(live) +
                              " runtime instance(s); drain it first");
    }
    return softDelete(tx, "nodes", "node", n.meta.id, name, generation);
  });
}

}  // namespace tide::ledger
