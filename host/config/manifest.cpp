#include "host/config/manifest.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "host/config/field_reader.h"
#include "host/config/yaml_tree.h"

namespace tide::config {
namespace {

using Kind = YamlNode::Kind;
using Json = nlohmann::json;

// --- the accepted keys, one table per record kind ----------------------------------------
// Canonical key first, then every spelling: MRDS's, the JSON wire shape's, and camelCase
// or snake_case twins where MRDS users may reach for them.

const KeyTable kManifestKeys = {
    {"capabilities", {"capabilities"}}, {"clusters", {"clusters"}}, {"nodes", {"nodes"}}, {"plans", {"plans"}},
    {"deployments", {"deployments"}},
};

// Server-owned fields a client echoes back from a GET; only id and generation are kept
// (generation names the version an update was based on).
const KeyTable kMetaKeys = {
    {"id", {"id"}},
    {"generation", {"generation"}},
    {"created_at", {"created_at", "createdAt"}},
    {"updated_at", {"updated_at", "updatedAt"}},
};

const KeyTable kCapabilityKeys = {
    {"metadata", {"metadata"}},
    {"name", {"name"}},
    {"type", {"type"}},
    {"score", {"score"}},
};

const KeyTable kClusterKeys = {
    {"metadata", {"metadata"}},
    {"name", {"name"}},
    {"driver", {"driver", "driverKind", "driver_kind"}},
    {"config", {"config", "driverConfig", "driver_config"}},
};

const KeyTable kResourceKeys = {
    {"cores", {"cores"}},
    {"memory", {"memory", "memory_gib", "memoryGib"}},
};

const KeyTable kLocalVolumeKeys = {
    {"mount_path", {"mountPath", "mount_path"}},
    {"storage_class", {"storageClass", "storage_class"}},
    {"capacity", {"storageCapacity", "storage_capacity", "capacity_gib", "capacityGib", "capacity"}},
};

const KeyTable kNodeKeys = {
    {"metadata", {"metadata"}},
    {"name", {"name"}},
    {"cluster", {"cluster"}},
    {"update_domain", {"updateDomain", "update_domain"}},
    {"total", {"totalResources", "total_resources", "total"}},
    {"system_reserved", {"systemReservedResources", "system_reserved_resources", "system_reserved", "systemReserved"}},
    {"capabilities", {"capabilityIDs", "capability_ids", "capabilityIds", "capabilities"}},
    {"local_volumes", {"localVolumes", "local_volumes"}},
    {"labels", {"labels"}},
};

const KeyTable kCapabilityMatchKeys = {
    {"type", {"capabilityType", "capability_type", "type"}},
    {"comparator", {"comparator"}},
    {"names", {"capabilityNames", "capability_names", "names"}},
};

const KeyTable kPortKeys = {{"protocol", {"protocol"}}, {"port", {"port"}}};

const KeyTable kPersistentVolumeKeys = {
    {"storage_class", {"storageClass", "storage_class"}},
    {"capacity", {"capacity", "capacity_gib", "capacityGib", "storageCapacity", "storage_capacity"}},
    {"mount_path", {"mountPath", "mount_path"}},
};

const KeyTable kHealthCheckKeys = {
    {"type", {"type"}},
    {"port", {"port"}},
    {"path", {"path"}},
    {"command", {"command"}},
    {"interval_seconds", {"intervalSeconds", "interval_seconds"}},
    {"timeout_seconds", {"timeoutSeconds", "timeout_seconds"}},
    {"healthy_threshold", {"healthyThreshold", "healthy_threshold"}},
    {"unhealthy_threshold", {"unhealthyThreshold", "unhealthy_threshold"}},
};

const KeyTable kApplicationKeys = {
    {"payload_name", {"payloadName", "payload_name"}},
    {"resources", {"resources"}},
    {"ports", {"ports"}},
    {"persistent_volumes", {"persistentVolumes", "persistent_volumes"}},
    {"health_check", {"healthCheck", "health_check"}},
    {"depends_on", {"dependsOn", "depends_on"}},
    {"pod", {"pod"}},
};

const KeyTable kStrategyKeys = {{"script", {"script"}}, {"params", {"params"}}};

const KeyTable kApprovalKeys = {{"policies", {"policies"}}, {"min_approvals", {"minApprovals", "min_approvals"}}};

const KeyTable kPlacementKeys = {
    {"max_per_node", {"maxPerNode", "max_per_node"}},
    {"bin_pack", {"binPack", "bin_pack"}},
};

const KeyTable kPlanKeys = {
    {"metadata", {"metadata"}},
    {"name", {"name"}},
    {"namespace", {"namespace"}},
    {"service_name", {"serviceName", "service_name"}},
    {"matching_capabilities",
     {"matchingComputeCapabilities", "matching_compute_capabilities", "matchingCapabilities", "matching_capabilities"}},
    {"applications", {"applications"}},
    {"strategy", {"strategy"}},
    {"approval", {"approval"}},
    {"placement", {"placement"}},
    {"traffic", {"traffic"}},
};

const KeyTable kTrafficKeys = {
    {"listen", {"listen"}},
    {"preview_listen", {"previewListen", "preview_listen"}},
    {"health", {"health"}},
    {"header_routes", {"headerRoutes", "header_routes"}},
    {"drain_seconds", {"drainSeconds", "drain_seconds"}},
    {"max_connections", {"maxConnections", "max_connections"}},
    {"port", {"port"}},
};
const KeyTable kTrafficHealthKeys = {{"path", {"path"}}};
const KeyTable kHeaderRouteKeys = {{"header", {"header"}}, {"value", {"value"}}};

const KeyTable kPayloadCoordinatesKeys = {
    {"payload_name", {"payload_name", "payloadName"}},
    {"coordinates", {"coordinates"}},
};

const KeyTable kDeploymentKeys = {
    {"metadata", {"metadata"}},
    {"plan", {"deployment_plan_name", "deploymentPlanName", "plan"}},
    {"deployment_id", {"deployment_id", "deploymentId"}},
    {"payload_coordinates", {"payload_coordinates", "payloadCoordinates"}},
    {"instance_count", {"instance_count", "instanceCount"}},
    {"strategy", {"strategy"}},
};

// --- limits ---------------------------------------------------------------------------------

constexpr Bounds kCores{0, 1e5};
constexpr Bounds kMemoryGib{0, 1e7};
constexpr Bounds kCapacityGib{0, 1e7, true};
constexpr Bounds kPort{1, 65535};
constexpr Bounds kScore{0, 1e6};
constexpr Bounds kInstanceCount{0, 10000};
constexpr Bounds kThreshold{1, 1000};
constexpr Bounds kSeconds{0, 86400, true};
constexpr Bounds kId{0, 9.2e18};
constexpr Bounds kMaxPerNode{1, model::kMaxPerNodeLimit};
constexpr Bounds kMinApprovals{1, model::kMaxMinApprovals};

// --- small helpers --------------------------------------------------------------------------

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Items of a list with their paths (each placed: Problems::placeItem), or none after
// reporting a non-list.
template <class Fn>
void forEachItem(const YamlNode* list, const std::string& field, Problems& problems, Fn&& fn) {
  if (list == nullptr) return;
  for (size_t i = 0; i < list->items.size(); ++i) {
    problems.placeItem(indexPath(field, i), list->items[i]);
    fn(list->items[i], indexPath(field, i));
  }
}

// Reports the second and later occurrences of a key within one scope.
class DuplicateCheck {
 public:
  DuplicateCheck(Problems& problems, std::string what) : problems_(problems), what_(std::move(what)) {}

