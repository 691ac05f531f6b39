#include "drivers/container/podman.h"

#include <sstream>

#include <nlohmann/json.hpp>

namespace tide::drivers {
namespace {

using nlohmann::json;

// podman's output kept: inspect answers ~1 KiB per container.
constexpr size_t kMaxOutput = size_t{64} << 20;

// One line per container, only what ContainerFacts holds: `podman inspect` prints ~10 KiB a
// container without a format.
constexpr const char* kInspectFormat = R"({"id":{{json .ID}},"name":{{json .Name}},"state":{{json .State}},)"
                                       R"("ports":{{json .HostConfig.PortBindings}},"labels":{{json .Config.Labels}}})";

std::string text(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

int whole(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int>() : 0;
}

std::map<std::string, std::string> labelsOf(const json& labels) {
  std::map<std::string, std::string> out;
  if (!labels.is_object()) return out;
  for (const auto& [key, value] : labels.items()) {
    if (value.is_string()) out[key] = value.get<std::string>();
  }
  return out;
}

// inspect's {"8080/tcp": [{"HostIp": "127.0.0.1", "HostPort": "31998"}]} → {"tcp/8080": 31998}.
std::map<std::string, int> portsFromBindings(const json& bindings) {
  std::map<std::string, int> out;
  if (!bindings.is_object()) return out;
  for (const auto& [declared, hosts] : bindings.items()) {
    const size_t slash = declared.find('/');
    if (slash == std::string::npos || !hosts.is_array() || hosts.empty()) continue;
    const std::string host_port = text(hosts.front(), "HostPort");
    if (host_port.empty() || host_port.size() > 5 || host_port.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    out[declared.substr(slash + 1) + "/" + declared.substr(0, slash)] = std::stoi(host_port);
  }
  return out;
}

ContainerFacts factsFromInspect(const json& line) {
  ContainerFacts facts;
  facts.id = text(line, "id");
  facts.name = text(line, "name");
  static const json kNone = json::object();
  auto found = line.find("state");
  const json& state = found != line.end() && found->is_object() ? *found : kNone;
  facts.state = text(state, "Status");
  facts.exit_code = whole(state, "ExitCode");
  auto oom = state.find("OOMKilled");
  facts.oom_killed = oom != state.end() && oom->is_boolean() && oom->get<bool>();
  facts.error = text(state, "Error");
  if (auto health = state.find("Health"); health != state.end() && health->is_object()) {
    facts.health = text(*health, "Status");
  }
  if (auto labels = line.find("labels"); labels != line.end()) facts.labels = labelsOf(*labels);
  if (auto ports = line.find("ports"); ports != line.end()) facts.ports = portsFromBindings(*ports);
  return facts;
}

ContainerFacts factsFromPs(const json& entry) {
  ContainerFacts facts;
  facts.id = text(entry, "Id");
  if (auto names = entry.find("Names");
      names != entry.end() && names->is_array() && !names->empty() && names->front().is_string()) {
    facts.name = names->front().get<std::string>();
  }
  facts.state = text(entry, "State");
  facts.exit_code = whole(entry, "ExitCode");
  if (auto labels = entry.find("Labels"); labels != entry.end()) facts.labels = labelsOf(*labels);
  if (auto ports = entry.find("Ports"); ports != entry.end() && ports->is_array()) {
    for (const json& port : *ports) {
      if (!port.is_object()) continue;
      const int host_port = whole(port, "host_port");
      if (host_port > 0)
        facts.ports[text(port, "protocol") + "/" + std::to_string(whole(port, "container_port"))] = host_port;
    }
  }
  return facts;
}

bool isWarning(const std::string& line) { return line.find("level=warning") != std::string::npos; }

}  // namespace

Result<CommandOutcome> Podman::call(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                                    const std::vector<std::string>& env) const {
  CommandRequest request;
  request.argv.reserve(args.size() + 1);
  request.argv.push_back(binary_);
  request.argv.insert(request.argv.end(), args.begin(), args.end());
  request.env = inheritedEnvironment(env);
  request.timeout = timeout;
  request.max_output = kMaxOutput;
  Result<CommandOutcome> ran = runCommand(request);
  if (!ran.isOk()) return Status::unavailable("podman: " + ran.status().message());
  if (ran->ending != CommandOutcome::Ending::kExited) {
    return Status::unavailable("podman " + (args.empty() ? std::string() : args.front()) + ": " +
                               ran->endText(timeout));
  }
  return ran;
}

std::string Podman::complaint(const CommandOutcome& outcome) {
  std::istringstream lines(outcome.errors);
  std::string error, other;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Error: ")) {
      error = line.substr(7);
    } else if (!line.empty() && !isWarning(line)) {
      other = line;
    }
  }
  if (!error.empty()) return error;
  if (!other.empty()) return other;
  return outcome.endText(std::chrono::microseconds(0));
}

bool Podman::saysNoSuchContainer(const CommandOutcome& outcome) {
  return outcome.errors.find("no such container") != std::string::npos;
}

Result<std::vector<ContainerFacts>> Podman::inspect(const std::vector<std::string>& names) const {
  std::vector<ContainerFacts> found;
  if (names.empty()) return found;
  std::vector<std::string> args = {"container", "inspect", "--format", kInspectFormat};
  args.insert(args.end(), names.begin(), names.end());
  TIDE_ASSIGN_OR_RETURN(CommandOutcome outcome, call(args));
  // A missing name fails the call (exit 125) after the others were printed.
  if (!outcome.succeeded() && !saysNoSuchContainer(outcome)) {
    return Status::unavailable("podman container inspect: " + complaint(outcome));
  }
  std::istringstream lines(outcome.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object()) return Status::unavailable("podman container inspect printed what is not JSON: " + line);
    found.push_back(factsFromInspect(parsed));
  }
  return found;
}

