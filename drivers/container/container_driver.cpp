#include "drivers/container/container_driver.h"

#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "drivers/container/container_log.h"
#include "drivers/process/launch.h"
#include "host/core/durable_file.h"
#include "host/core/json_reader.h"
#include "host/core/listen_probe.h"
#include "host/core/sha256.h"

namespace tide::drivers {
namespace {

namespace fs = std::filesystem;

// How often list() looks for logs past their retention, in the driver clock's time.
constexpr auto kPruneInterval = std::chrono::minutes(1);

const Clock& clockOf(const ContainerDriverOptions& options) {
  static const SystemClock kSystemClock;
  return options.clock != nullptr ? *options.clock : kSystemClock;
}

// `configured`, or when 0 this process's hard limit of `resource` capped at `most`: a container
// may not have more than the podman that starts it (runc fails "error setting rlimit").
int64_t ulimitOf(int64_t configured, int resource, int64_t most) {
  if (configured > 0) return configured;
  rlimit limit{};
  if (::getrlimit(resource, &limit) != 0 || limit.rlim_max == RLIM_INFINITY) return most;
  return std::min<int64_t>(most, static_cast<int64_t>(limit.rlim_max));
}

std::string seconds(std::chrono::milliseconds duration) {
  return std::to_string(std::chrono::ceil<std::chrono::seconds>(duration).count());
}

// What a runtime instance's coordinates ask of its container.
struct ContainerCoordinates {
  std::string image;
  std::vector<std::string> command;  // the entrypoint, replacing the image's; empty: the image's
  std::vector<std::string> args;     // after the entrypoint; empty: the image's CMD
  std::map<std::string, std::string> env;
  struct Mount {
    std::string source;
    std::string target;
    bool read_only = false;
  };
  std::vector<Mount> mounts;
};

// True when `path` lies in the subtree of one of `roots` (all absolute and normal).
bool isUnder(const fs::path& path, const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    const fs::path relative = path.lexically_relative(fs::path(root).lexically_normal());
    if (!relative.empty() && *relative.begin() != "..") return true;
  }
  return false;
}

std::optional<std::vector<std::string>> strings(const JsonReader& r, std::string_view key) {
  const Json* list = r.array(key, JsonNeed::kOptional, "must be a list of strings");
  if (list == nullptr) return std::nullopt;
  std::vector<std::string> out;
  for (size_t i = 0; i < list->size(); ++i) {
    if (!(*list)[i].is_string()) {
      r.bad(std::string(key) + "[" + std::to_string(i) + "]", "must be a string");
      continue;
    }
    out.push_back((*list)[i].get<std::string>());
  }
  return out;
}

// kInvalidArgument naming every bad field ("coordinates.mounts[0].source").
Result<ContainerCoordinates> parseCoordinates(const Json& coordinates, const ContainerDriverConfig& config) {
  JsonProblems problems;
  JsonReader r(coordinates, "coordinates", problems);
  r.onlyKeys({"image", "command", "args", "env", "mounts"});
  ContainerCoordinates out;
  if (auto image = r.string("image", JsonNeed::kRequired, "must be an image reference")) {
    if (image->empty()) r.bad("image", "must be an image reference");
    out.image = *image;
  }
  if (auto command = strings(r, "command")) {
    if (command->empty()) r.bad("command", "must be a non-empty list of strings (leave it out for the image's)");
    out.command = std::move(*command);
  }
  if (auto args = strings(r, "args")) out.args = std::move(*args);
  if (const Json* env = r.object("env", JsonNeed::kOptional, "must be a map of names to strings")) {
    for (const auto& [name, value] : env->items()) {
      const std::string key = "env." + name;
      if (name.empty() || name.find('=') != std::string::npos) {
        r.bad(key, "invalid variable name");
      } else if (!value.is_string()) {
        r.bad(key, "must be a string");
      } else {
        out.env[name] = value.get<std::string>();
      }
    }
  }
  if (const Json* mounts = r.array("mounts", JsonNeed::kOptional, "must be a list of {source, target, read_only}")) {
    for (size_t i = 0; i < mounts->size(); ++i) {
      JsonReader m = r.element("mounts", i, (*mounts)[i]);
      m.onlyKeys({"source", "target", "read_only"});
      ContainerCoordinates::Mount mount;
      mount.source = m.string("source", JsonNeed::kRequired, "must be an absolute host path").value_or("");
      mount.target = m.string("target", JsonNeed::kRequired, "must be an absolute path in the container").value_or("");
      mount.read_only = m.boolean("read_only", JsonNeed::kOptional).value_or(false);
      const fs::path source = fs::path(mount.source).lexically_normal();
      if (m.find("source") != nullptr && !source.is_absolute()) {
        m.bad("source", "must be an absolute host path");
      } else if (m.find("source") != nullptr && !isUnder(source, config.mount_sources)) {
        m.bad("source", "\"" + mount.source + "\" is outside the cluster's driver_config.mount_sources" +
                            (config.mount_sources.empty() ? " (none are allowed)" : ""));
      }
      if (m.find("target") != nullptr && !fs::path(mount.target).is_absolute()) {
        m.bad("target", "must be an absolute path in the container");
      }
      mount.source = source.string();
      out.mounts.push_back(std::move(mount));
    }
  }
  if (!problems.empty()) return problems.toStatus("container coordinates");
  return out;
}

// Host ports handed to containers being created, by every container driver of this process:
// a port counts as taken once podman publishes it (conmon holds it), and until then another
// start could find it free.
std::mutex lease_mu;
std::set<int> leased_ports;  // GUARDED_BY(lease_mu)

// The host ports of one start, leased until it ends.
class PortLease {
 public:
  PortLease() = default;
  PortLease(const PortLease&) = delete;
  PortLease& operator=(const PortLease&) = delete;
  PortLease(PortLease&& other) noexcept : ports_(std::exchange(other.ports_, {})) {}
  ~PortLease() {
    if (ports_.empty()) return;  // moved from, or nothing declared
    std::lock_guard<std::mutex> lock(lease_mu);
    for (const auto& [key, port] : ports_) leased_ports.erase(port);
  }

