#pragma once
// What a manifest holds once parsed: records of host/model/records.h, each with the place it
// was defined so errors found later (by the ledger) can still name the line. Parsing and
// validation live in host/config/manifest.h; applying a manifest in host/ledger/ledger.h.

#include <map>
#include <string>
#include <vector>

#include "host/model/records.h"

namespace tide::model {

// One key of a manifest: its path as written ("plans[0].matchingCapabilities[1].names"),
// and where the key and its value were written, "<source>:<line>:<column>" (1-based).
struct FieldPlace {
  std::string field;
  std::string key;
  std::string value;
};

// A record and where it was defined, "<source>:<line>:<column>" (1-based).
template <class T>
struct Sourced {
  T value;
  std::string location;
  // The record's field path ("plans[1]"; "" for a document that is the record), and each
  // key written under it by its canonical path below the record, as the ledger and the
  // JSON shape name fields ("payload_coordinates[0].payload_name", whichever spelling was
  // written), so a check made after parsing can point at the key or value it refuses.
  std::string path = {};
  std::map<std::string, FieldPlace> fields = {};
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
