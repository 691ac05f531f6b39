#pragma once
// The values the scheduler takes and returns (docs/architecture.md#scheduling): what is already placed
// (InstanceFact), what a caller asks for (PlacementOptions) and what it gets back
// (Placement). Plain values; no ledger access.

#include <string>
#include <vector>

#include "host/model/records.h"

namespace tide::sched {

// Capacity one live volume takes from a node's local volume.
struct VolumeUse {
  std::string storage_class;
  double capacity_gib = 0;
  // The node's LocalVolume::mount_path holding it; empty (or unknown) charges the local
  // volume of the class with the most free capacity, as place() would have chosen.
  std::string local_volume;
};

// One live runtime instance (not TERMINATED/FAILED) as the scheduler sees it. The engine
// fills these from the ledger's runtime instances and their meta instances.
struct InstanceFact {
  std::string meta_instance;
  std::string plan;
  std::string node;
  std::string update_domain;  // empty: the node's update domain
  bool healthy = true;
  std::string created_at;  // RFC 3339; scale-down removes the newest first among equals
  std::vector<VolumeUse> volumes;
};

struct PlacementOptions {
  // Plan anti-affinity: at most this many instances of the plan on one node (>= 1).
  int max_per_node = 1;
  // false: least-allocated (most resources left after placement); true: bin-pack.
  bool bin_pack = false;
  // Never place on these nodes (e.g. the current node when relocating).
  std::vector<std::string> exclude_nodes;
  // Soft: prefer nodes that run none of these meta instances (anti-affinity between
  // versions). Ranked after update-domain spread, before the allocation score.
  std::vector<std::string> avoid_nodes_of;
};

// Where one requested persistent volume goes.
struct VolumeAssignment {
  std::string payload_name;  // the application that asked for it
  std::string mount_path;    // as the application sees it
  std::string storage_class;
  double capacity_gib = 0;
  std::string local_volume;  // the node's LocalVolume::mount_path that holds it
};

struct Placement {
  std::string node;
  std::string update_domain;
  model::Resources reservation;           // sum of the plan's applications' resources
  std::vector<VolumeAssignment> volumes;  // plan order: application, then volume
};

}  // namespace tide::sched