  // A host port of [start, end] for each declared port of `spec` that nothing holds and no
  // other lease has. kInvalidArgument for a bad declared port, kResourceExhausted when the
  // range has none left.
  static Result<PortLease> take(const RuntimeSpec& spec, int start, int end) {
    PortLease lease;
    // Released before `lease` is returned: moving it out runs a destructor, which locks.
    std::unique_lock<std::mutex> lock(lease_mu);
    for (const model::Port& port : spec.ports) {
      const std::string key = portKey(port);
      const std::string protocol = key.substr(0, key.find('/'));
      if ((protocol != "tcp" && protocol != "udp") || port.port < 1 || port.port > 65535) {
        return Status::invalidArgument(
            "invalid port", {{"ports", "bad declared port " + port.protocol + " " + std::to_string(port.port), ""}});
      }
      if (lease.ports_.count(key) != 0) continue;
      int chosen = 0;
      for (int candidate = start; candidate <= end && chosen == 0; ++candidate) {
        if (leased_ports.count(candidate) == 0 && portIsFree(candidate, protocol)) chosen = candidate;
      }
      if (chosen == 0) {
        return Status::resourceExhausted("no free host port in [" + std::to_string(start) + ", " + std::to_string(end) +
                                         "] for " + spec.id);
      }
      lease.ports_[key] = chosen;
      leased_ports.insert(chosen);
    }
    lock.unlock();
    return lease;
  }

  const std::map<std::string, int>& ports() const { return ports_; }

 private:
  std::map<std::string, int> ports_;  // "tcp/80" → host port
};

// `args` and a --publish of each of `host_ports` ("tcp/80" → host port) on `address`.
std::vector<std::string> withPublished(std::vector<std::string> args, const std::map<std::string, int>& host_ports,
                                       const std::string& address) {
  for (const auto& [key, host_port] : host_ports) {
    const size_t slash = key.find('/');
    args.insert(args.end(), {"--publish", address + ":" + std::to_string(host_port) + ":" + key.substr(slash + 1) +
                                              "/" + key.substr(0, slash)});
  }
  return args;
}

std::string handleOf(const std::string& container_id) { return "container:" + container_id.substr(0, 12); }

}  // namespace

