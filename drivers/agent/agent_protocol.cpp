#include "drivers/agent/agent_protocol.h"

#include <cstdint>
#include <limits>
#include <set>

#include "host/core/json_reader.h"

namespace tide::drivers {
namespace {

constexpr JsonBounds kAtLeastZero{0, std::numeric_limits<double>::max()};

JsonBounds atLeast(int64_t min) { return {static_cast<double>(min), static_cast<double>(INT64_MAX)}; }

VolumeSpec volumeFromJson(const JsonReader& r, const std::string& node) {
  VolumeSpec volume;
  volume.node = node;
  volume.id = r.string("id", JsonNeed::kRequired).value_or("");
  volume.storage_class = r.string("storage_class", JsonNeed::kOptional).value_or("");
  volume.capacity_gib = r.number("capacity_gib", JsonNeed::kOptional, kAtLeastZero).value_or(0);
  volume.mount_path = r.string("mount_path", JsonNeed::kOptional).value_or("");
  return volume;
}

DesiredInstance desiredInstanceFromJson(const JsonReader& r, const std::string& node, JsonProblems& problems) {
  DesiredInstance instance;
  RuntimeSpec& spec = instance.spec;
  spec.node = node;
  spec.id = r.string("id", JsonNeed::kRequired).value_or("");
  spec.meta_instance = r.string("meta_instance", JsonNeed::kOptional).value_or("");
  spec.payload_name = r.string("payload_name", JsonNeed::kOptional).value_or("");
  instance.want = r.string("want", JsonNeed::kRequired).value_or(kWantRunning);
  if (instance.want != kWantRunning && instance.want != kWantStopped) r.bad("want", "must be running or stopped");
  if (const Json* coordinates = r.object("coordinates", JsonNeed::kOptional)) spec.coordinates = *coordinates;
  if (const Json* ports = r.array("ports", JsonNeed::kOptional)) {
    for (size_t i = 0; i < ports->size(); ++i) {
      JsonReader port((*ports)[i], r.field("ports[" + std::to_string(i) + "]"), problems);
      spec.ports.push_back({port.string("protocol", JsonNeed::kRequired).value_or(""),
                            static_cast<int>(port.integer("port", JsonNeed::kRequired, atLeast(1)).value_or(0))});
    }
  }
  if (const Json* resources = r.object("resources", JsonNeed::kOptional)) {
    JsonReader res(*resources, r.field("resources"), problems);
    spec.resources = {res.number("cores", JsonNeed::kOptional, kAtLeastZero).value_or(0),
                      res.number("memory_gib", JsonNeed::kOptional, kAtLeastZero).value_or(0)};
  }
  if (const Json* volumes = r.array("volumes", JsonNeed::kOptional)) {
    for (size_t i = 0; i < volumes->size(); ++i) {
      spec.volumes.push_back(
          volumeFromJson(JsonReader((*volumes)[i], r.field("volumes[" + std::to_string(i) + "]"), problems), node));
    }
  }
  if (const Json* check = r.object("health_check", JsonNeed::kOptional)) {
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
  JsonProblems problems;
  JsonReader r(json, "", problems);
  DesiredDocument document;
  document.node = r.string("node", JsonNeed::kRequired).value_or("");
  document.version = {r.integer("epoch", JsonNeed::kRequired, atLeast(0)).value_or(0),
                      r.integer("revision", JsonNeed::kRequired, atLeast(0)).value_or(0)};
  if (const Json* instances = r.array("instances", JsonNeed::kOptional)) {
    for (size_t i = 0; i < instances->size(); ++i) {
      JsonReader entry((*instances)[i], "instances[" + std::to_string(i) + "]", problems);
      document.instances.push_back(desiredInstanceFromJson(entry, document.node, problems));
    }
  }
  if (const Json* volumes = r.array("volumes", JsonNeed::kOptional)) {
    for (size_t i = 0; i < volumes->size(); ++i) {
      document.volumes.push_back(
          volumeFromJson(JsonReader((*volumes)[i], "volumes[" + std::to_string(i) + "]", problems), document.node));
    }
  }
  if (const Json* logs = r.array("logs", JsonNeed::kOptional)) {
    for (size_t i = 0; i < logs->size(); ++i) {
      if ((*logs)[i].is_string()) {
        document.logs.push_back((*logs)[i].get<std::string>());
      } else {
        r.bad("logs[" + std::to_string(i) + "]", "must be a string");
      }
    }
  }
  if (!problems.empty()) return problems.toStatus("bad desired document");
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
  JsonProblems problems;
  JsonReader r(json, "", problems);
  static const std::set<std::string> kKnown = {"agent_version", "epoch", "applied_revision", "resources", "instances",
                                               "volumes"};
  if (json.is_object()) {
    for (const auto& [key, value] : json.items()) {
      if (!kKnown.count(key)) r.bad(key, "is not a report field");
    }
  }
  AgentReport report;
  report.agent_version = r.string("agent_version", JsonNeed::kRequired).value_or("");
  report.epoch = r.integer("epoch", JsonNeed::kRequired, atLeast(0)).value_or(0);
  report.applied_revision = r.integer("applied_revision", JsonNeed::kRequired, atLeast(0)).value_or(0);
  if (const Json* resources = r.object("resources", JsonNeed::kOptional)) {
    JsonReader res(*resources, "resources", problems);
    report.resources = model::Resources{res.number("cores", JsonNeed::kRequired, kAtLeastZero).value_or(0),
                                        res.number("memory_gib", JsonNeed::kRequired, kAtLeastZero).value_or(0)};
  }
  if (const Json* instances = r.array("instances", JsonNeed::kOptional)) {
    std::set<std::string> seen;
    for (size_t i = 0; i < instances->size(); ++i) {
      JsonReader entry((*instances)[i], "instances[" + std::to_string(i) + "]", problems);
      ReportedInstance instance;
      instance.id = entry.string("id", JsonNeed::kRequired).value_or("");
      if (!instance.id.empty() && !seen.insert(instance.id).second) entry.bad("id", "is listed twice");
      RuntimeStatus& status = instance.status;
      // An empty state says nothing: UNKNOWN.
      const std::string state = entry.string("state", JsonNeed::kRequired).value_or("");
      if (std::optional<model::WorkloadState> reported = model::parse<model::WorkloadState>(state)) {
        status.state = *reported;
      } else if (!state.empty()) {
        entry.bad("state", "must be RUNNING, STOPPED, EXITED, STARTING, PENDING or UNKNOWN");
      }
      status.handle = entry.string("handle", JsonNeed::kOptional).value_or("");
      if (const Json* ports = entry.object("ports", JsonNeed::kOptional)) {
        for (const auto& [name, port] : ports->items()) {
          if (!port.is_number_integer()) entry.bad("ports." + name, "must be a port number");
        }
        status.ports = *ports;
      }
      status.exit_code =
          static_cast<int>(entry.integer("exit_code", JsonNeed::kOptional, atLeast(INT32_MIN)).value_or(0));
      status.message = entry.string("message", JsonNeed::kOptional).value_or("");
      status.healthy = entry.boolean("healthy", JsonNeed::kOptional);
      report.instances.push_back(std::move(instance));
    }
  }
  if (const Json* volumes = r.array("volumes", JsonNeed::kOptional)) {
    for (size_t i = 0; i < volumes->size(); ++i) {
      JsonReader entry((*volumes)[i], "volumes[" + std::to_string(i) + "]", problems);
      report.volumes.push_back({entry.string("id", JsonNeed::kRequired).value_or(""),
                                entry.boolean("ready", JsonNeed::kOptional).value_or(false),
                                entry.string("message", JsonNeed::kOptional).value_or("")});
    }
  }
  if (!problems.empty()) return problems.toStatus("bad report");
  return report;
}

}  // namespace tide::drivers