  void see(const std::string& key, const YamlNode& at, const std::string& field) {
    if (key.empty()) return;
    auto [it, inserted] = first_.try_emplace(key, problems_.location(at));
    if (!inserted) {
      problems_.add(at, field, "duplicate " + what_ + " \"" + key + "\" (first at " + it->second + ")");
    }
  }

 private:
  Problems& problems_;
  std::string what_;
  std::map<std::string, std::string> first_;  // key → where it was first seen
};

std::optional<std::string> canonicalComparator(std::string_view written) {
  std::string s = upper(std::string(written));
  if (s.starts_with("COMPARATOR_")) s.erase(0, 11);
  for (const char* known : {"IN", "NOT_IN", "EQ", "GTE", "LTE"}) {
    if (s == known) return s;
  }
  return std::nullopt;
}

std::optional<std::string> readAbsolutePath(MapReader& m, std::string_view key) {
  const YamlNode* v = m.get(key, Need::kRequired);
  if (v == nullptr) return std::nullopt;
  auto path = readString(*v, m.field(key), m.problems());
  if (!path) return std::nullopt;
  if (!path->starts_with("/")) {
    m.problems().add(*v, m.field(key), "\"" + *path + "\" must be an absolute path");
    return std::nullopt;
  }
  if (("/" + *path + "/").find("/../") != std::string::npos) {
    m.problems().add(*v, m.field(key), "\"" + *path + "\" must not contain '..'");
    return std::nullopt;
  }
  return path;
}

std::optional<std::string> readNonEmpty(MapReader& m, std::string_view key, Need need) {
  auto value = m.string(key, need);
  if (value && value->empty()) {
    m.problems().add(*m.get(key), m.field(key), "must not be empty");
    return std::nullopt;
  }
  return value;
}

// --- record readers -------------------------------------------------------------------------
// Each reads one mapping at `path`, records every problem, and returns what it could read;
// callers discard the result when any problem was recorded.

void readMeta(MapReader& m, model::Meta& meta) {
  const YamlNode* node = m.get("metadata");
  if (node == nullptr) return;
  MapReader r(*node, m.field("metadata"), kMetaKeys, m.problems());
  if (auto v = r.integer("id", Need::kOptional, kId)) meta.id = *v;
  if (auto v = r.integer("generation", Need::kOptional, kId)) meta.generation = *v;
  r.string("created_at", Need::kOptional);
  r.string("updated_at", Need::kOptional);
}

model::Capability readCapability(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kCapabilityKeys, problems);
  model::Capability out;
  readMeta(m, out.meta);
  if (auto v = m.name("name", Need::kRequired)) out.name = *v;
  if (auto v = readNonEmpty(m, "type", Need::kRequired)) out.type = upper(*v);
  if (auto v = m.integer("score", Need::kOptional, kScore)) out.score = *v;
  return out;
}

model::Cluster readCluster(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kClusterKeys, problems);
  model::Cluster out;
  readMeta(m, out.meta);
  if (auto v = m.name("name", Need::kRequired)) out.name = *v;
  if (auto v = readNonEmpty(m, "driver", Need::kOptional)) out.driver_kind = *v;
  if (m.mapping("config", Need::kOptional) != nullptr) {
    if (auto v = m.json("config", Need::kOptional)) out.driver_config = std::move(*v);
  }
  return out;
}

