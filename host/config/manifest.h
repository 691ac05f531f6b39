#pragma once
// Manifests: the YAML (or JSON) files users write for capabilities, clusters, nodes, plans
// and deployments, parsed into ledger records and validated with every problem reported.
//
// Accepted shapes (several `---` documents may be combined):
//   - a mapping with any of `capabilities:`, `clusters:`, `nodes:`, `plans:`, `deployments:` lists;
//   - a single plan document (MRDS deployment-plan file: name, namespace, serviceName, ...);
//   - a single deployment document (MRDS file: deployment_plan_name, deployment_id, ...).
// MRDS's camelCase / snake_case spellings and the snake_case JSON wire shape of
// host/model/records.cpp are accepted alike; each record kind has one alias table in
// manifest.cpp. Capability types are case-insensitive and stored upper-case ("GPU");
// comparators are stored as IN/NOT_IN/EQ/GTE/LTE and protocols as TCP/UDP.
//
// Errors: kInvalidArgument whose message is the first problem ("<source>:<line>:<column>:
// <field>: <message> (and N more errors)") and whose details hold every problem in file
// order, each with field (dotted path as spelled, e.g. "nodes[0].totalResources.cores") and
// location ("<source>:<line>:<column>", the key or value at fault). A manifest with any
// problem yields no records. Nothing here throws.
// A null value counts as an absent key. `metadata` is accepted so a client can name the
// generation it read; other server-owned keys (state, message, remaining, rollout_state)
// are unknown keys.
// Cross-record references (a node's cluster, a deployment's plan) are not checked: they
// may name records already in the ledger.

#include <string>
#include <string_view>
#include <vector>

#include "host/core/status.h"
#include "host/model/manifest.h"
#include "host/model/records.h"

namespace tide::config {

using model::Manifest;
using model::Sourced;

// `source` names the input in error locations: a file path, or "request body".
// An input without any record (empty text, only comments, `nodes: []`) is an error.
Result<Manifest> parseManifest(std::string_view text, const std::string& source);

// A manifest read as far as it goes: every record it could read (one with a problem read in
// part) and every problem found, for a caller that checks the records further and answers
// with its own problems and these at once (problemsStatus in host/config/field_reader.h).
struct ManifestReading {
  Manifest manifest;
  std::vector<ErrorDetail> problems;
};
// Fails only on what leaves nothing to read: text that is not YAML.
Result<ManifestReading> readManifest(std::string_view text, const std::string& source);
// kNotFound when the file cannot be read; otherwise as parseManifest with source = path.
Result<Manifest> loadManifestFile(const std::string& path);

// One record from one document holding exactly one object (HTTP bodies), with the same
// keys and checks as inside the lists above. Field paths have no list prefix ("name").
Result<model::Capability> parseCapability(std::string_view text, const std::string& source);
Result<model::Cluster> parseCluster(std::string_view text, const std::string& source);
Result<model::Node> parseNode(std::string_view text, const std::string& source);
Result<model::Plan> parsePlan(std::string_view text, const std::string& source);
Result<model::Deployment> parseDeployment(std::string_view text, const std::string& source);
// A deployment posted to a plan's URL: the plan key may be left out (it is then `plan`),
// and when present it must name `plan` (an error at that key otherwise).
Result<model::Deployment> parseDeploymentForPlan(std::string_view text, const std::string& source,
                                                 const std::string& plan);

}  // namespace tide::config
