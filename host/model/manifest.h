#pragma once
// What a manifest holds once parsed: records of host/model/records.h, each with the place it
// was defined so errors found later (by the ledger) can still name the line. Parsing and
// validation live in host/config/manifest.h; applying a manifest in host/ledger/ledger.h.

#include <string>
#include <vector>

#include "host/model/records.h"

namespace tide::model {

// A record and where it was defined, "<source>:<line>" (1-based).
template <class T>
struct Sourced {
  T value;
  std::string location;
};

struct Manifest {
  std::vector<Sourced<Capability>> capabilities;
  std::vector<Sourced<Cluster>> clusters;
  std::vector<Sourced<Node>> nodes;
  std::vector<Sourced<Plan>> plans;
  std::vector<Sourced<Deployment>> deployments;

  bool empty() const {
    return capabilities.empty() && clusters.empty() && nodes.empty() && plans.empty() && deployments.empty();
  }
};

}  // namespace tide::model