std::optional<model::Resources> readResources(const YamlNode& node, const std::string& path, Problems& problems) {
  size_t before = problems.count();
  MapReader m(node, path, kResourceKeys, problems);
  model::Resources out;
  if (auto v = m.number("cores", Need::kRequired, kCores)) out.cores = *v;
  if (auto v = m.number("memory", Need::kRequired, kMemoryGib)) out.memory_gib = *v;
  if (problems.count() != before) return std::nullopt;
  return out;
}

void checkReservedWithinTotal(const model::Resources& reserved, const model::Resources& total,
                              const YamlNode& reservedNode, const std::string& reservedField,
                              const std::string& totalField, Problems& problems) {
  auto check = [&](double r, double t, std::string_view key, std::string_view totalKey) {
    if (r <= t) return;
    const auto* entry = findEntry(reservedNode, kResourceKeys, key);
    std::string spelled = entry != nullptr ? entry->first.scalar : std::string(key);
    char buffer[128];
    std::snprintf(buffer, sizeof buffer, "%g exceeds the total %g", r, t);
    problems.add(entry != nullptr ? entry->second : reservedNode, childPath(reservedField, spelled),
                 std::string(buffer) + " (" + totalField + "." + std::string(totalKey) + ")");
  };
  check(reserved.cores, total.cores, "cores", "cores");
  check(reserved.memory_gib, total.memory_gib, "memory", "memory");
}

model::LocalVolume readLocalVolume(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kLocalVolumeKeys, problems);
  model::LocalVolume out;
  if (auto v = readAbsolutePath(m, "mount_path")) out.mount_path = *v;
  if (auto v = readNonEmpty(m, "storage_class", Need::kRequired)) out.storage_class = *v;
  if (auto v = m.number("capacity", Need::kRequired, kCapacityGib)) out.capacity_gib = *v;
  return out;
}

std::map<std::string, std::string> readLabels(const YamlNode& node, const std::string& path, Problems& problems) {
  std::map<std::string, std::string> out;
  if (!expectKind(node, Kind::kMapping, path, problems)) return out;
  for (const auto& [key, value] : node.entries) {
    auto k = readString(key, path, problems);
    if (!k) continue;
    std::string field = childPath(path, *k);
    if (k->empty()) {
      problems.add(key, field, "label keys must not be empty");
    } else if (out.contains(*k)) {
      problems.add(key, field, "label given twice");
    } else if (auto v = readString(value, field, problems)) {
      out[*k] = *v;
    }
  }
  return out;
}

model::Node readNode(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kNodeKeys, problems);
  model::Node out;
  readMeta(m, out.meta);
  if (auto v = m.name("name", Need::kRequired)) out.name = *v;
  // "" is how the wire shape says "no cluster".
  if (auto v = m.string("cluster", Need::kOptional); v && !v->empty()) {
    if (readName(*m.get("cluster"), m.field("cluster"), problems)) out.cluster = *v;
  }
  if (auto v = m.name("update_domain", Need::kRequired)) out.update_domain = *v;
  std::optional<model::Resources> total;
  // Left out: the node's agent reports its machine's (docs/agents.md#clusters-and-nodes).
  if (const YamlNode* v = m.get("total", Need::kOptional)) {
    total = readResources(*v, m.field("total"), problems);
    if (total) out.total = *total;
  }
  if (const YamlNode* v = m.get("system_reserved")) {
    if (auto reserved = readResources(*v, m.field("system_reserved"), problems)) {
      out.system_reserved = *reserved;
      if (total)
        checkReservedWithinTotal(*reserved, *total, *v, m.field("system_reserved"), m.field("total"), problems);
    }
  }
  if (auto names = m.stringList("capabilities", Need::kOptional)) {
    const YamlNode& list = *m.get("capabilities");
    DuplicateCheck duplicates(problems, "capability");
    for (size_t i = 0; i < names->size(); ++i) {
      std::string field = indexPath(m.field("capabilities"), i);
      if (!readName(list.items[i], field, problems)) continue;
      duplicates.see((*names)[i], list.items[i], field);
      out.capabilities.push_back((*names)[i]);
    }
  }
  DuplicateCheck mountPaths(problems, "mount path");
  forEachItem(m.sequence("local_volumes", Need::kOptional), m.field("local_volumes"), problems,
              [&](const YamlNode& item, const std::string& field) {
                out.local_volumes.push_back(readLocalVolume(item, field, problems));
                if (const auto* e = findEntry(item, kLocalVolumeKeys, "mount_path")) {
                  mountPaths.see(out.local_volumes.back().mount_path, e->second, childPath(field, e->first.scalar));
                }
              });
  if (const YamlNode* v = m.get("labels")) out.labels = readLabels(*v, m.field("labels"), problems);
  out.state = out.cluster.empty() ? model::NodeState::kUnallocated : model::NodeState::kAllocated;
  return out;
}

model::CapabilityMatch readCapabilityMatch(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kCapabilityMatchKeys, problems);
  model::CapabilityMatch out;
  if (auto v = readNonEmpty(m, "type", Need::kRequired)) out.type = upper(*v);
  if (auto v = m.string("comparator", Need::kRequired)) {
    if (auto c = canonicalComparator(*v)) {
      out.comparator = *c;
    } else {
      problems.add(*m.get("comparator"), m.field("comparator"),
                   "unknown comparator \"" + *v + "\"; expected one of in, not_in, eq, gte, lte");
    }
  }
  if (const YamlNode* list = m.sequence("names", Need::kRequired)) {
    if (list->items.empty()) problems.add(*list, m.field("names"), "must name at least one capability");
    forEachItem(list, m.field("names"), problems, [&](const YamlNode& item, const std::string& field) {
      if (auto name = readName(item, field, problems)) out.names.push_back(*name);
    });
  }
  return out;
}

