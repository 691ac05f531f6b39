#include "drivers/application_group.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <utility>

namespace tide::drivers {
namespace {

constexpr std::string_view kHandlePrefix = "apps: ";
constexpr std::string_view kHandleSeparator = " | ";

// The runtime id an inner runtime belongs to: "17" for "17.worker" and for "17".
std::string instanceOf(const std::string& inner_id) { return inner_id.substr(0, inner_id.find('.')); }

// The payload name of an inner runtime of an instance of several ("worker" for "17.worker").
std::string applicationOf(const std::string& inner_id) {
  const size_t dot = inner_id.find('.');
  return dot == std::string::npos ? "" : inner_id.substr(dot + 1);
}

// How much a part's state says about the whole instance: the highest wins.
int weight(model::WorkloadState state) {
  switch (state) {
    case model::WorkloadState::kRunning: return 0;
    case model::WorkloadState::kPending: return 1;
    case model::WorkloadState::kStarting: return 2;
    case model::WorkloadState::kUnknown: return 3;
    case model::WorkloadState::kStopped: return 4;
    case model::WorkloadState::kExited: return 5;
  }
  return 3;
}

std::string named(const std::string& application, const std::string& message) {
  return "application '" + application + "'" + (message.empty() ? "" : ": " + message);
}

// The application whose pod `application` is in, if any: the one it joins, or itself.
const std::string& podOwner(const ApplicationSpec& application) {
  return application.pod.empty() ? application.payload_name : application.pod;
}

// One status of the instance from its parts' answers (parts[i] answered answers[i]).
RuntimeAnswer combine(const std::vector<RuntimeRef>& parts, const std::vector<RuntimeAnswer>& answers) {
  RuntimeStatus whole;
  whole.state = model::WorkloadState::kRunning;
  std::vector<std::string> handles;
  int worst = -1;
  size_t missing = 0;
  bool health_known = true;
  bool healthy = true;
  std::string unhealthy_message;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string application = applicationOf(parts[i].id);
    if (!answers[i].isOk()) {
      if (answers[i].status().code() != Code::kNotFound) return answers[i].status().withPrefix(named(application, ""));
      ++missing;
      if (worst < weight(model::WorkloadState::kExited)) {
        worst = weight(model::WorkloadState::kExited);
        whole.state = model::WorkloadState::kExited;
        whole.exit_code = -1;
        whole.message = named(application, "its runtime is gone");
      }
      continue;
    }
    const RuntimeStatus& part = *answers[i];
    handles.push_back(application + "=" + part.handle);
    for (const auto& [key, port] : part.ports.items()) whole.ports[key] = port;
    if (weight(part.state) > worst) {
      worst = weight(part.state);
      whole.state = part.state;
      whole.exit_code = part.exit_code;
      whole.message = part.state == model::WorkloadState::kRunning ? "" : named(application, part.message);
    }
    if (!part.healthy) {
      health_known = false;
    } else if (!*part.healthy && healthy) {
      healthy = false;
      unhealthy_message = named(application, part.message.empty() ? "unhealthy, says the driver" : part.message);
    }
  }
  if (missing == parts.size()) return Status::notFound("no application of the instance runs");
  whole.handle = std::string(kHandlePrefix);
  for (size_t i = 0; i < handles.size(); ++i) whole.handle += (i ? std::string(kHandleSeparator) : "") + handles[i];
  if (health_known) {
    whole.healthy = healthy;
    if (!healthy && whole.state == model::WorkloadState::kRunning) whole.message = unhealthy_message;
  }
  return whole;
}

// The parts a handle of an instance of several names, or nothing for another handle.
std::optional<std::vector<RuntimeRef>> partsFromHandle(const RuntimeRef& ref) {
  if (ref.handle.rfind(kHandlePrefix, 0) != 0) return std::nullopt;
  std::vector<RuntimeRef> parts;
  std::string_view rest = std::string_view(ref.handle).substr(kHandlePrefix.size());
  while (!rest.empty()) {
    const size_t end = rest.find(kHandleSeparator);
    const std::string_view entry = rest.substr(0, end);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    parts.push_back(
        {applicationRuntimeId(ref.id, std::string(entry.substr(0, eq))), ref.node, std::string(entry.substr(eq + 1))});
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + kHandleSeparator.size());
  }
  if (parts.empty()) return std::nullopt;
  return parts;
}

}  // namespace

std::string applicationRuntimeId(const std::string& runtime_id, const std::string& payload_name) {
  return runtime_id + "." + payload_name;
}

