#include "host/agent/desired_state.h"

#include <exception>

namespace tide::agent {
namespace {

using model::Json;

// Reads the document's fields, throwing nlohmann's type errors; parseDesiredState turns them
// into a Status naming the field being read.
class Reader {
 public:
  explicit Reader(std::string node) : node_(std::move(node)) {}

  DesiredState read(const Json& document) {
    DesiredState state;
    field_ = "node";
    if (document.at("node").get<std::string>() != node_) {
      throw std::invalid_argument("is \"" + document.at("node").get<std::string>() + "\", not this agent's node " + node_);
    }
    field_ = "epoch";
    state.version.epoch = document.at("epoch").get<int64_t>();
    field_ = "revision";
    state.version.revision = document.at("revision").get<int64_t>();
    const Json& instances = array(document, "instances");
    for (size_t i = 0; i < instances.size(); ++i) {
      state.instances.push_back(instance(instances[i], "instances[" + std::to_string(i) + "]"));
    }
    const Json& volumes = array(document, "volumes");
    for (size_t i = 0; i < volumes.size(); ++i) {
      state.volumes.push_back(volume(volumes[i], "volumes[" + std::to_string(i) + "]"));
    }
    field_ = "logs";
    if (document.contains("logs")) state.logs = document.at("logs").get<std::vector<std::string>>();
    return state;
  }

  const std::string& field() const { return field_; }

 private:
  // The array under `key`; an absent key is an empty array.
  const Json& array(const Json& object, const char* key) {
    static const Json kEmpty = Json::array();
    field_ = key;
    if (!object.contains(key)) return kEmpty;
    const Json& value = object.at(key);
    if (!value.is_array()) throw std::invalid_argument("must be an array");
    return value;
  }

  DesiredInstance instance(const Json& entry, const std::string& at) {
    DesiredInstance out;
    drivers::RuntimeSpec& spec = out.spec;
    field_ = at + ".id";
    spec.id = entry.at("id").get<std::string>();
    if (spec.id.empty()) throw std::invalid_argument("must not be empty");
    spec.node = node_;
    field_ = at + ".meta_instance";
    spec.meta_instance = entry.value("meta_instance", "");
    field_ = at + ".payload_name";
    spec.payload_name = entry.value("payload_name", "");
    field_ = at + ".want";
    const std::string want = entry.at("want").get<std::string>();
    if (want != "running" && want != "stopped") throw std::invalid_argument("must be running or stopped");
    out.want_running = want == "running";
    field_ = at + ".coordinates";
    spec.coordinates = entry.at("coordinates");
    if (!spec.coordinates.is_object()) throw std::invalid_argument("must be an object");
    field_ = at + ".ports";
    spec.ports = entry.value("ports", std::vector<model::Port>{});
    field_ = at + ".resources";
    spec.resources = entry.value("resources", model::Resources{});
    const Json& volumes = array(entry, "volumes");
    for (size_t i = 0; i < volumes.size(); ++i) {
      spec.volumes.push_back(volume(volumes[i], at + ".volumes[" + std::to_string(i) + "]"));
    }
    field_ = at + ".health_check";
    if (entry.contains("health_check") && !entry.at("health_check").is_null()) {
      spec.health_check = entry.at("health_check").get<model::HealthCheck>();
    }
    return out;
  }

  drivers::VolumeSpec volume(const Json& entry, const std::string& at) {
    drivers::VolumeSpec out;
    field_ = at + ".id";
    out.id = entry.at("id").get<std::string>();
    out.node = node_;
    field_ = at + ".storage_class";
    out.storage_class = entry.value("storage_class", "");
    field_ = at + ".capacity_gib";
    out.capacity_gib = entry.value("capacity_gib", 0.0);
    field_ = at + ".mount_path";
    out.mount_path = entry.value("mount_path", "");
    return out;
  }

  const std::string node_;
  std::string field_;
};

}  // namespace

Result<DesiredState> parseDesiredState(const model::Json& document, const std::string& node) {
  if (!document.is_object()) return Status::invalidArgument("the desired state is not a JSON object");
  Reader reader(node);
  try {
    return reader.read(document);
  } catch (const std::exception& e) {
    std::string problem = e.what();
    if (dynamic_cast<const Json::out_of_range*>(&e) != nullptr) problem = "is missing";
    if (dynamic_cast<const Json::type_error*>(&e) != nullptr) problem = "has the wrong type";
    return Status::invalidArgument("bad desired state: " + reader.field() + ": " + problem,
                                   {{reader.field(), problem, ""}});
  }
}

}  // namespace tide::agent