model::Port readPort(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kPortKeys, problems);
  model::Port out;
  out.protocol = "TCP";
  if (auto v = m.string("protocol", Need::kOptional)) {
    std::string p = upper(*v);
    if (p == "TCP" || p == "UDP") {
      out.protocol = p;
    } else {
      problems.add(*m.get("protocol"), m.field("protocol"), "unknown protocol \"" + *v + "\"; expected TCP or UDP");
    }
  }
  if (auto v = m.integer("port", Need::kRequired, kPort)) out.port = static_cast<int>(*v);
  return out;
}

model::PersistentVolume readPersistentVolume(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kPersistentVolumeKeys, problems);
  model::PersistentVolume out;
  if (auto v = readNonEmpty(m, "storage_class", Need::kRequired)) out.storage_class = *v;
  if (auto v = m.number("capacity", Need::kRequired, kCapacityGib)) out.capacity_gib = *v;
  if (auto v = readAbsolutePath(m, "mount_path")) out.mount_path = *v;
  return out;
}

model::HealthCheck readHealthCheck(const YamlNode& node, const std::string& path,
                                   const std::vector<model::Port>& declared, Problems& problems) {
  MapReader m(node, path, kHealthCheckKeys, problems);
  model::HealthCheck out;
  if (auto v = m.string("type", Need::kRequired)) {
    if (*v == "http" || *v == "tcp" || *v == "exec") {
      out.type = *v;
    } else {
      problems.add(*m.get("type"), m.field("type"),
                   "unknown health check type \"" + *v + "\"; expected http, tcp or exec");
    }
  }
  bool probesPort = out.type == "http" || out.type == "tcp";
  if (auto v = m.integer("port", probesPort ? Need::kRequired : Need::kOptional, kPort)) {
    out.port = static_cast<int>(*v);
    bool isDeclared = std::any_of(declared.begin(), declared.end(),
                                  [&](const model::Port& p) { return p.protocol == "TCP" && p.port == out.port; });
    if (probesPort && !isDeclared) {
      problems.add(*m.get("port"), m.field("port"), "must be one of the application's declared TCP ports");
    }
  }
  if (auto v = m.string("path", Need::kOptional)) {
    if (v->starts_with("/"))
      out.path = *v;
    else
      problems.add(*m.get("path"), m.field("path"), "must start with '/'");
  }
  if (auto v = m.stringList("command", out.type == "exec" ? Need::kRequired : Need::kOptional)) {
    if (v->empty() && out.type == "exec") {
      problems.add(*m.get("command"), m.field("command"), "must hold at least the program to run");
    }
    out.command = *v;
  }
  if (auto v = m.number("interval_seconds", Need::kOptional, kSeconds)) out.interval_seconds = *v;
  if (auto v = m.number("timeout_seconds", Need::kOptional, kSeconds)) out.timeout_seconds = *v;
  if (auto v = m.integer("healthy_threshold", Need::kOptional, kThreshold))
    out.healthy_threshold = static_cast<int>(*v);
  if (auto v = m.integer("unhealthy_threshold", Need::kOptional, kThreshold)) {
    out.unhealthy_threshold = static_cast<int>(*v);
  }
  return out;
}

model::Application readApplication(const YamlNode& node, const std::string& path, DuplicateCheck& ports,
                                   Problems& problems) {
  MapReader m(node, path, kApplicationKeys, problems);
  model::Application out;
  if (auto v = m.name("payload_name", Need::kRequired)) out.payload_name = *v;
  if (const YamlNode* v = m.get("resources", Need::kRequired)) {
    if (auto r = readResources(*v, m.field("resources"), problems)) out.resources = *r;
  }
  forEachItem(m.sequence("ports", Need::kOptional), m.field("ports"), problems,
              [&](const YamlNode& item, const std::string& field) {
                out.ports.push_back(readPort(item, field, problems));
                const model::Port& p = out.ports.back();
                if (p.port != 0) ports.see(p.protocol + "/" + std::to_string(p.port), item, field);
              });
  DuplicateCheck mountPaths(problems, "mount path");
  forEachItem(m.sequence("persistent_volumes", Need::kOptional), m.field("persistent_volumes"), problems,
              [&](const YamlNode& item, const std::string& field) {
                out.persistent_volumes.push_back(readPersistentVolume(item, field, problems));
                if (const auto* e = findEntry(item, kPersistentVolumeKeys, "mount_path")) {
                  mountPaths.see(out.persistent_volumes.back().mount_path, e->second,
                                 childPath(field, e->first.scalar));
                }
              });
  if (const YamlNode* v = m.get("health_check")) {
    out.health_check = readHealthCheck(*v, m.field("health_check"), out.ports, problems);
  }
  forEachItem(m.sequence("depends_on", Need::kOptional), m.field("depends_on"), problems,
              [&](const YamlNode& item, const std::string& field) {
                if (auto name = readName(item, field, problems)) out.depends_on.push_back(*name);
              });
  if (auto v = m.name("pod", Need::kOptional)) out.pod = *v;
  return out;
}