Result<ContainerDriverConfig> parseContainerDriverConfig(const Json& driver_config) {
  ContainerDriverConfig config;
  if (driver_config.is_null()) return config;
  JsonProblems problems;
  JsonReader r(driver_config, "driver_config", problems);
  r.onlyKeys({"podman", "runtime", "ulimit_nofile", "ulimit_nproc", "stop_grace_seconds", "publish_address", "network",
              "pull", "mount_sources", "command_timeout_seconds", "start_timeout_seconds"});
  auto nonEmpty = [&r](std::string_view key, std::string& into) {
    if (auto value = r.string(key, JsonNeed::kOptional)) {
      if (value->empty()) {
        r.bad(key, "must not be empty");
      } else {
        into = *value;
      }
    }
  };
  nonEmpty("podman", config.podman);
  nonEmpty("runtime", config.runtime);
  nonEmpty("publish_address", config.publish_address);
  if (auto network = r.string("network", JsonNeed::kOptional)) config.network = *network;
  if (auto pull = r.string("pull", JsonNeed::kOptional)) {
    if (*pull != "always" && *pull != "missing" && *pull != "never" && *pull != "newer") {
      r.bad("pull", "must be always, missing, never or newer");
    } else {
      config.pull = *pull;
    }
  }
  if (auto n = r.integer("ulimit_nofile", JsonNeed::kOptional, {1, 1 << 30})) config.ulimit_nofile = *n;
  if (auto n = r.integer("ulimit_nproc", JsonNeed::kOptional, {1, 1 << 30})) config.ulimit_nproc = *n;
  auto duration = [&r](std::string_view key, double max, std::chrono::milliseconds& into, double min = 0) {
    if (auto s = r.number(key, JsonNeed::kOptional, {min, max})) {
      into = std::chrono::milliseconds(static_cast<int64_t>(*s * 1000));
    }
  };
  duration("stop_grace_seconds", 3600, config.stop_grace);
  duration("command_timeout_seconds", 3600, config.command_timeout, 1);
  duration("start_timeout_seconds", 24 * 3600, config.start_timeout, 1);
  if (auto sources = strings(r, "mount_sources")) {
    for (size_t i = 0; i < sources->size(); ++i) {
      const fs::path source((*sources)[i]);
      if (!source.is_absolute()) {
        r.bad("mount_sources[" + std::to_string(i) + "]", "must be an absolute path");
      } else {
        config.mount_sources.push_back(source.lexically_normal().string());
      }
    }
  }
  if (!problems.empty()) return problems.toStatus("container driver: bad driver_config");
  return config;
}

