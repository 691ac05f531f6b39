#pragma once
// Capabilities, clusters and nodes: what tide can place on (docs/architecture.md#records-and-states).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/core/status.h"
#include "host/ledger/ledger_types.h"

namespace tide::ledger {

// The ledger's inventory; Ledger::inventory(). Every method keeps ledger.h's contracts.
class InventoryRecords : public Repository {
 public:
  explicit InventoryRecords(LedgerCore& core) : Repository(core) {}
  InventoryRecords(const InventoryRecords&) = delete;
  InventoryRecords& operator=(const InventoryRecords&) = delete;

  // --- capabilities ------------------------------------------------------------------------
  Result<Capability> createCapability(const Capability& capability, const std::string& actor);
  Result<Capability> getCapability(const std::string& name);
  Result<Page<Capability>> listCapabilities(const ListOptions& options);  // filters: type
  Status deleteCapability(const std::string& name, Generation generation, const std::string& actor);

  // --- clusters ----------------------------------------------------------------------------
  Result<Cluster> createCluster(const Cluster& cluster, const std::string& actor);
  Result<Cluster> getCluster(const std::string& name);
  Result<Page<Cluster>> listClusters(const ListOptions& options);  // filters: state
  Result<Cluster> setClusterState(const std::string& name, ClusterState state, Generation generation,
                                  const std::string& actor, const std::string& message = "");
  // Refused (kConflict) while live nodes belong to the cluster.
  Status deleteCluster(const std::string& name, Generation generation, const std::string& actor);

  // --- nodes -------------------------------------------------------------------------------
  // The node's cluster must exist (kUnprocessable otherwise); a node naming none joins
  // kDefaultCluster, created on first use. It starts ALLOCATED. Capability names that are
  // not declared are kept and reported in `warnings` (and a "node.warning" event): IN, EQ
  // and NOT_IN rules match them by name; GTE and LTE need a declared type and score.
  Result<Node> createNode(const Node& node, const std::string& actor, std::vector<ErrorDetail>* warnings = nullptr);
  Result<Node> getNode(const std::string& name);
  Result<Page<Node>> listNodes(const ListOptions& options);  // filters: state, cluster, update_domain
  // Moving to DRAINING records `actor` as the node's drained_by; any other state clears it.
  Result<Node> setNodeState(const std::string& name, NodeState state, Generation generation, const std::string& actor,
                            const std::string& message = "");
  // Refused (kConflict) while the node holds runtime instances that are not terminal.
  Status deleteNode(const std::string& name, Generation generation, const std::string& actor);
  // The node's total resources as its agent measured them (docs/agents.md#clusters-and-nodes),
  // for a node whose manifest left `total` out (its total is zero): sets them, bumps the
  // generation and appends "node.resources_reported". Returns whether it wrote: a node whose
  // total is set already is left alone. kNotFound for an unknown node.
  Result<bool> fillNodeTotal(const std::string& name, const Resources& total, const std::string& actor);
};

}  // namespace tide::ledger