Result<std::vector<ContainerFacts>> Podman::listLabelled(const std::vector<std::string>& labels) const {
  std::vector<std::string> args = {"ps", "--all", "--format", "json"};
  for (const std::string& label : labels) args.insert(args.end(), {"--filter", "label=" + label});
  TIDE_ASSIGN_OR_RETURN(CommandOutcome outcome, call(args));
  if (!outcome.succeeded()) return Status::unavailable("podman ps: " + complaint(outcome));
  json parsed = json::parse(outcome.output, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_null()) parsed = json::array();  // an empty answer
  if (!parsed.is_array()) return Status::unavailable("podman ps printed what is not a JSON list");
  std::vector<ContainerFacts> found;
  for (const json& entry : parsed) {
    if (entry.is_object()) found.push_back(factsFromPs(entry));
  }
  return found;
}

Result<bool> Podman::imageExists(const std::string& image) const {
  TIDE_ASSIGN_OR_RETURN(CommandOutcome outcome, call({"image", "exists", image}));
  if (outcome.succeeded()) return true;
  if (outcome.exitCode() == 1) return false;
  if (outcome.errors.find("invalid reference format") != std::string::npos) {
    return Status::invalidArgument("image \"" + image + "\": " + complaint(outcome));
  }
  return Status::unavailable("podman image exists: " + complaint(outcome));
}

Status Podman::removeForced(const std::vector<std::string>& names, std::chrono::milliseconds grace) const {
  const auto seconds = std::chrono::ceil<std::chrono::seconds>(grace).count();
  // --ignore: without it podman 4.3 removes none of the names, and says nothing, when one is missing.
  std::vector<std::string> args = {"rm", "--force", "--ignore", "--time", std::to_string(seconds)};
  args.insert(args.end(), names.begin(), names.end());
  TIDE_ASSIGN_OR_RETURN(CommandOutcome outcome, call(args, timeout_ + grace));
  if (outcome.succeeded() || saysNoSuchContainer(outcome)) return Status::ok();
  return Status::unavailable("podman rm: " + complaint(outcome));
}

Status Podman::info() const {
  TIDE_ASSIGN_OR_RETURN(CommandOutcome outcome, call({"info", "--format", "{{.Host.OCIRuntime.Name}}"}));
  if (outcome.succeeded()) return Status::ok();
  return Status::unavailable("podman info: " + complaint(outcome));
}

}  // namespace tide::drivers