Result<std::unique_ptr<ContainerDriver>> ContainerDriver::create(ContainerDriverOptions options) {
  if (options.state_dir.empty()) return Status::invalidArgument("container driver: state_dir is empty");
  if (options.volume_root.empty()) return Status::invalidArgument("container driver: volume_root is empty");
  if (options.port_range_start < 1 || options.port_range_end > 65535 ||
      options.port_range_start > options.port_range_end) {
    return Status::invalidArgument("container driver: bad port range [" + std::to_string(options.port_range_start) +
                                   ", " + std::to_string(options.port_range_end) + "]");
  }
  std::error_code ec;
  options.state_dir = fs::absolute(options.state_dir, ec).lexically_normal().string();
  if (!ec) options.volume_root = fs::absolute(options.volume_root, ec).lexically_normal().string();
  if (ec) return Status::internal("container driver: bad state dir or volume root: " + ec.message());
  TIDE_ASSIGN_OR_RETURN(StateStore store, StateStore::open(options.state_dir));
  const fs::path stopped_dir = fs::path(options.state_dir) / "stopped";
  fs::create_directories(stopped_dir, ec);
  if (ec) return Status::internal("cannot create " + stopped_dir.string() + ": " + ec.message());
  std::set<std::string> stopped;
  for (fs::directory_iterator it(stopped_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string id = it->path().filename().string();
    if (isSafeName(id)) stopped.insert(id);
  }
  std::unique_ptr<ContainerDriver> driver(
      new ContainerDriver(std::move(options), std::move(store), std::move(stopped)));
  TIDE_RETURN_IF_ERROR(driver->writePodConfig());
  return driver;
}

ContainerDriver::ContainerDriver(ContainerDriverOptions options, StateStore store, std::set<std::string> stopped)
    : options_(std::move(options)),
      clock_(clockOf(options_)),
      podman_(options_.config.podman, options_.config.command_timeout),
      store_(std::move(store)),
      volumes_(store_, options_.volume_root, options_.node_volumes),
      home_(options_.state_dir),
      pod_config_((fs::path(options_.state_dir) / "containers.conf").string()),
      nofile_(ulimitOf(options_.config.ulimit_nofile, RLIMIT_NOFILE, 65536)),
      nproc_(ulimitOf(options_.config.ulimit_nproc, RLIMIT_NPROC, 4096)),
      stopped_(std::move(stopped)) {}

Status ContainerDriver::writePodConfig() const {
  const std::string nofile = std::to_string(nofile_);
  const std::string nproc = std::to_string(nproc_);
  return writeFileDurably(pod_config_, "[containers]\ndefault_ulimits = [\"nofile=" + nofile + ":" + nofile +
                                           "\", \"nproc=" + nproc + ":" + nproc + "\"]\n[engine]\nruntime = \"" +
                                           options_.config.runtime + "\"\n");
}

std::string ContainerDriver::containerName(const std::string& id) const {
  const std::string cluster = options_.cluster.empty() ? "" : options_.cluster + "-";
  return "tide-" + cluster + id + "-" + sha256Hex(home_).substr(0, 8);
}

std::shared_ptr<std::mutex> ContainerDriver::instanceMutex(const std::string& id) {
  std::lock_guard<std::mutex> lock(instance_mus_mu_);
  std::shared_ptr<std::mutex>& mu = instance_mus_[id];
  if (!mu) mu = std::make_shared<std::mutex>();
  return mu;
}

Status ContainerDriver::markStopped(const std::string& id, bool stopped) {
  {
    std::lock_guard<std::mutex> lock(stopped_mu_);
    if (stopped_.count(id) == static_cast<size_t>(stopped)) return Status::ok();
  }
  const fs::path dir = fs::path(home_) / "stopped";
  if (stopped) {
    TIDE_RETURN_IF_ERROR(writeFileDurably(dir / id, "").withPrefix("container driver"));
  } else {
    std::error_code ec;
    fs::remove(dir / id, ec);
    if (ec) return Status::internal("container driver: cannot remove " + (dir / id).string() + ": " + ec.message());
    TIDE_RETURN_IF_ERROR(syncDir(dir, nullptr));
  }
  std::lock_guard<std::mutex> lock(stopped_mu_);
  if (stopped) {
    stopped_.insert(id);
  } else {
    stopped_.erase(id);
  }
  return Status::ok();
}

bool ContainerDriver::stopRequested(const std::string& id) const {
  std::lock_guard<std::mutex> lock(stopped_mu_);
  return stopped_.count(id) != 0;
}

// --- volumes ------------------------------------------------------------------------

Status ContainerDriver::ensureVolume(const VolumeSpec& volume) { return volumes_.ensure(volume); }

Status ContainerDriver::removeVolume(const VolumeRef& volume) { return volumes_.remove(volume); }

// --- instances ----------------------------------------------------------------------

Result<RuntimeStatus> ContainerDriver::ensure(const RuntimeSpec& spec) {
  if (!isSafeName(spec.id)) return badName("id", spec.id);
  if (!isSafeName(spec.node)) return badName("node", spec.node);
  TIDE_RETURN_IF_ERROR(parseCoordinates(spec.coordinates, options_.config).status());
  std::shared_ptr<std::mutex> instance_mu = instanceMutex(spec.id);
  std::lock_guard<std::mutex> instance_lock(*instance_mu);
  TIDE_RETURN_IF_ERROR(markStopped(spec.id, false));
  TIDE_RETURN_IF_ERROR(store_.clearGone(spec.id));  // an id in use again keeps its log

  // The common case first: no container yet. One that exists makes `podman run` fail at
  // once, without touching it.
  Result<RuntimeStatus> ran = runContainer(spec);
  if (ran.status().code() != Code::kAlreadyExists) return ran;
  TIDE_ASSIGN_OR_RETURN(std::vector<ContainerFacts> found, podman_.inspect({containerName(spec.id)}));
  if (found.empty()) return Status::unavailable("container " + containerName(spec.id) + " vanished while starting");
  const RuntimeStatus now = describe(found.front());
  if (now.state == model::WorkloadState::kRunning) return now;
  Result<RuntimeStatus> started = startExisting(spec, found.front());
  if (started.isOk()) return started;
  // It cannot start again (its host port taken meanwhile, say): a new one in its place.
  TIDE_RETURN_IF_ERROR(podman_.removeForced({containerName(spec.id)}, std::chrono::milliseconds(0)));
  return runContainer(spec);
}

Result<RuntimeStatus> ContainerDriver::startExisting(const RuntimeSpec& spec, const ContainerFacts& facts) {
  TIDE_ASSIGN_OR_RETURN(CommandOutcome outcome, podman_.call({"start", facts.name}));
  if (!outcome.succeeded())
    return Status::unavailable("podman start " + facts.name + ": " + Podman::complaint(outcome));
  TIDE_ASSIGN_OR_RETURN(std::vector<ContainerFacts> found, podman_.inspect({facts.name}));
  if (found.empty()) return Status::unavailable("container " + facts.name + " vanished while starting " + spec.id);
  return describe(found.front());
}

Result<RuntimeStatus> ContainerDriver::runContainer(const RuntimeSpec& spec) {
  const ContainerDriverConfig& config = options_.config;
  TIDE_ASSIGN_OR_RETURN(ContainerCoordinates coordinates, parseCoordinates(spec.coordinates, config));
  // A container of a pod publishes nothing itself: the pod publishes every member's ports.
  std::optional<PortLease> lease;
  std::map<std::string, int> host_ports;
  if (spec.pod) {
    TIDE_ASSIGN_OR_RETURN(host_ports, ensurePod(spec));
  } else {
    TIDE_ASSIGN_OR_RETURN(PortLease taken, PortLease::take(spec, options_.port_range_start, options_.port_range_end));
    lease.emplace(std::move(taken));
    host_ports = lease->ports();
  }
  TIDE_ASSIGN_OR_RETURN(std::vector<MountedVolume> volumes, volumes_.mount(spec));
  const std::string name = containerName(spec.id);

  std::vector<std::string> args = {"run",
                                   "--detach",
                                   "--name",
                                   name,
                                   "--runtime",
                                   config.runtime,
                                   "--pull",
                                   config.pull,
                                   "--ulimit",
                                   "nofile=" + std::to_string(nofile_) + ":" + std::to_string(nofile_),
                                   "--ulimit",
                                   "nproc=" + std::to_string(nproc_) + ":" + std::to_string(nproc_),
                                   "--stop-timeout",
                                   seconds(config.stop_grace),
                                   "--log-driver",
                                   "k8s-file",
                                   "--log-opt",
                                   "path=" + store_.logPath(spec.id)};
  if (options_.log_max_bytes > 0)
    args.insert(args.end(), {"--log-opt", "max-size=" + std::to_string(options_.log_max_bytes)});
  if (spec.pod) {
    args.insert(args.end(), {"--pod", podName(spec.pod->name)});
  } else if (!config.network.empty()) {
    args.insert(args.end(), {"--network", config.network});
  }
  const std::map<std::string, std::string> labels = {
      {"tide.home", home_},       {"tide.cluster", options_.cluster},  {"tide.node", spec.node},
      {"tide.instance", spec.id}, {"tide.meta", spec.meta_instance},   {"tide.payload", spec.payload_name},
      {"tide.plan", spec.plan},   {"tide.deployment", spec.deployment}};
  for (const auto& [key, value] : labels) args.insert(args.end(), {"--label", key + "=" + value});
  if (!spec.pod) args = withPublished(std::move(args), host_ports, config.publish_address);
  LaunchContext context{"", spec.meta_instance, spec.id, spec.node, host_ports, {}};
  for (const MountedVolume& volume : volumes) {
    context.volumes[volume.mount_path] = volume.mount_path;  // where the container sees it
    args.insert(args.end(), {"--volume", volume.host_path + ":" + volume.mount_path});
  }
  for (const ContainerCoordinates::Mount& mount : coordinates.mounts) {
    args.insert(args.end(), {"--volume", mount.source + ":" + mount.target + (mount.read_only ? ":ro" : "")});
  }
  std::map<std::string, std::string> env = coordinates.env;
  for (auto& [key, value] : tideVariables(context)) env[key] = std::move(value);
  for (const auto& [key, value] : env) args.insert(args.end(), {"--env", key + "=" + value});
  if (!coordinates.command.empty()) args.insert(args.end(), {"--entrypoint", Json(coordinates.command).dump()});
  args.push_back(coordinates.image);
  args.insert(args.end(), coordinates.args.begin(), coordinates.args.end());

  Result<CommandOutcome> outcome = podman_.call(args, config.start_timeout);
  if (!outcome.isOk()) {
    (void)podman_.removeForced({name}, std::chrono::milliseconds(0));  // best effort: the error is what matters
    return outcome.status().withPrefix("starting " + spec.id);
  }
  if (!outcome->succeeded()) {
    if (outcome->errors.find("already in use") != std::string::npos) {
      return Status::alreadyExists("container " + name + " exists");
    }
    return runFailure(spec, coordinates.image, *outcome);
  }
  std::string container_id = outcome->output;
  while (!container_id.empty() && (container_id.back() == '\n' || container_id.back() == ' ')) container_id.pop_back();
  container_id = container_id.substr(container_id.rfind('\n') + 1);
  RuntimeStatus status;
  status.state = model::WorkloadState::kRunning;
  status.handle = handleOf(container_id);
  status.ports = Json(host_ports);
  status.message = "container " + container_id.substr(0, 12) + " started";
  return status;
}

Status ContainerDriver::runFailure(const RuntimeSpec& spec, const std::string& image, const CommandOutcome& outcome) {
  const std::string complaint = Podman::complaint(outcome);
  // A failed run may leave a created container behind (its command could not be run).
  TIDE_RETURN_IF_ERROR(podman_.removeForced({containerName(spec.id)}, std::chrono::milliseconds(0)));
  if (complaint.find("invalid reference format") != std::string::npos) {
    return Status::invalidArgument("image \"" + image + "\": " + complaint,
                                   {{"coordinates.image", "not a valid image reference", ""}});
  }
  if (outcome.exitCode() == 126 || outcome.exitCode() == 127) {
    return Status::unprocessable("the container of " + spec.id + " cannot run its command: " + complaint);
  }
  Result<bool> have = podman_.imageExists(image);
  if (have.isOk() && !*have) return Status::unprocessable("image " + image + " cannot be had: " + complaint);
  return Status::unavailable("podman run for " + spec.id + ": " + complaint);
}

Status ContainerDriver::stop(const RuntimeRef& ref) {
  if (!isSafeName(ref.id)) return badName("id", ref.id);
  std::shared_ptr<std::mutex> instance_mu = instanceMutex(ref.id);
  std::lock_guard<std::mutex> instance_lock(*instance_mu);
  // Recorded before podman is asked, so an exit seen after a host crash mid-stop reads STOPPED.
  TIDE_RETURN_IF_ERROR(markStopped(ref.id, true));
  const std::string name = containerName(ref.id);
  TIDE_ASSIGN_OR_RETURN(CommandOutcome outcome,
                        podman_.call({"stop", "--time", seconds(options_.config.stop_grace), name},
                                     options_.config.command_timeout + options_.config.stop_grace));
  if (outcome.succeeded() || Podman::saysNoSuchContainer(outcome)) return Status::ok();
  return Status::unavailable("podman stop " + name + ": " + Podman::complaint(outcome));
}

Status ContainerDriver::remove(const RuntimeRef& ref) {
  if (!isSafeName(ref.id)) return badName("id", ref.id);
  std::shared_ptr<std::mutex> instance_mu = instanceMutex(ref.id);
  std::lock_guard<std::mutex> instance_lock(*instance_mu);
  TIDE_RETURN_IF_ERROR(markStopped(ref.id, true));
  // By name, and by the handle list() gave when that names another container of the id (one
  // a crashed host or a person started under another name).
  std::vector<std::string> names = {containerName(ref.id)};
  if (ref.handle.starts_with("container:") && ref.handle.size() > 10) names.push_back(ref.handle.substr(10));
  TIDE_RETURN_IF_ERROR(podman_.removeForced(names, options_.config.stop_grace));
  TIDE_RETURN_IF_ERROR(removeEmptyPods(ref.id));
  TIDE_RETURN_IF_ERROR(markStopped(ref.id, false));
  if (!fs::exists(store_.logPath(ref.id))) return Status::ok();
  return store_.markGone(ref.id, clock_.now());
}

// --- pods --------------------------------------------------------------------------------
// A pod's record, pods/<pod>.json under the state dir: its host ports, written once podman made
// it. A pod without a record (the host died in between) is made again.

Result<std::map<std::string, int>> ContainerDriver::ensurePod(const RuntimeSpec& spec) {
  const PodSpec& pod = *spec.pod;
  if (!isSafeName(pod.name)) return badName("pod", pod.name);
  std::shared_ptr<std::mutex> pod_mu = instanceMutex("pod:" + pod.name);
  std::lock_guard<std::mutex> pod_lock(*pod_mu);
  const std::string name = podName(pod.name);
  const fs::path record = fs::path(options_.state_dir) / "pods" / (pod.name + ".json");
  TIDE_ASSIGN_OR_RETURN(CommandOutcome exists, podman_.call({"pod", "exists", name}));
  if (exists.succeeded()) {
    std::ifstream in(record);
    std::stringstream text;
    text << in.rdbuf();
    if (in) {
      const Json ports = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
      if (ports.is_object()) {
        std::map<std::string, int> out;
        for (const auto& [key, port] : ports.items()) {
          if (port.is_number_integer()) out[key] = port.get<int>();
        }
        return out;
      }
    }
    TIDE_ASSIGN_OR_RETURN(CommandOutcome removed, podman_.call({"pod", "rm", "--force", "--ignore", name}));
    if (!removed.succeeded()) return Status::unavailable("podman pod rm " + name + ": " + Podman::complaint(removed));
  }
  RuntimeSpec members = spec;
  members.id = pod.name;
  members.ports = pod.ports;
  TIDE_ASSIGN_OR_RETURN(PortLease lease, PortLease::take(members, options_.port_range_start, options_.port_range_end));
  const ContainerDriverConfig& config = options_.config;
  std::vector<std::string> args = {"pod",     "create",
                                   "--name",  name,
                                   "--label", "tide.home=" + home_,
                                   "--label", "tide.cluster=" + options_.cluster,
                                   "--label", "tide.pod=" + pod.name};
  if (!config.network.empty()) args.insert(args.end(), {"--network", config.network});
  args = withPublished(std::move(args), lease.ports(), config.publish_address);
  TIDE_ASSIGN_OR_RETURN(CommandOutcome made,
                        podman_.call(args, config.start_timeout, {"CONTAINERS_CONF=" + pod_config_}));
  if (!made.succeeded()) return Status::unavailable("podman pod create " + name + ": " + Podman::complaint(made));
  std::error_code ec;
  fs::create_directories(record.parent_path(), ec);
  TIDE_RETURN_IF_ERROR(writeFileDurably(record, Json(lease.ports()).dump()));
  return lease.ports();
}

Status ContainerDriver::removeEmptyPods(const std::string& id) {
  const size_t dot = id.find('.');
  if (dot == std::string::npos) return Status::ok();  // an instance of one application: no pod
  const std::string prefix = id.substr(0, dot + 1);
  const fs::path dir = fs::path(options_.state_dir) / "pods";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!file.starts_with(prefix) || !file.ends_with(".json")) continue;
    const std::string pod = file.substr(0, file.size() - 5);
    const std::string name = podName(pod);
    TIDE_ASSIGN_OR_RETURN(CommandOutcome count,
                          podman_.call({"pod", "inspect", name, "--format", "{{.NumContainers}}"}));
    // Gone already, or only its infra container left.
    if (count.succeeded() && std::atoi(count.output.c_str()) > 1) continue;
    TIDE_ASSIGN_OR_RETURN(CommandOutcome removed, podman_.call({"pod", "rm", "--force", "--ignore", name}));
    if (!removed.succeeded()) return Status::unavailable("podman pod rm " + name + ": " + Podman::complaint(removed));
    fs::remove(it->path(), ec);
  }
  return Status::ok();
}