// What `pod` of each application says wrong: a name that is no other application of the plan,
// or one that joins a pod itself (a pod is one application and those that join it).
void checkPods(const model::Plan& plan, const std::vector<const YamlNode*>& items,
               const std::vector<std::string>& fields, Problems& problems) {
  std::map<std::string, const model::Application*> by_name;
  for (const auto& app : plan.applications) by_name.emplace(app.payload_name, &app);
  for (size_t i = 0; i < plan.applications.size() && i < items.size(); ++i) {
    const model::Application& app = plan.applications[i];
    if (app.pod.empty()) continue;
    const auto* entry = findEntry(*items[i], kApplicationKeys, "pod");
    if (entry == nullptr) continue;
    const std::string field = childPath(fields[i], entry->first.scalar);
    auto owner = by_name.find(app.pod);
    if (app.pod == app.payload_name) {
      problems.add(entry->second, field, "an application cannot join its own pod");
    } else if (owner == by_name.end()) {
      problems.add(entry->second, field, "'" + app.pod + "' is not an application of this plan");
    } else if (!owner->second->pod.empty()) {
      problems.add(entry->second, field,
                   "'" + app.pod + "' joins the pod of '" + owner->second->pod + "': name that one instead");
    }
  }
}

// What depends_on of each application says wrong (docs/architecture.md#applications): a name
// that is no application of the plan, the application itself, a name twice, a cycle.
// `items[i]` is the manifest node of plan.applications[i], `fields[i]` its field path.
void checkDependencies(const model::Plan& plan, const std::vector<const YamlNode*>& items,
                       const std::vector<std::string>& fields, Problems& problems) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < plan.applications.size(); ++i) index.emplace(plan.applications[i].payload_name, i);
  bool named_well = true;
  for (size_t i = 0; i < plan.applications.size() && i < items.size(); ++i) {
    const model::Application& app = plan.applications[i];
    const auto* entry = findEntry(*items[i], kApplicationKeys, "depends_on");
    if (entry == nullptr) continue;
    if (app.depends_on.size() != entry->second.items.size()) {  // a bad name, reported already
      named_well = false;
      continue;
    }
    const std::string field = childPath(fields[i], entry->first.scalar);
    std::set<std::string> seen;
    for (size_t k = 0; k < app.depends_on.size() && k < entry->second.items.size(); ++k) {
      const std::string& name = app.depends_on[k];
      const YamlNode& at = entry->second.items[k];
      const std::string item_field = field + "[" + std::to_string(k) + "]";
      if (name == app.payload_name) {
        problems.add(at, item_field, "an application cannot depend on itself");
      } else if (!index.count(name)) {
        problems.add(at, item_field, "'" + name + "' is not an application of this plan");
      } else if (!seen.insert(name).second) {
        problems.add(at, item_field, "'" + name + "' is named twice");
      } else {
        continue;
      }
      named_well = false;
    }
  }
  if (!named_well) return;
  // A cycle: follow depends_on from each application; meeting one on the current path closes it.
  std::vector<int> mark(plan.applications.size(), 0);  // 0 unseen, 1 on the path, 2 done
  std::vector<size_t> path;
  std::function<bool(size_t)> cycleFrom = [&](size_t i) {
    mark[i] = 1;
    path.push_back(i);
    for (const std::string& name : plan.applications[i].depends_on) {
      const size_t next = index.at(name);
      if (mark[next] == 1) {
        std::string loop;
        for (auto it = std::find(path.begin(), path.end(), next); it != path.end(); ++it) {
          loop += plan.applications[*it].payload_name + " → ";
        }
        loop += name;
        const auto* entry = findEntry(*items[i], kApplicationKeys, "depends_on");
        problems.add(entry->first, childPath(fields[i], entry->first.scalar), "depends on itself through " + loop);
        return true;
      }
      if (mark[next] == 0 && cycleFrom(next)) return true;
    }
    mark[i] = 2;
    path.pop_back();
    return false;
  };
  for (size_t i = 0; i < plan.applications.size() && i < items.size(); ++i) {
    if (mark[i] == 0 && cycleFrom(i)) return;
  }
}

model::StrategyRef readPlanStrategy(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kStrategyKeys, problems);
  model::StrategyRef out;
  if (auto v = m.name("script", Need::kOptional)) out.script = *v;
  if (m.mapping("params", Need::kOptional) != nullptr) {
    if (auto v = m.json("params", Need::kOptional)) out.params = std::move(*v);
  }
  return out;
}

model::PlanPlacement readPlacement(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kPlacementKeys, problems);
  model::PlanPlacement out;
  if (auto v = m.integer("max_per_node", Need::kOptional, kMaxPerNode)) out.max_per_node = static_cast<int>(*v);
  if (auto v = m.boolean("bin_pack", Need::kOptional)) out.bin_pack = *v;
  return out;
}

