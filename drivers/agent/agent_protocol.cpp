#include "drivers/agent/agent_protocol.h"

#include <set>

namespace tide::drivers {
namespace {

const std::set<std::string> kReportedStates = {"PENDING", "STARTING", "RUNNING", "STOPPED", "EXITED", "UNKNOWN"};

// Reads fields of one JSON object, collecting a detail per bad field instead of throwing.
class FieldReader {
 public:
  FieldReader(const Json& object, std::string path, std::vector<ErrorDetail>& problems)
      : object_(object), path_(std::move(path)), problems_(problems) {
    if (!object_.is_object()) bad("", "must be an object");
  }

  std::string field(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const Json* find(const std::string& key) const {
    if (!object_.is_object()) return nullptr;
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  void bad(const std::string& key, const std::string& problem) const {
    problems_.push_back({key.empty() ? path_ : field(key), problem, ""});
  }

  std::optional<std::string> string(const std::string& key, bool required) const {
    const Json* value = find(key);
    if (value == nullptr) {
      if (required) bad(key, "is required");
      return std::nullopt;
    }
    if (!value->is_string()) {
      bad(key, "must be a string");
      return std::nullopt;
    }
    return value->get<std::string>();
  }
  std::optional<int64_t> integer(const std::string& key, bool required, int64_t min = 0) const {
    const Json* value = find(key);
    if (value == nullptr) {
      if (required) bad(key, "is required");
      return std::nullopt;
    }
    if (!value->is_number_integer() || value->get<int64_t>() < min) {
      bad(key, "must be a whole number of at least " + std::to_string(min));
      return std::nullopt;
    }
    return value->get<int64_t>();
  }
  std::optional<double> number(const std::string& key, bool required) const {
    const Json* value = find(key);
    if (value == nullptr) {
      if (required) bad(key, "is required");
      return std::nullopt;
    }
    if (!value->is_number() || value->get<double>() < 0) {
      bad(key, "must be a number of at least 0");
      return std::nullopt;
    }
    return value->get<double>();
  }
  std::optional<bool> boolean(const std::string& key) const {
    const Json* value = find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_boolean()) {
      bad(key, "must be true or false");
      return std::nullopt;
    }
    return value->get<bool>();
  }
  // The array under `key` (empty when absent).
  const Json* array(const std::string& key) const {
    const Json* value = find(key);
    if (value != nullptr && !value->is_array()) {
      bad(key, "must be an array");
      return nullptr;
    }
    return value;
  }
  const Json* object(const std::string& key) const {
    const Json* value = find(key);
    if (value != nullptr && !value->is_object()) {
      bad(key, "must be an object");
      return nullptr;
    }
    return value;
  }

 private:
  const Json& object_;
  std::string path_;
  std::vector<ErrorDetail>& problems_;
};

Status problemsStatus(const std::string& what, const std::vector<ErrorDetail>& problems) {
  std::string message = what + ": " + problems.front().field + " " + problems.front().message;
  if (problems.size() > 1) message += " (and " + std::to_string(problems.size() - 1) + " more)";
  return Status::invalidArgument(message, problems);
}

VolumeSpec volumeFromJson(const FieldReader& r, const std::string& node) {
  VolumeSpec volume;
  volume.node = node;
  volume.id = r.string("id", true).value_or("");
  volume.storage_class = r.string("storage_class", false).value_or("");
  volume.capacity_gib = r.number("capacity_gib", false).value_or(0);
  volume.mount_path = r.string("mount_path", false).value_or("");
  return volume;
}

DesiredInstance desiredInstanceFromJson(const FieldReader& r, const std::string& node,
                                        std::vector<ErrorDetail>& problems) {
  DesiredInstance instance;
  RuntimeSpec& spec = instance.spec;
  spec.node = node;
  spec.id = r.string("id", true).value_or("");
  spec.meta_instance = r.string("meta_instance", false).value_or("");
  spec.payload_name = r.string("payload_name", false).value_or("");
  instance.want = r.string("want", true).value_or(kWantRunning);
  if (instance.want != kWantRunning && instance.want != kWantStopped) r.bad("want", "must be running or stopped");
  if (const Json* coordinates = r.object("coordinates")) spec.coordinates = *coordinates;
  if (const Json* ports = r.array("ports")) {
    for (size_t i = 0; i < ports->size(); ++i) {
      FieldReader port((*ports)[i], r.field("ports[" + std::to_string(i) + "]"), problems);
      spec.ports.push_back({port.string("protocol", true).value_or(""),
                            static_cast<int>(port.integer("port", true, 1).value_or(0))});
    }
  }
  if (const Json* resources = r.object("resources")) {
    FieldReader res(*resources, r.field("resources"), problems);
    spec.resources = {res.number("cores", false).value_or(0), res.number("memory_gib", false).value_or(0)};
  }
  if (const Json* volumes = r.array("volumes")) {
    for (size_t i = 0; i < volumes->size(); ++i) {
      spec.volumes.push_back(
          volumeFromJson(FieldReader((*volumes)[i], r.field("volumes[" + std::to_string(i) + "]"), problems), node));
    }
  }
  if (const Json* check = r.object("health_check")) {
    try {
      spec.health_check = check->get<model::HealthCheck>();
    } catch (const Json::exception&) {
      r.bad("health_check", "is not a health check");
    }
  }
  return instance;
}

}  // namespace

Json volumeToJson(const VolumeSpec& volume) {
  return Json{{"id", volume.id},
              {"storage_class", volume.storage_class},
              {"capacity_gib", volume.capacity_gib},
              {"mount_path", volume.mount_path}};
}

Json desiredInstanceToJson(const DesiredInstance& instance) {
  const RuntimeSpec& spec = instance.spec;
  Json volumes = Json::array();
  for (const VolumeSpec& volume : spec.volumes) volumes.push_back(volumeToJson(volume));
  Json out{{"id", spec.id},
           {"meta_instance", spec.meta_instance},
           {"payload_name", spec.payload_name},
           {"want", instance.want},
           {"coordinates", spec.coordinates},
           {"ports", Json(spec.ports)},
           {"resources", Json(spec.resources)},
           {"volumes", std::move(volumes)}};
  if (spec.health_check) out["health_check"] = Json(*spec.health_check);
  return out;
}

Json desiredToJson(const DesiredDocument& document) {
  Json instances = Json::array();
  for (const DesiredInstance& instance : document.instances) instances.push_back(desiredInstanceToJson(instance));
  Json volumes = Json::array();
  for (const VolumeSpec& volume : document.volumes) volumes.push_back(volumeToJson(volume));
  return Json{{"node", document.node},
              {"epoch", document.version.epoch},
              {"revision", document.version.revision},
              {"instances", std::move(instances)},
              {"volumes", std::move(volumes)},
              {"logs", document.logs}};
}

Result<DesiredDocument> desiredFromJson(const Json& json) {
  std::vector<ErrorDetail> problems;
  FieldReader r(json, "", problems);
  DesiredDocument document;
  document.node = r.string("node", true).value_or("");
  document.version = {r.integer("epoch", true).value_or(0), r.integer("revision", true).value_or(0)};
  if (const Json* instances = r.array("instances")) {
    for (size_t i = 0; i < instances->size(); ++i) {
      FieldReader entry((*instances)[i], "instances[" + std::to_string(i) + "]", problems);
      document.instances.push_back(desiredInstanceFromJson(entry, document.node, problems));
    }
  }
  if (const Json* volumes = r.array("volumes")) {
    for (size_t i = 0; i < volumes->size(); ++i) {
      document.volumes.push_back(
          volumeFromJson(FieldReader((*volumes)[i], "volumes[" + std::to_string(i) + "]", problems), document.node));
    }
  }
  if (const Json* logs = r.array("logs")) {
    for (size_t i = 0; i < logs->size(); ++i) {
      if ((*logs)[i].is_string()) {
        document.logs.push_back((*logs)[i].get<std::string>());
      } else {
        r.bad("logs[" + std::to_string(i) + "]", "must be a string");
      }
    }
  }
  if (!problems.empty()) return problemsStatus("bad desired document", problems);
  return document;
}

Json reportToJson(const AgentReport& report) {
  Json instances = Json::array();
  for (const ReportedInstance& instance : report.instances) {
    const RuntimeStatus& status = instance.status;
    Json entry{{"id", instance.id},           {"state", status.state},         {"handle", status.handle},
               {"ports", status.ports},       {"exit_code", status.exit_code}, {"message", status.message}};
    if (status.healthy) entry["healthy"] = *status.healthy;
    instances.push_back(std::move(entry));
  }
  Json volumes = Json::array();
  for (const ReportedVolume& volume : report.volumes) {
    volumes.push_back({{"id", volume.id}, {"ready", volume.ready}, {"message", volume.message}});
  }
  Json out{{"agent_version", report.agent_version},
           {"epoch", report.epoch},
           {"applied_revision", report.applied_revision},
           {"instances", std::move(instances)},
           {"volumes", std::move(volumes)}};
  if (report.resources) out["resources"] = Json(*report.resources);
  return out;
}

Result<AgentReport> reportFromJson(const Json& json) {
  std::vector<ErrorDetail> problems;
  FieldReader r(json, "", problems);
  static const std::set<std::string> kKnown = {"agent_version", "epoch", "applied_revision", "resources", "instances",
                                               "volumes"};
  if (json.is_object()) {
    for (const auto& [key, value] : json.items()) {
      if (!kKnown.count(key)) r.bad(key, "is not a report field");
    }
  }
  AgentReport report;
  report.agent_version = r.string("agent_version", true).value_or("");
  report.epoch = r.integer("epoch", true).value_or(0);
  report.applied_revision = r.integer("applied_revision", true).value_or(0);
  if (const Json* resources = r.object("resources")) {
    FieldReader res(*resources, "resources", problems);
    report.resources = model::Resources{res.number("cores", true).value_or(0),
                                        res.number("memory_gib", true).value_or(0)};
  }
  if (const Json* instances = r.array("instances")) {
    std::set<std::string> seen;
    for (size_t i = 0; i < instances->size(); ++i) {
      FieldReader entry((*instances)[i], "instances[" + std::to_string(i) + "]", problems);
      ReportedInstance instance;
      instance.id = entry.string("id", true).value_or("");
      if (!instance.id.empty() && !seen.insert(instance.id).second) entry.bad("id", "is listed twice");
      RuntimeStatus& status = instance.status;
      status.state = entry.string("state", true).value_or("");
      if (!status.state.empty() && !kReportedStates.count(status.state)) {
        entry.bad("state", "must be RUNNING, STOPPED, EXITED, STARTING, PENDING or UNKNOWN");
      }
      status.handle = entry.string("handle", false).value_or("");
      if (const Json* ports = entry.object("ports")) {
        for (const auto& [name, port] : ports->items()) {
          if (!port.is_number_integer()) entry.bad("ports." + name, "must be a port number");
        }
        status.ports = *ports;
      }
      status.exit_code = static_cast<int>(entry.integer("exit_code", false, INT32_MIN).value_or(0));
      status.message = entry.string("message", false).value_or("");
      status.healthy = entry.boolean("healthy");
      report.instances.push_back(std::move(instance));
    }
  }
  if (const Json* volumes = r.array("volumes")) {
    for (size_t i = 0; i < volumes->size(); ++i) {
      FieldReader entry((*volumes)[i], "volumes[" + std::to_string(i) + "]", problems);
      report.volumes.push_back({entry.string("id", true).value_or(""), entry.boolean("ready").value_or(false),
                                entry.string("message", false).value_or("")});
    }
  }
  if (!problems.empty()) return problemsStatus("bad report", problems);
  return report;
}

}  // namespace tide::drivers