RuntimeStatus ContainerDriver::describe(const ContainerFacts& facts) const {
  RuntimeStatus status;
  status.handle = handleOf(facts.id);
  status.ports = Json(facts.ports);
  const std::string& state = facts.state;
  const std::string short_id = facts.id.substr(0, 12);
  if (state == "running" || state == "paused" || state == "stopping") {
    status.state = model::WorkloadState::kRunning;
    status.message = "container " + short_id + " " + state;
    if (facts.health == "healthy") status.healthy = true;
    if (facts.health == "unhealthy") status.healthy = false;
    if (!facts.health.empty()) status.message += " (" + facts.health + ")";
    return status;
  }
  if (state == "created" || state == "configured" || state == "initialized") {
    status.state = model::WorkloadState::kPending;
    status.message = "container " + short_id + " created, not started";
    return status;
  }
  if (state == "exited" || state == "stopped" || state == "removing") {
    auto instance = facts.labels.find("tide.instance");
    const bool stopped = instance != facts.labels.end() && stopRequested(instance->second);
    status.state = stopped ? model::WorkloadState::kStopped : model::WorkloadState::kExited;
    status.exit_code = facts.exit_code;
    status.message = (stopped ? "stopped, exit code " : "exited with code ") + std::to_string(facts.exit_code);
    if (facts.oom_killed) status.message += " (out of memory)";
    if (!facts.error.empty()) status.message += ": " + facts.error;
    return status;
  }
  status.state = model::WorkloadState::kUnknown;
  status.message = "container " + short_id + " is " + (state.empty() ? "in no state podman names" : state);
  return status;
}