// A plan's `traffic:` (docs/manifests.md#traffic). Whether another plan or program holds
// the ports is the ledger's to say (it sees the other plans); the shape is checked here.
model::PlanTraffic readTraffic(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kTrafficKeys, problems);
  model::PlanTraffic out;
  auto address = [&](std::string_view key, Need need, std::string& into) {
    if (auto v = m.string(key, need)) {
      if (std::string problem = model::trafficAddressProblem(*v); !problem.empty()) {
        problems.add(*m.get(key), m.field(key), problem);
      } else {
        into = *v;
      }
    }
  };
  address("listen", Need::kRequired, out.listen);
  address("preview_listen", Need::kOptional, out.preview_listen);
  if (!out.listen.empty() && !out.preview_listen.empty() &&
      out.listen.substr(out.listen.rfind(':')) == out.preview_listen.substr(out.preview_listen.rfind(':'))) {
    problems.add(*m.get("preview_listen"), m.field("preview_listen"),
                 "must use another port than listen (" + out.listen + ")");
  }
  if (const YamlNode* v = m.get("health")) {
    MapReader health(*v, m.field("health"), kTrafficHealthKeys, problems);
    if (auto p = health.string("path", Need::kRequired)) {
      if (p->starts_with("/"))
        out.health_path = *p;
      else
        problems.add(*health.get("path"), health.field("path"), "must start with '/'");
    }
  }
  forEachItem(m.sequence("header_routes", Need::kOptional), m.field("header_routes"), problems,
              [&](const YamlNode& item, const std::string& field) {
                MapReader route(item, field, kHeaderRouteKeys, problems);
                model::HeaderRoute r;
                if (auto h = route.string("header", Need::kRequired)) {
                  if (h->empty() || h->find_first_of(" :\t\r\n") != std::string::npos) {
                    problems.add(*route.get("header"), route.field("header"), "must be a header name");
                  }
                  r.header = *h;
                }
                if (auto v = route.string("value", Need::kRequired)) r.value = *v;
                out.header_routes.push_back(std::move(r));
              });
  if (auto v = m.number("drain_seconds", Need::kOptional,
                        Bounds{model::kMinDrainSeconds, model::kMaxDrainSeconds})) {
    out.drain_seconds = *v;
  }
  if (auto v = m.integer("max_connections", Need::kOptional, Bounds{1, model::kMaxServerConnections})) {
    out.max_connections = static_cast<int>(*v);
  }
  if (auto v = m.integer("port", Need::kOptional, Bounds{1, 65535})) out.port = static_cast<int>(*v);
  return out;
}

// traffic.port names a TCP port one of the plan's applications declares.
void checkTrafficPort(const model::Plan& plan, const YamlNode& traffic, const std::string& field, Problems& problems) {
  if (plan.traffic.port == 0) return;
  for (const auto& app : plan.applications) {
    for (const auto& port : app.ports) {
      if (port.port == plan.traffic.port && (port.protocol.empty() || port.protocol == "TCP")) return;
    }
  }
  const auto* entry = findEntry(traffic, kTrafficKeys, "port");
  if (entry == nullptr) return;
  problems.add(entry->second, childPath(field, entry->first.scalar),
               "must be a TCP port one of the plan's applications declares");
}

model::Plan readPlan(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kPlanKeys, problems);
  model::Plan out;
  readMeta(m, out.meta);
  if (auto v = m.name("name", Need::kRequired)) out.name = *v;
  if (auto v = m.name("namespace", Need::kRequired)) out.ns = *v;
  if (auto v = m.name("service_name", Need::kRequired)) out.service_name = *v;
  forEachItem(m.sequence("matching_capabilities", Need::kOptional), m.field("matching_capabilities"), problems,
              [&](const YamlNode& item, const std::string& field) {
                out.matching_capabilities.push_back(readCapabilityMatch(item, field, problems));
              });
  // Ports are unique across the plan: one runtime instance maps each declared port once.
  DuplicateCheck ports(problems, "port");
  DuplicateCheck payloads(problems, "payload name");
  if (const YamlNode* list = m.sequence("applications", Need::kRequired)) {
    if (list->items.empty()) problems.add(*list, m.field("applications"), "must hold at least one application");
    std::vector<const YamlNode*> items;
    std::vector<std::string> fields;
    forEachItem(list, m.field("applications"), problems, [&](const YamlNode& item, const std::string& field) {
      out.applications.push_back(readApplication(item, field, ports, problems));
      items.push_back(&item);
      fields.push_back(field);
      if (const auto* e = findEntry(item, kApplicationKeys, "payload_name")) {
        payloads.see(out.applications.back().payload_name, e->second, childPath(field, e->first.scalar));
      }
    });
    checkDependencies(out, items, fields, problems);
    checkPods(out, items, fields, problems);
  }
  if (const YamlNode* v = m.get("strategy")) out.strategy = readPlanStrategy(*v, m.field("strategy"), problems);
  if (const YamlNode* v = m.get("approval")) {
    MapReader approval(*v, m.field("approval"), kApprovalKeys, problems);
    forEachItem(approval.sequence("policies", Need::kOptional), approval.field("policies"), problems,
                [&](const YamlNode& item, const std::string& field) {
                  if (auto name = readName(item, field, problems)) out.approval_policies.push_back(*name);
                });
    if (auto n = approval.integer("min_approvals", Need::kOptional, kMinApprovals)) {
      out.approval_min_approvals = static_cast<int>(*n);
    }
  }
  if (const YamlNode* v = m.get("placement")) out.placement = readPlacement(*v, m.field("placement"), problems);
  if (const YamlNode* v = m.get("traffic")) {
    out.traffic = readTraffic(*v, m.field("traffic"), problems);
    checkTrafficPort(out, *v, m.field("traffic"), problems);
  }
  return out;
}