Result<RuntimeStatus> ApplicationGroupDriver::ensure(const RuntimeSpec& spec) {
  if (spec.applications.size() <= 1) return inner_->ensure(spec);
  // The instance's pods, by the application others join: it and they, all their ports.
  std::map<std::string, PodSpec> pods;
  for (const ApplicationSpec& application : spec.applications) {
    if (!application.pod.empty()) pods[application.pod].name = applicationRuntimeId(spec.id, application.pod);
  }
  for (const ApplicationSpec& application : spec.applications) {
    if (auto pod = pods.find(podOwner(application)); pod != pods.end()) {
      pod->second.ports.insert(pod->second.ports.end(), application.ports.begin(), application.ports.end());
    }
  }
  std::vector<RuntimeRef> parts;
  std::vector<RuntimeAnswer> answers;
  Json started_ports = Json::object();  // the host ports of the applications started so far
  for (const ApplicationSpec& application : spec.applications) {
    RuntimeSpec part = spec;
    part.applications.clear();
    part.id = applicationRuntimeId(spec.id, application.payload_name);
    part.payload_name = application.payload_name;
    part.coordinates = application.coordinates;
    part.ports = application.ports;
    part.resources = application.resources;
    part.health_check = application.health_check;
    if (auto pod = pods.find(podOwner(application)); pod != pods.end()) part.pod = pod->second;
    if (!started_ports.empty()) {
      Json& env = part.coordinates["env"];
      if (env.is_null()) env = Json::object();
      if (env.is_object()) {
        for (const auto& [key, port] : started_ports.items()) {
          const std::string name = portEnvName(key);
          if (!env.contains(name)) env[name] = std::to_string(port.get<int>());
        }
      }
    }
    Result<RuntimeStatus> answer = inner_->ensure(part);
    if (!answer.isOk()) return answer.status().withPrefix(named(application.payload_name, ""));
    for (const auto& [key, port] : answer->ports.items()) {
      if (port.is_number_integer()) started_ports[key] = port;
    }
    parts.push_back({part.id, spec.node, answer->handle});
    answers.push_back(std::move(answer));
  }
  return combine(parts, answers);
}

Result<std::vector<RuntimeRef>> ApplicationGroupDriver::listedParts(const RuntimeRef& ref) {
  TIDE_ASSIGN_OR_RETURN(std::vector<RuntimeRef> listed, inner_->list());
  std::vector<RuntimeRef> parts;
  for (RuntimeRef& inner : listed) {
    if (instanceOf(inner.id) == ref.id) parts.push_back(std::move(inner));  // its own runtime too
  }
  return parts;
}

std::vector<RuntimeRef> ApplicationGroupDriver::partsOf(const RuntimeRef& ref, const std::vector<RuntimeRef>& listed) {
  if (auto parts = partsFromHandle(ref)) return *parts;
  std::vector<RuntimeRef> parts;
  if (ref.handle.empty()) {
    for (const RuntimeRef& inner : listed) {
      if (inner.id != ref.id && instanceOf(inner.id) == ref.id) parts.push_back(inner);
    }
  }
  if (parts.empty()) parts.push_back(ref);
  return parts;
}

Result<std::vector<RuntimeRef>> ApplicationGroupDriver::listIfUnrecorded(const std::vector<RuntimeRef>& refs) {
  const bool unrecorded = std::any_of(refs.begin(), refs.end(), [](const RuntimeRef& r) { return r.handle.empty(); });
  if (!unrecorded) return std::vector<RuntimeRef>{};
  return inner_->list();
}

Status ApplicationGroupDriver::endAll(const RuntimeRef& ref, bool remove) {
  // An instance of several (its handle says so, or the host never recorded one): every other
  // runtime the inner driver holds of it, recorded or not (ended last: nothing says when they
  // started), then the runtimes its handle names, in start order, which an inner driver that
  // lists only what runs would leave out.
  std::optional<std::vector<RuntimeRef>> recorded = partsFromHandle(ref);
  std::vector<RuntimeRef> parts;
  if (recorded || ref.handle.empty()) {
    TIDE_ASSIGN_OR_RETURN(parts, listedParts(ref));
    if (recorded) {
      std::erase_if(parts, [&](const RuntimeRef& listed) {
        return std::any_of(recorded->begin(), recorded->end(), [&](const RuntimeRef& p) { return p.id == listed.id; });
      });
      parts.insert(parts.end(), recorded->begin(), recorded->end());
    }
  }
  if (parts.empty()) parts.push_back(ref);
  if (parts.size() == 1 && parts.front().id == ref.id) {
    return remove ? inner_->remove(ref) : inner_->stop(ref);  // an instance of one application
  }
  // The applications started last end first: a sidecar before the application it serves.
  std::reverse(parts.begin(), parts.end());
  for (const RuntimeRef& part : parts) {
    TIDE_RETURN_IF_ERROR(
        (remove ? inner_->remove(part) : inner_->stop(part)).withPrefix(named(applicationOf(part.id), "")));
  }
  return Status::ok();
}