Result<RuntimeStatus> ContainerDriver::status(const RuntimeRef& ref) {
  TIDE_ASSIGN_OR_RETURN(std::vector<RuntimeAnswer> answers, statusAll({ref}));
  return std::move(answers.front());
}

Result<std::vector<RuntimeAnswer>> ContainerDriver::statusAll(const std::vector<RuntimeRef>& refs) {
  std::vector<std::string> names;
  for (const RuntimeRef& ref : refs) {
    if (isSafeName(ref.id)) names.push_back(containerName(ref.id));
  }
  TIDE_ASSIGN_OR_RETURN(std::vector<ContainerFacts> found, podman_.inspect(names));
  std::map<std::string, const ContainerFacts*> by_name;
  for (const ContainerFacts& facts : found) by_name[facts.name] = &facts;
  std::vector<RuntimeAnswer> answers;
  answers.reserve(refs.size());
  for (const RuntimeRef& ref : refs) {
    if (!isSafeName(ref.id)) {
      answers.push_back(badName("id", ref.id));
    } else if (auto it = by_name.find(containerName(ref.id)); it != by_name.end()) {
      answers.emplace_back(describe(*it->second));
    } else {
      answers.emplace_back(Status::notFound("no container for runtime instance " + ref.id));
    }
  }
  return answers;
}