model::PayloadCoordinates readPayloadCoordinates(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kPayloadCoordinatesKeys, problems);
  model::PayloadCoordinates out;
  if (auto v = m.name("payload_name", Need::kRequired)) out.payload_name = *v;
  if (const YamlNode* v = m.mapping("coordinates", Need::kRequired)) {
    if (v->entries.empty()) problems.add(*v, m.field("coordinates"), "must not be empty");
    if (auto j = m.json("coordinates", Need::kRequired)) out.coordinates = std::move(*j);
  }
  return out;
}

Json readDeploymentStrategy(const YamlNode& node, const std::string& path, Problems& problems) {
  MapReader m(node, path, kStrategyKeys, problems);
  Json out = Json::object();
  if (auto v = m.name("script", Need::kOptional)) out["script"] = *v;
  if (m.mapping("params", Need::kOptional) != nullptr) {
    if (auto v = m.json("params", Need::kOptional)) out["params"] = std::move(*v);
  }
  return out;
}

// `impliedPlan`, when given, is the plan the request is addressed to: the plan key may
// then be left out, and must name that plan when present.
model::Deployment readDeployment(const YamlNode& node, const std::string& path, Problems& problems,
                                 const std::string* impliedPlan) {
  MapReader m(node, path, kDeploymentKeys, problems);
  model::Deployment out;
  readMeta(m, out.meta);
  if (auto v = m.name("plan", impliedPlan != nullptr ? Need::kOptional : Need::kRequired)) {
    out.plan = *v;
    if (impliedPlan != nullptr && *v != *impliedPlan) {
      problems.add(*m.get("plan"), m.field("plan"),
                   "is \"" + *v + "\" but the request is for plan \"" + *impliedPlan + "\"");
    }
  } else if (impliedPlan != nullptr && m.get("plan") == nullptr) {
    out.plan = *impliedPlan;
  }
  if (auto v = m.name("deployment_id", Need::kRequired)) out.deployment_id = *v;
  DuplicateCheck payloads(problems, "payload name");
  if (const YamlNode* list = m.sequence("payload_coordinates", Need::kRequired)) {
    if (list->items.empty()) problems.add(*list, m.field("payload_coordinates"), "must hold at least one payload");
    forEachItem(list, m.field("payload_coordinates"), problems, [&](const YamlNode& item, const std::string& field) {
      out.payload_coordinates.push_back(readPayloadCoordinates(item, field, problems));
      if (const auto* e = findEntry(item, kPayloadCoordinatesKeys, "payload_name")) {
        payloads.see(out.payload_coordinates.back().payload_name, e->second, childPath(field, e->first.scalar));
      }
    });
  }
  if (auto v = m.integer("instance_count", Need::kRequired, kInstanceCount)) out.instance_count = *v;
  if (const YamlNode* v = m.get("strategy")) out.strategy = readDeploymentStrategy(*v, m.field("strategy"), problems);
  return out;
}

model::Deployment readListedDeployment(const YamlNode& node, const std::string& path, Problems& problems) {
  return readDeployment(node, path, problems, nullptr);
}

// --- documents ------------------------------------------------------------------------------

// `record` read from `node` at `path`, with the places of the keys recorded since
// `firstPlace` (Problems::places), each by its canonical path below the record.
template <class Record>
Sourced<Record> sourced(Record record, const YamlNode& node, const std::string& path, size_t firstPlace,
                        const Problems& problems) {
  Sourced<Record> out{std::move(record), problems.location(node), problems.canonicalPath(path)};
  const auto& places = problems.places();
  const size_t prefix = out.path.empty() ? 0 : out.path.size() + 1;  // "plans[1]."
  for (size_t i = firstPlace; i < places.size(); ++i) {
    const auto& [field, place] = places[i];
    if (field.size() > prefix) out.fields.emplace(field.substr(prefix), place);
  }
  return out;
}

// Reads every item of one top-level list, reporting names defined twice in the manifest.
template <class Record, class ReadFn, class KeyFn>
void readList(const YamlNode* list, const std::string& field, const KeyTable& keys, std::string_view idKey, ReadFn read,
              KeyFn key, DuplicateCheck& duplicates, std::vector<Sourced<Record>>& out, Problems& problems) {
  forEachItem(list, field, problems, [&](const YamlNode& item, const std::string& path) {
    const size_t firstPlace = problems.places().size();
    Record record = read(item, path, problems);
    if (const auto* e = findEntry(item, keys, idKey))
      duplicates.see(key(record), e->second, childPath(path, e->first.scalar));
    out.push_back(sourced(std::move(record), item, path, firstPlace, problems));
  });
}

std::string nameOf(const auto& record) { return record.name; }
std::string deploymentKey(const model::Deployment& d) {
  return d.plan.empty() || d.deployment_id.empty() ? "" : d.plan + "/" + d.deployment_id;
}

struct ManifestBuilder {
  explicit ManifestBuilder(Problems& p)
      : problems(p),
        capabilityNames(p, "capability name"),
        clusterNames(p, "cluster name"),
        nodeNames(p, "node name"),
        planNames(p, "plan name"),
        deploymentIds(p, "deployment (plan/deployment_id)") {}

