#pragma once
// Nodes for scheduler tests: ALLOCATED, in cluster "main", nothing reserved.

#include <string>

#include "host/model/records.h"

namespace tide::testing {

inline model::Node makeNode(const std::string& name, const std::string& domain = "ud-1", double cores = 16,
                            double memory = 64) {
  model::Node n;
  n.name = name;
  n.cluster = "main";
  n.update_domain = domain;
  n.total = {cores, memory};
  n.remaining = n.total;
  n.state = model::NodeState::kAllocated;
  return n;
}

// "<prefix><i>": names for generated nodes and plans.
inline std::string numbered(std::string prefix, int i) { return prefix.append(std::to_string(i)); }

}  // namespace tide::testing
