#include "drivers/sim/sim_driver.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "host/core/json_reader.h"
#include "host/model/transitions.h"

namespace tide::drivers {
namespace {

constexpr double kCapacityEpsilon = 1e-9;
// A crash further away than this never happens.
constexpr double kNeverMs = 100.0 * 365 * 24 * 3600 * 1000;

uint64_t fnv1a(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

// SplitMix64 (Steele, Lea, Flood): a tiny generator whose outputs of nearby states are unrelated.
uint64_t splitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A double in [0, 1) from the top 53 bits.
double unitInterval(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

Result<SimOptions> parseSimOptions(const Json& config) {
  SimOptions options;
  if (config.is_null()) return options;
  JsonProblems problems;
  JsonReader r(config, "driver_config", problems);
  r.onlyKeys({"seed", "start_latency_ms", "stop_latency_ms", "start_failure_rate", "crash_rate_per_hour",
              "unhealthy_rate", "adopt"});
  options.seed = r.unsignedInteger("seed", JsonNeed::kOptional).value_or(options.seed);
  const JsonBounds latency{0, static_cast<double>(kMaxSimLatency.count())};
  const std::string latency_must =
      "must be an integer of milliseconds in [0, " + std::to_string(kMaxSimLatency.count()) + "]";
  if (auto ms = r.integer("start_latency_ms", JsonNeed::kOptional, latency, latency_must)) {
    options.start_latency = std::chrono::milliseconds(*ms);
  }
  if (auto ms = r.integer("stop_latency_ms", JsonNeed::kOptional, latency, latency_must)) {
    options.stop_latency = std::chrono::milliseconds(*ms);
  }
  const std::string rate_must = "must be a number in [0, 1]";
  options.start_failure_rate =
      r.number("start_failure_rate", JsonNeed::kOptional, {0, 1}, rate_must).value_or(options.start_failure_rate);
  options.unhealthy_rate =
      r.number("unhealthy_rate", JsonNeed::kOptional, {0, 1}, rate_must).value_or(options.unhealthy_rate);
  options.adopt = r.boolean("adopt", JsonNeed::kOptional).value_or(options.adopt);
  std::ostringstream crash_must;
  crash_must << "must be a number of crashes per hour of running in [0, " << kMaxCrashRatePerHour << "]";
  options.crash_rate_per_hour =
      r.number("crash_rate_per_hour", JsonNeed::kOptional, {0, kMaxCrashRatePerHour}, crash_must.str())
          .value_or(options.crash_rate_per_hour);
  if (!problems.empty()) return problems.toStatus("sim driver: bad driver_config");
  return options;
}

SimFate simFate(const SimOptions& options, std::string_view id, int start) {
  uint64_t seed_state = options.seed;
  uint64_t start_state = static_cast<uint64_t>(start);
  uint64_t state = fnv1a(id) ^ splitMix(seed_state) ^ (splitMix(start_state) << 1);
  // Every fate draws the same three numbers whatever the rates, so raising one rate adds
  // failures of that kind without reshuffling the others.
  const double fails = unitInterval(splitMix(state));
  const double unhealthy = unitInterval(splitMix(state));
  const double crash = unitInterval(splitMix(state));
  SimFate fate;
  fate.start_fails = fails < options.start_failure_rate;
  fate.unhealthy = unhealthy < options.unhealthy_rate;
  if (options.crash_rate_per_hour > 0) {
    // Exponentially distributed time to the next crash of a Poisson process.
    const double ms = -std::log1p(-crash) / options.crash_rate_per_hour * 3600.0 * 1000.0;
    if (ms < kNeverMs) fate.crash_after = std::chrono::milliseconds(static_cast<int64_t>(ms));
  }
  return fate;
}

SimDriver::SimDriver(SimOptions options, const Clock& clock) : options_(std::move(options)), clock_(clock) {}

// --- volumes ------------------------------------------------------------------------

double SimDriver::declaredCapacity(const std::string& node, const std::string& storage_class) const {
  if (!options_.node_volumes) return std::numeric_limits<double>::infinity();
  double declared = 0;
  for (const model::LocalVolume& local : options_.node_volumes(node)) {
    if (local.storage_class == storage_class) declared += local.capacity_gib;
  }
  return declared;
}

Status SimDriver::ensureVolumeLocked(const VolumeSpec& volume, double declared) {
  auto existing = volumes_.find({volume.node, volume.id});
  if (existing != volumes_.end()) {
    if (existing->second.storage_class != volume.storage_class ||
        std::fabs(existing->second.capacity_gib - volume.capacity_gib) > kCapacityEpsilon) {
      return Status::conflict("volume " + volume.id + " on node " + volume.node + " exists as " +
                              std::to_string(existing->second.capacity_gib) + " GiB of " +
                              existing->second.storage_class);
    }
    return Status::ok();
  }
  double& used = volumes_used_[{volume.node, volume.storage_class}];
  if (used + volume.capacity_gib > declared + kCapacityEpsilon) {
    std::ostringstream message;
    message << "node " << volume.node << " has " << (declared - used) << " GiB of storage class "
            << volume.storage_class << " left (" << declared << " declared), volume " << volume.id << " needs "
            << volume.capacity_gib;
    return Status::unprocessable(message.str());
  }
  used += volume.capacity_gib;
  volumes_[{volume.node, volume.id}] = {volume.storage_class, volume.capacity_gib};
  return Status::ok();
}

Status SimDriver::ensureVolume(const VolumeSpec& volume) {
  if (volume.id.empty() || volume.node.empty()) {
    return Status::invalidArgument("sim driver: a volume needs an id and a node");
  }
  if (!(volume.capacity_gib >= 0)) {
    return Status::invalidArgument("volume " + volume.id + ": capacity_gib must be >= 0");
  }
  const double declared = declaredCapacity(volume.node, volume.storage_class);  // may ask the ledger: not under mu_
  std::lock_guard<std::mutex> lock(mu_);
  return ensureVolumeLocked(volume, declared);
}

Status SimDriver::removeVolume(const VolumeRef& volume) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = volumes_.find({volume.node, volume.id});
  if (it == volumes_.end()) return Status::ok();
  volumes_used_[{volume.node, it->second.storage_class}] -= it->second.capacity_gib;
  volumes_.erase(it);
  return Status::ok();
}

// --- instances ----------------------------------------------------------------------

Result<Json> SimDriver::assignPorts(const RuntimeSpec& spec) {
  Json ports = Json::object();
  const int span = options_.port_range_end - options_.port_range_start + 1;
  for (const model::Port& port : spec.ports) {
    const std::string protocol = lower(port.protocol);
    if ((protocol != "tcp" && protocol != "udp") || port.port < 1 || port.port > 65535) {
      return Status::invalidArgument(
          "invalid port", {{"ports", "bad declared port " + port.protocol + " " + std::to_string(port.port), ""}});
    }
    const std::string key = protocol + "/" + std::to_string(port.port);
    if (ports.contains(key)) continue;
    int& given = ports_given_[spec.node];
    ports[key] = options_.port_range_start + given % std::max(1, span);
    ++given;
  }
  return ports;
}

void SimDriver::start(const std::string& id, Instance& instance, TimePoint now) const {
  ++instance.starts;
  instance.fate = simFate(options_, id, instance.starts);
  instance.started_at = now;
  instance.stop_at.reset();
  instance.handle = "sim:" + id + ":" + std::to_string(instance.starts);
}

Result<RuntimeStatus> SimDriver::ensure(const RuntimeSpec& spec) {
  if (spec.id.empty()) return Status::invalidArgument("invalid id", {{"id", "must not be empty", ""}});
  if (spec.node.empty()) return Status::invalidArgument("invalid node", {{"node", "must not be empty", ""}});
  std::vector<std::pair<VolumeSpec, double>> volumes;
  for (VolumeSpec volume : spec.volumes) {
    if (volume.node.empty()) volume.node = spec.node;
    if (volume.id.empty()) return Status::invalidArgument("sim driver: a volume of " + spec.id + " has no id");
    const double declared = declaredCapacity(volume.node, volume.storage_class);
    volumes.emplace_back(std::move(volume), declared);
  }
  const TimePoint now = clock_.now();

  std::lock_guard<std::mutex> lock(mu_);
  auto it = instances_.find(spec.id);
  if (it != instances_.end()) {
    Instance& instance = it->second;
    RuntimeStatus current = describe(spec.id, instance, now);
    if (model::runsOrStarts(current.state)) {
      instance.stop_at.reset();  // stopping, not stopped yet: it runs on
      return current;
    }
  }
  for (const auto& [volume, declared] : volumes) {
    TIDE_RETURN_IF_ERROR(ensureVolumeLocked(volume, declared).withPrefix("volume " + volume.id));
  }
  if (it == instances_.end()) {
    TIDE_ASSIGN_OR_RETURN(Json ports, assignPorts(spec));
    it = instances_.emplace(spec.id, Instance{}).first;
    it->second.node = spec.node;
    it->second.ports = std::move(ports);
  }
  start(spec.id, it->second, now);
  return describe(spec.id, it->second, now);
}

Status SimDriver::stop(const RuntimeRef& ref) {
  const TimePoint now = clock_.now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = instances_.find(ref.id);
  if (it != instances_.end() && !it->second.stop_at) it->second.stop_at = now;
  return Status::ok();
}

Status SimDriver::remove(const RuntimeRef& ref) {
  std::lock_guard<std::mutex> lock(mu_);
  instances_.erase(ref.id);
  return Status::ok();
}

RuntimeStatus SimDriver::describe(const std::string& id, const Instance& instance, TimePoint now) const {
  RuntimeStatus status;
  status.handle = instance.handle;
  status.ports = instance.ports;
  if (instance.stop_at && now >= *instance.stop_at + options_.stop_latency) {
    status.state = model::WorkloadState::kStopped;
    status.message = "stopped";
    return status;
  }
  const TimePoint running_from = instance.started_at + options_.start_latency;
  if (now < running_from) {
    status.state = model::WorkloadState::kStarting;
    return status;
  }
  if (instance.fate.start_fails) {
    status.state = model::WorkloadState::kExited;
    status.exit_code = kStartFailureExitCode;
    status.message = "sim: start " + std::to_string(instance.starts) + " of " + id + " failed (start_failure_rate)";
    return status;
  }
  if (instance.fate.crash_after && now >= running_from + *instance.fate.crash_after) {
    status.state = model::WorkloadState::kExited;
    status.exit_code = kCrashExitCode;
    status.message = "sim: crashed after " + std::to_string(instance.fate.crash_after->count()) +
                     " ms of running (crash_rate_per_hour)";
    return status;
  }
  status.state = model::WorkloadState::kRunning;
  status.healthy = !instance.fate.unhealthy;
  if (instance.fate.unhealthy) status.message = "sim: unhealthy (unhealthy_rate)";
  return status;
}

SimDriver::Instances::iterator SimDriver::findOrAdopt(const RuntimeRef& ref, TimePoint now) {
  auto it = instances_.find(ref.id);
  if (it != instances_.end() || !options_.adopt || ref.id.empty() || ref.node.empty()) return it;
  // It ran before this driver was made (a host restart): running since, with its first
  // start's fate, except that the start did not fail.
  Instance adopted;
  adopted.node = ref.node;
  adopted.starts = 1;
  adopted.fate = simFate(options_, ref.id, 1);
  adopted.fate.start_fails = false;
  adopted.started_at = now - options_.start_latency;
  adopted.handle = ref.handle.empty() ? "sim:" + ref.id + ":1" : ref.handle;
  return instances_.emplace(ref.id, std::move(adopted)).first;
}

Result<RuntimeStatus> SimDriver::status(const RuntimeRef& ref) {
  const TimePoint now = clock_.now();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = findOrAdopt(ref, now);
  if (it == instances_.end()) return Status::notFound("no sim instance " + ref.id);
  return describe(ref.id, it->second, now);
}

Result<std::vector<RuntimeAnswer>> SimDriver::statusAll(const std::vector<RuntimeRef>& refs) {
  std::vector<RuntimeAnswer> answers;
  answers.reserve(refs.size());
  const TimePoint now = clock_.now();
  std::lock_guard<std::mutex> lock(mu_);
  for (const RuntimeRef& ref : refs) {
    auto it = findOrAdopt(ref, now);
    if (it == instances_.end()) {
      answers.emplace_back(Status::notFound("no sim instance " + ref.id));
    } else {
      answers.emplace_back(describe(ref.id, it->second, now));
    }
  }
  return answers;
}

Result<LogSlice> SimDriver::readLogSlice(const std::string& /*runtime_id*/, const std::optional<LogCursor>& /*from*/,
                                         size_t /*max_bytes*/) {
  return Status::unprocessable("the sim driver keeps no logs: its instances run nothing");
}

Result<std::vector<RuntimeRef>> SimDriver::list() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RuntimeRef> refs;
  refs.reserve(instances_.size());
  for (const auto& [id, instance] : instances_) refs.push_back({id, instance.node, instance.handle});
  return refs;
}

size_t SimDriver::instanceCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return instances_.size();
}

}  // namespace tide::drivers