Result<std::vector<RuntimeRef>> ContainerDriver::list() {
  // Every container of this state dir, whatever its cluster: the logs of them all stay.
  TIDE_ASSIGN_OR_RETURN(std::vector<ContainerFacts> found, podman_.listLabelled({"tide.home=" + home_}));
  std::vector<RuntimeRef> refs;
  std::set<std::string> live;
  for (const ContainerFacts& facts : found) {
    auto id = facts.labels.find("tide.instance");
    if (id == facts.labels.end() || !isSafeName(id->second)) continue;
    live.insert(id->second);
    auto cluster = facts.labels.find("tide.cluster");
    if (!options_.cluster.empty() && (cluster == facts.labels.end() || cluster->second != options_.cluster)) continue;
    auto node = facts.labels.find("tide.node");
    refs.push_back({id->second, node != facts.labels.end() ? node->second : "", handleOf(facts.id)});
  }
  std::sort(refs.begin(), refs.end(), [](const RuntimeRef& a, const RuntimeRef& b) { return a.id < b.id; });
  pruneLogs(live);
  return refs;
}

Result<LogSlice> ContainerDriver::readLogSlice(const std::string& runtime_id, const std::optional<LogCursor>& from,
                                               size_t max_bytes) {
  if (!isSafeName(runtime_id)) return badName("id", runtime_id);
  return readK8sLogSlice(store_.logPath(runtime_id), runtime_id, from, max_bytes);
}

void ContainerDriver::pruneLogs(const std::set<std::string>& live) {
  const TimePoint now = clock_.now();
  {
    std::lock_guard<std::mutex> lock(prune_mu_);
    if (now < next_prune_) return;
    next_prune_ = now + kPruneInterval;
  }
  // Best effort throughout: the next due prune tries again.
  StateStore::Lock file_lock = store_.lock();
  for (const std::string& id : store_.leftoverIds()) {
    std::optional<TimePoint> gone = store_.goneSince(id);
    if (live.count(id) != 0) {
      if (gone) (void)store_.clearGone(id);  // marked while it was being created
    } else if (!gone) {
      (void)store_.markGone(id, now);
    } else if (now - *gone >= options_.log_retention) {
      (void)store_.removeLeftovers(id);
    }
  }
}

}  // namespace tide::drivers