Status ApplicationGroupDriver::stop(const RuntimeRef& ref) { return endAll(ref, /*remove=*/false); }

Status ApplicationGroupDriver::remove(const RuntimeRef& ref) { return endAll(ref, /*remove=*/true); }

Result<RuntimeStatus> ApplicationGroupDriver::status(const RuntimeRef& ref) {
  TIDE_ASSIGN_OR_RETURN(const std::vector<RuntimeRef> listed, listIfUnrecorded({ref}));
  const std::vector<RuntimeRef> parts = partsOf(ref, listed);
  if (parts.size() == 1 && parts.front().id == ref.id) return inner_->status(ref);
  std::vector<RuntimeAnswer> answers;
  for (const RuntimeRef& part : parts) answers.push_back(inner_->status(part));
  return combine(parts, answers);
}

Result<std::vector<RuntimeAnswer>> ApplicationGroupDriver::statusAll(const std::vector<RuntimeRef>& refs) {
  // Every ref an instance of one application, as the observer asks on each pass: the inner
  // driver's batch as it is.
  const bool all_single = std::none_of(refs.begin(), refs.end(), [](const RuntimeRef& r) {
    return r.handle.empty() || r.handle.rfind(kHandlePrefix, 0) == 0;
  });
  if (all_single) return inner_->statusAll(refs);
  // One batch of the inner driver for every part of every instance, then each instance's
  // answer from its parts'.
  std::vector<RuntimeRef> inner_refs;
  std::vector<std::pair<size_t, size_t>> spans;  // refs[i]'s parts: inner_refs[first, first + count)
  bool whole_ref = true;
  TIDE_ASSIGN_OR_RETURN(const std::vector<RuntimeRef> listed, listIfUnrecorded(refs));
  for (const RuntimeRef& ref : refs) {
    std::vector<RuntimeRef> parts = partsOf(ref, listed);
    if (parts.size() != 1 || parts.front().id != ref.id) whole_ref = false;
    spans.emplace_back(inner_refs.size(), parts.size());
    for (RuntimeRef& part : parts) inner_refs.push_back(std::move(part));
  }
  if (whole_ref) return inner_->statusAll(refs);
  TIDE_ASSIGN_OR_RETURN(std::vector<RuntimeAnswer> inner_answers, inner_->statusAll(inner_refs));
  std::vector<RuntimeAnswer> answers;
  answers.reserve(refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    const auto [first, count] = spans[i];
    if (count == 1 && inner_refs[first].id == refs[i].id) {
      answers.push_back(std::move(inner_answers[first]));
      continue;
    }
    const std::vector<RuntimeRef> parts(inner_refs.begin() + first, inner_refs.begin() + first + count);
    const std::vector<RuntimeAnswer> part_answers(inner_answers.begin() + first, inner_answers.begin() + first + count);
    answers.push_back(combine(parts, part_answers));
  }
  return answers;
}

Result<std::vector<RuntimeRef>> ApplicationGroupDriver::list() {
  TIDE_ASSIGN_OR_RETURN(std::vector<RuntimeRef> listed, inner_->list());
  std::vector<RuntimeRef> out;
  std::map<std::string, size_t> seen;  // runtime id → its place in out
  for (RuntimeRef& inner : listed) {
    const std::string id = instanceOf(inner.id);
    if (id == inner.id) {
      seen.emplace(id, out.size());
      out.push_back(std::move(inner));
    } else if (seen.emplace(id, out.size()).second) {
      out.push_back({id, inner.node, ""});  // an instance of several: removed whole, by its id
    }
  }
  return out;
}

Result<LogSlice> ApplicationGroupDriver::readLogSlice(const std::string& runtime_id,
                                                      const std::optional<LogCursor>& from, size_t max_bytes) {
  Result<LogSlice> slice = inner_->readLogSlice(runtime_id, from, max_bytes);
  if (slice.isOk() || slice.status().code() != Code::kNotFound || runtime_id.find('.') != std::string::npos) {
    return slice;
  }
  Result<std::vector<RuntimeRef>> listed = listedParts({runtime_id, "", ""});
  if (!listed.isOk() || listed->empty()) return slice;
  std::string names;
  for (const RuntimeRef& part : *listed) names += (names.empty() ? "" : ", ") + applicationOf(part.id);
  return Status::invalidArgument(
      "runtime instance " + runtime_id + " runs several applications (" + names + "): name the one whose log to read",
      {{"application", "required for an instance of several applications", ""}});
}

}  // namespace tide::drivers