  void readDocument(const YamlNode& doc) {
    if (doc.kind == Kind::kMapping && mentionsAny(doc, kManifestKeys)) {
      MapReader m(doc, "", kManifestKeys, problems);
      readList(m.sequence("capabilities", Need::kOptional), m.field("capabilities"), kCapabilityKeys, "name",
               readCapability, nameOf<model::Capability>, capabilityNames, manifest.capabilities, problems);
      readList(m.sequence("clusters", Need::kOptional), m.field("clusters"), kClusterKeys, "name", readCluster,
               nameOf<model::Cluster>, clusterNames, manifest.clusters, problems);
      readList(m.sequence("nodes", Need::kOptional), m.field("nodes"), kNodeKeys, "name", readNode, nameOf<model::Node>,
               nodeNames, manifest.nodes, problems);
      readList(m.sequence("plans", Need::kOptional), m.field("plans"), kPlanKeys, "name", readPlan, nameOf<model::Plan>,
               planNames, manifest.plans, problems);
      readList(m.sequence("deployments", Need::kOptional), m.field("deployments"), kDeploymentKeys, "deployment_id",
               readListedDeployment, deploymentKey, deploymentIds, manifest.deployments, problems);
    } else if (doc.kind == Kind::kMapping &&
               mentionsAny(doc, kDeploymentKeys, {"plan", "deployment_id", "payload_coordinates", "instance_count"})) {
      readOne<model::Deployment>(doc, kDeploymentKeys, "deployment_id", readListedDeployment, deploymentKey,
                                 deploymentIds, manifest.deployments);
    } else if (doc.kind == Kind::kMapping &&
               mentionsAny(doc, kPlanKeys, {"namespace", "service_name", "matching_capabilities", "applications"})) {
      readOne<model::Plan>(doc, kPlanKeys, "name", readPlan, nameOf<model::Plan>, planNames, manifest.plans);
    } else {
      problems.add(doc, "",
                   "expected a mapping with capabilities, clusters, nodes, plans or deployments lists, a plan "
                   "document or a deployment document; got " +
                       describe(doc));
    }
  }

  template <class Record, class ReadFn, class KeyFn>
  void readOne(const YamlNode& doc, const KeyTable& keys, std::string_view idKey, ReadFn read, KeyFn key,
               DuplicateCheck& duplicates, std::vector<Sourced<Record>>& out) {
    const size_t firstPlace = problems.places().size();
    Record record = read(doc, "", problems);
    if (const auto* e = findEntry(doc, keys, idKey)) duplicates.see(key(record), e->second, e->first.scalar);
    out.push_back(sourced(std::move(record), doc, "", firstPlace, problems));
  }

  Problems& problems;
  Manifest manifest;
  DuplicateCheck capabilityNames, clusterNames, nodeNames, planNames, deploymentIds;
};

void reportEmpty(Problems& problems) { problems.add(YamlNode(), "", "empty document: nothing to read"); }

// One record from a single-document body; `read(doc, path, problems)` reads it.
template <class Record, class ReadFn>
Result<Record> parseOne(std::string_view text, const std::string& source, ReadFn read) {
  TIDE_ASSIGN_OR_RETURN(std::vector<YamlNode> docs, parseYamlDocuments(text, source));
  Problems problems(source);
  if (docs.empty()) {
    reportEmpty(problems);
    return problems.toStatus();
  }
  if (docs.size() > 1) {
    problems.add(docs[1], "", "expected one document, got " + std::to_string(docs.size()));
    return problems.toStatus();
  }
  Record record = read(docs.front(), "", problems);
  if (!problems.empty()) return problems.toStatus();
  return record;
}

}  // namespace

Result<ManifestReading> readManifest(std::string_view text, const std::string& source) {
  TIDE_ASSIGN_OR_RETURN(std::vector<YamlNode> docs, parseYamlDocuments(text, source));
  Problems problems(source);
  if (docs.empty()) {
    reportEmpty(problems);
    return ManifestReading{{}, problems.details()};
  }
  ManifestBuilder builder(problems);
  for (const auto& doc : docs) builder.readDocument(doc);
  if (problems.empty() && builder.manifest.empty()) {
    problems.add(docs.front(), "", "the manifest defines no capabilities, clusters, nodes, plans or deployments");
  }
  return ManifestReading{std::move(builder.manifest), problems.details()};
}

Result<Manifest> parseManifest(std::string_view text, const std::string& source) {
  TIDE_ASSIGN_OR_RETURN(ManifestReading reading, readManifest(text, source));
  if (!reading.problems.empty()) return problemsStatus(std::move(reading.problems));
  return std::move(reading.manifest);
}

Result<Manifest> loadManifestFile(const std::string& path) {
  TIDE_ASSIGN_OR_RETURN(std::string text, readInputFile(path));
  return parseManifest(text, path);
}

Result<model::Capability> parseCapability(std::string_view text, const std::string& source) {
  return parseOne<model::Capability>(text, source, readCapability);
}
Result<model::Cluster> parseCluster(std::string_view text, const std::string& source) {
  return parseOne<model::Cluster>(text, source, readCluster);
}
Result<model::Node> parseNode(std::string_view text, const std::string& source) {
  return parseOne<model::Node>(text, source, readNode);
}
Result<model::Plan> parsePlan(std::string_view text, const std::string& source) {
  return parseOne<model::Plan>(text, source, readPlan);
}
Result<model::Deployment> parseDeployment(std::string_view text, const std::string& source) {
  return parseOne<model::Deployment>(text, source, readListedDeployment);
}
Result<model::Deployment> parseDeploymentForPlan(std::string_view text, const std::string& source,
                                                 const std::string& plan) {
  return parseOne<model::Deployment>(text, source,
                                     [&](const YamlNode& doc, const std::string& path, Problems& problems) {
                                       return readDeployment(doc, path, problems, &plan);
                                     });
}

}  // namespace tide::config
