#include "drivers/process/process_driver.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "drivers/process/log_file.h"
#include "drivers/process/spawn.h"
#include "host/core/failpoint.h"
#include "host/core/json_reader.h"
#include "host/core/listen_probe.h"

namespace tide::drivers {
namespace {

namespace fs = std::filesystem;

constexpr auto kPollInterval = std::chrono::milliseconds(20);
constexpr auto kKillTimeout = std::chrono::seconds(5);
// How often a log read without a cursor starts again when the log rotated under it (readLogSlice).
constexpr int kLogReadAttempts = 4;
// How long status() waits for the waiter to write the exit code of a process that just died.
constexpr auto kExitCodeWait = std::chrono::seconds(1);

// A workload's PATH unless its coordinates declare one. Nothing of the host's environment
// reaches a workload: not its PATH, not its tokens, not its settings.
constexpr const char* kWorkloadPath = "/usr/local/bin:/usr/bin:/bin";
// How often list() looks for logs past their retention, in the driver clock's time.
constexpr auto kPruneInterval = std::chrono::minutes(1);

template <class Pred>
bool pollUntil(Pred done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(kPollInterval);
  }
  return true;
}

bool isExecutableFile(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && access(path.c_str(), X_OK) == 0;
}

// argv[0] as execve needs it: a path as given, or the first match on PATH.
Result<std::string> resolveExecutable(const std::string& name, const std::string& path_variable) {
  if (name.find('/') != std::string::npos) {
    std::error_code ec;
    std::string absolute = fs::absolute(name, ec).string();
    if (ec || !isExecutableFile(absolute))
      return Status::unprocessable("cannot execute " + name + ": not an executable file");
    return absolute;
  }
  std::stringstream dirs(path_variable);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (isExecutableFile(candidate)) return candidate;
  }
  return Status::unprocessable("cannot execute " + name + ": not found on PATH");
}

std::string handleOf(const ProcessIdentity& workload) {
  return "pid:" + std::to_string(workload.pid) + ":" + std::to_string(workload.start_time);
}

// The environment entry every process this driver starts carries, naming its state dir,
// so processes can be found again without a record.
constexpr const char* kStateEnv = "TIDE_DRIVER_STATE";

// Kills processes started for runtime `id` from `state_dir` that no record names: what a
// host killed between spawning a process and recording its pid leaves behind. They are
// found by their environment (TIDE_RUNTIME_ID and TIDE_DRIVER_STATE), which their own
// children inherit too.
void killStrays(const std::string& state_dir, const std::string& id) {
  const std::string want_id = std::string("TIDE_RUNTIME_ID=") + id;
  const std::string want_dir = std::string(kStateEnv) + "=" + state_dir;
  // Twice, 50 ms apart: a process in the middle of an exec (`sh -c '... exec sleep'`) reads
  // with an empty environment, and one scan then passes it over (the driver test saw a stray
  // run survive so in 2 runs of 6). It is past its exec by the second.
  for (int scan = 0; scan < 2; ++scan) {
    if (scan > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(it->path() / "environ", std::ios::binary);
      std::string entry;
      bool has_id = false, has_dir = false;
      while (std::getline(in, entry, '\0')) {
        has_id |= entry == want_id;
        has_dir |= entry == want_dir;
      }
      if (!has_id || !has_dir) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(name));
      if (::getpgid(pid) == pid) ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
  }
}

const Clock& clockOf(const ProcessDriverOptions& options) {
  static const SystemClock kSystemClock;
  return options.clock != nullptr ? *options.clock : kSystemClock;
}

}  // namespace

Result<ProcessDriverConfig> parseProcessDriverConfig(const Json& driver_config) {
  ProcessDriverConfig config;
  if (driver_config.is_null()) return config;
  JsonProblems problems;
  JsonReader r(driver_config, "driver_config", problems);
  r.onlyKeys({"stop_grace_seconds"});
  if (auto seconds =
          r.number("stop_grace_seconds", JsonNeed::kOptional, {0, 3600}, "must be a number of seconds in [0, 3600]")) {
    config.stop_grace = std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
  }
  if (!problems.empty()) return problems.toStatus("process driver: bad driver_config");
  return config;
}

Result<std::unique_ptr<ProcessDriver>> ProcessDriver::create(ProcessDriverOptions options) {
  if (options.state_dir.empty()) return Status::invalidArgument("process driver: state_dir is empty");
  if (options.volume_root.empty()) return Status::invalidArgument("process driver: volume_root is empty");
  if (options.port_range_start < 1 || options.port_range_end > 65535 ||
      options.port_range_start > options.port_range_end) {
    return Status::invalidArgument("process driver: bad port range [" + std::to_string(options.port_range_start) +
                                   ", " + std::to_string(options.port_range_end) + "]");
  }
  std::error_code ec;
  options.volume_root = fs::absolute(options.volume_root, ec).lexically_normal().string();
  if (ec) return Status::internal("bad volume root: " + ec.message());
  TIDE_ASSIGN_OR_RETURN(StateStore store, StateStore::open(options.state_dir));
  // Every readable record; one that cannot be read stays on disk, where status() finds it
  // (and reports why) as before.
  std::map<std::string, Known> known;
  for (const std::string& id : store.instanceIds()) {
    Result<std::optional<InstanceRecord>> record = store.loadInstance(id);
    if (record.isOk() && record.value()) known[id].record = std::move(**record);
  }
  return std::unique_ptr<ProcessDriver>(new ProcessDriver(std::move(options), std::move(store), std::move(known)));
}

ProcessDriver::ProcessDriver(ProcessDriverOptions options, StateStore store, std::map<std::string, Known> known)
    : options_(std::move(options)),
      clock_(clockOf(options_)),
      store_(std::move(store)),
      volumes_(store_, options_.volume_root, options_.node_volumes),
      known_(std::move(known)) {}

std::shared_ptr<std::mutex> ProcessDriver::instanceMutex(const std::string& id) {
  std::lock_guard<std::mutex> lock(instance_mus_mu_);
  std::shared_ptr<std::mutex>& mu = instance_mus_[id];
  if (!mu) mu = std::make_shared<std::mutex>();
  return mu;
}

Result<std::optional<InstanceRecord>> ProcessDriver::recorded(const std::string& id) {
  {
    std::lock_guard<std::mutex> lock(known_mu_);
    if (auto it = known_.find(id); it != known_.end()) return std::optional<InstanceRecord>(it->second.record);
  }
  TIDE_ASSIGN_OR_RETURN(std::optional<InstanceRecord> record, store_.loadInstance(id));
  if (record) {
    std::lock_guard<std::mutex> lock(known_mu_);
    known_.try_emplace(id, Known{*record, false, std::nullopt});
  }
  return record;
}

Status ProcessDriver::record(const InstanceRecord& record) {
  TIDE_RETURN_IF_ERROR(store_.saveInstance(record));
  std::lock_guard<std::mutex> lock(known_mu_);
  known_[record.id] = Known{record, false, std::nullopt};
  return Status::ok();
}

Status ProcessDriver::forget(const std::string& id) {
  TIDE_RETURN_IF_ERROR(store_.removeInstance(id));
  std::lock_guard<std::mutex> lock(known_mu_);
  known_.erase(id);
  return Status::ok();
}

// --- volumes ------------------------------------------------------------------------

Status ProcessDriver::ensureVolume(const VolumeSpec& volume) { return volumes_.ensure(volume); }

Status ProcessDriver::removeVolume(const VolumeRef& volume) { return volumes_.remove(volume); }

// --- instances ----------------------------------------------------------------------

std::set<int> ProcessDriver::portsOfOthers(const std::string& id) {
  const std::map<std::string, FileStamp> stamps = store_.instanceStamps();
  std::erase_if(record_ports_, [&stamps](const auto& entry) { return !stamps.count(entry.first); });
  std::set<int> taken;
  for (const auto& [other, stamp] : stamps) {
    if (other == id) continue;
    RecordPorts& known = record_ports_[other];
    if (!(known.stamp == stamp)) {
      // Read after the stat: a write in between leaves a newer file than the stamp says,
      // read again next time. An unreadable record's ports still fail the bind test.
      known.stamp = stamp;
      known.ports.clear();
      Result<std::optional<InstanceRecord>> record = store_.loadInstance(other);
      if (record.isOk() && record.value()) {
        for (const auto& [key, host_port] : (*record)->ports) known.ports.push_back(host_port);
      }
    }
    taken.insert(known.ports.begin(), known.ports.end());
  }
  return taken;
}

Result<std::map<std::string, int>> ProcessDriver::assignPorts(const RuntimeSpec& spec,
                                                              const std::map<std::string, int>& kept) {
  std::set<int> taken = portsOfOthers(spec.id);
  std::map<std::string, int> ports;
  for (const model::Port& port : spec.ports) {
    std::string key = portKey(port);
    std::string protocol = key.substr(0, key.find('/'));
    if ((protocol != "tcp" && protocol != "udp") || port.port < 1 || port.port > 65535) {
      return Status::invalidArgument(
          "invalid port", {{"ports", "bad declared port " + port.protocol + " " + std::to_string(port.port), ""}});
    }
    if (ports.count(key) != 0) continue;
    if (auto it = kept.find(key); it != kept.end()) {
      ports[key] = it->second;
      taken.insert(it->second);
      continue;
    }
    int chosen = 0;
    for (int candidate = options_.port_range_start; candidate <= options_.port_range_end; ++candidate) {
      if (taken.count(candidate) == 0 && portIsFree(candidate, protocol)) {
        chosen = candidate;
        break;
      }
    }
    if (chosen == 0) {
      return Status::resourceExhausted("no free host port in [" + std::to_string(options_.port_range_start) + ", " +
                                       std::to_string(options_.port_range_end) + "] for " + spec.id);
    }
    ports[key] = chosen;
    taken.insert(chosen);
  }
  return ports;
}

Result<RuntimeStatus> ProcessDriver::ensure(const RuntimeSpec& spec) {
  // A later application finds an earlier one's port in TIDE_PORT_*, but no process shares
  // another's network namespace.
  if (spec.pod) return noPods("process", *spec.pod);
  if (!isSafeName(spec.id)) return badName("id", spec.id);
  if (!isSafeName(spec.node)) return badName("node", spec.node);
  std::shared_ptr<std::mutex> instance_mu = instanceMutex(spec.id);
  std::lock_guard<std::mutex> instance_lock(*instance_mu);

  TIDE_ASSIGN_OR_RETURN(std::optional<InstanceRecord> previous, recorded(spec.id));
  if (previous && isRunning(previous->workload)) {
    if (previous->stop_requested) {
      previous->stop_requested = false;
      TIDE_RETURN_IF_ERROR(record(*previous));
    }
    return describe(spec.id, sightingOf(*previous));
  }
  if (previous) {
    // Whatever the last run left in its process group must not hold its ports now; and
    // a record without a pid means the host died while starting it: the process it may
    // have started is found by its environment.
    TIDE_RETURN_IF_ERROR(terminate(previous->workload, std::chrono::milliseconds(0)));
    if (previous->workload.pid <= 0) killStrays(options_.state_dir, spec.id);
  }

  TIDE_ASSIGN_OR_RETURN(std::vector<MountedVolume> volumes, volumes_.mount(spec));
  InstanceRecord record = previous.value_or(InstanceRecord{});
  record.id = spec.id;
  record.node = spec.node;
  record.cluster = options_.cluster;
  record.meta_instance = spec.meta_instance;
  record.volumes = volumes;
  // Saved without a process until the spawn below is recorded: a host that dies in between
  // leaves a record without a pid, which the next ensure or stop reads as "started, never
  // recorded" and ends by environment. Keeping the last run's pid here hid that new process
  // (one workload more than the ledger ran, after a crash during a restart).
  record.workload = {};
  record.waiter = {};

  Launch launch;
  {
    // Assigning ports and saving the record that holds them is one step for every driver
    // over this state dir.
    std::lock_guard<std::mutex> lock(store_mu_);
    StateStore::Lock file_lock = store_.lock();
    TIDE_ASSIGN_OR_RETURN(record.ports, assignPorts(spec, previous ? previous->ports : std::map<std::string, int>{}));
    LaunchContext context{options_.tide_binary, spec.meta_instance, spec.id, spec.node, record.ports, {}};
    for (const MountedVolume& volume : volumes) context.volumes[volume.mount_path] = volume.host_path;
    TIDE_ASSIGN_OR_RETURN(launch, buildLaunch(spec.coordinates, options_.image_catalog, context));
    TIDE_RETURN_IF_ERROR(this->record(record));
    TIDE_RETURN_IF_ERROR(store_.clearGone(spec.id));  // an id in use again keeps its log
  }
  auto forgetIfNew = [&](Status status) {
    if (!previous) (void)forget(spec.id);  // best effort: `status` is what the caller needs
    return status;
  };

  Result<std::string> work_dir = prepareWorkDir(spec.id);
  if (!work_dir.isOk()) return forgetIfNew(work_dir.status());
  std::map<std::string, std::string> env = {{"PATH", kWorkloadPath}, {"HOME", *work_dir}};
  for (const auto& [name, value] : launch.env) env[name] = value;
  env[kStateEnv] = options_.state_dir;
  Result<std::string> executable = resolveExecutable(launch.argv.front(), env["PATH"]);
  if (!executable.isOk()) return forgetIfNew(executable.status());

  SpawnRequest request{.executable = *executable,
                       .argv = launch.argv,
                       .env = {},
                       .log_path = store_.logPath(spec.id),
                       .exit_path = store_.exitPath(spec.id),
                       .working_dir = *work_dir,
                       .user = options_.run_as,
                       .log_max_bytes = options_.log_max_bytes,
                       .title = "runtime " + spec.id + " of " + spec.meta_instance};
  for (const auto& [name, value] : env) request.env.push_back(name + "=" + value);
  Result<SpawnedProcess> spawned = spawnDetached(request);
  if (!spawned.isOk()) return forgetIfNew(spawned.status().withPrefix("starting " + spec.id));
  TIDE_RETURN_IF_ERROR(failpoint::check("process.spawned"));

  record.workload = spawned->workload;
  record.waiter = spawned->waiter;
  record.argv = launch.argv;
  record.env_names.clear();
  for (const auto& [name, value] : launch.env) record.env_names.push_back(name);
  record.stop_requested = false;
  ++record.starts;
  TIDE_RETURN_IF_ERROR(this->record(record));
  return describe(spec.id, sightingOf(record));
}

Result<std::string> ProcessDriver::prepareWorkDir(const std::string& id) const {
  const std::string dir = store_.workDir(id);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec) fs::permissions(dir, fs::perms::owner_all, ec);
  if (ec) return Status::internal("cannot prepare working dir " + dir + ": " + ec.message());
  if (options_.run_as && ::chown(dir.c_str(), options_.run_as->uid, options_.run_as->gid) != 0) {
    return Status::internal("cannot give working dir " + dir + " to user " + options_.run_as->name + ": " +
                            std::strerror(errno));
  }
  return dir;
}

Status ProcessDriver::terminate(const ProcessIdentity& workload, std::chrono::milliseconds grace) const {
  if (workload.pid <= 0 || !ownsGroup(workload)) return Status::ok();
  pid_t group = workload.pid;
  auto gone = [group] { return !groupHasLiveMembers(group); };
  if (gone()) return Status::ok();
  kill(-group, SIGTERM);
  if (grace.count() > 0 && pollUntil(gone, grace)) return Status::ok();
  kill(-group, SIGKILL);
  if (pollUntil(gone, kKillTimeout)) return Status::ok();
  return Status::unavailable("process group " + std::to_string(group) + " survived SIGKILL");
}

Status ProcessDriver::stopLocked(const std::string& id) {
  TIDE_ASSIGN_OR_RETURN(std::optional<InstanceRecord> record, recorded(id));
  if (!record) return Status::ok();
  if (!record->stop_requested) {
    // Recorded before signalling, so an exit seen after a host crash mid-stop still reads STOPPED.
    record->stop_requested = true;
    TIDE_RETURN_IF_ERROR(this->record(*record));
  }
  if (record->workload.pid <= 0) killStrays(options_.state_dir, id);  // started, never recorded
  return terminate(record->workload, options_.stop_grace);
}

Status ProcessDriver::stop(const RuntimeRef& ref) {
  if (!isSafeName(ref.id)) return badName("id", ref.id);
  std::shared_ptr<std::mutex> instance_mu = instanceMutex(ref.id);
  std::lock_guard<std::mutex> instance_lock(*instance_mu);
  return stopLocked(ref.id);
}

Status ProcessDriver::remove(const RuntimeRef& ref) {
  if (!isSafeName(ref.id)) return badName("id", ref.id);
  std::shared_ptr<std::mutex> instance_mu = instanceMutex(ref.id);
  std::lock_guard<std::mutex> instance_lock(*instance_mu);
  TIDE_RETURN_IF_ERROR(stopLocked(ref.id));
  std::lock_guard<std::mutex> lock(store_mu_);
  StateStore::Lock file_lock = store_.lock();
  TIDE_RETURN_IF_ERROR(forget(ref.id));
  return store_.markGone(ref.id, clock_.now());
}

ProcessDriver::Sighting ProcessDriver::sightingOf(const InstanceRecord& r) {
  return Sighting{r.workload, r.waiter, r.stop_requested, r.ports, false, std::nullopt};
}

std::optional<ProcessDriver::Sighting> ProcessDriver::sight(const std::string& id) const {
  auto it = known_.find(id);
  if (it == known_.end()) return std::nullopt;
  Sighting seen = sightingOf(it->second.record);
  seen.gone = it->second.gone;
  seen.exit_code = it->second.exit_code;
  return seen;
}

Result<RuntimeStatus> ProcessDriver::status(const RuntimeRef& ref) {
  if (!isSafeName(ref.id)) return badName("id", ref.id);
  std::optional<Sighting> seen;
  {
    std::lock_guard<std::mutex> lock(known_mu_);
    seen = sight(ref.id);
  }
  if (!seen) return statusFromJournal(ref.id);
  return describe(ref.id, *seen);
}

Result<std::vector<RuntimeAnswer>> ProcessDriver::statusAll(const std::vector<RuntimeRef>& refs) {
  std::vector<std::optional<Sighting>> seen(refs.size());
  {
    std::lock_guard<std::mutex> lock(known_mu_);
    for (size_t i = 0; i < refs.size(); ++i) seen[i] = sight(refs[i].id);
  }
  std::vector<RuntimeAnswer> answers;
  answers.reserve(refs.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    if (!isSafeName(refs[i].id)) {
      answers.push_back(badName("id", refs[i].id));
    } else if (seen[i]) {
      answers.push_back(describe(refs[i].id, *seen[i]));
    } else if (Result<RuntimeStatus> journal = statusFromJournal(refs[i].id); journal.isOk()) {
      // Built in place from its alternative: moving a whole Result makes GCC 12 see the
      // status's enum as maybe uninitialized.
      answers.emplace_back(std::move(journal).value());
    } else {
      answers.emplace_back(journal.status());
    }
  }
  return answers;
}

Result<RuntimeStatus> ProcessDriver::statusFromJournal(const std::string& id) {
  std::shared_ptr<std::mutex> instance_mu = instanceMutex(id);
  std::lock_guard<std::mutex> instance_lock(*instance_mu);
  TIDE_ASSIGN_OR_RETURN(std::optional<InstanceRecord> record, recorded(id));
  if (!record) return Status::notFound("no process instance " + id);
  std::optional<Sighting> seen;
  {
    std::lock_guard<std::mutex> lock(known_mu_);
    seen = sight(id);
  }
  if (!seen) return Status::notFound("no process instance " + id);
  return describe(id, *seen);
}

RuntimeStatus ProcessDriver::describe(const std::string& id, const Sighting& seen) {
  RuntimeStatus status;
  status.handle = handleOf(seen.workload);
  status.ports = Json(seen.ports);
  if (!seen.gone && isRunning(seen.workload)) {
    status.state = model::WorkloadState::kRunning;
    status.message = "pid " + std::to_string(seen.workload.pid);
    return status;
  }
  std::optional<int> code = seen.exit_code;
  if (!code) code = store_.readExitCode(id);
  if (!code && isRunning(seen.waiter)) {
    pollUntil([&] { return (code = store_.readExitCode(id)).has_value() || !isRunning(seen.waiter); }, kExitCodeWait);
    if (!code) code = store_.readExitCode(id);
  }
  {
    // Learnt for good, unless the record changed meanwhile (a new start, a stop).
    std::lock_guard<std::mutex> lock(known_mu_);
    auto it = known_.find(id);
    if (it != known_.end() && it->second.record.workload.pid == seen.workload.pid &&
        it->second.record.workload.start_time == seen.workload.start_time) {
      it->second.gone = true;
      if (code) it->second.exit_code = code;
    }
  }
  status.state = seen.stop_requested ? model::WorkloadState::kStopped : model::WorkloadState::kExited;
  status.exit_code = code.value_or(-1);
  if (seen.workload.pid <= 0) {
    status.message = "never started";
  } else if (code) {
    status.message = (seen.stop_requested ? "stopped, exit code " : "exited with code ") + std::to_string(*code);
  } else {
    status.message = "exited, exit code unknown";
  }
  return status;
}

Result<std::vector<RuntimeRef>> ProcessDriver::list() {
  pruneWhenDue();
  std::vector<RuntimeRef> refs;
  std::lock_guard<std::mutex> lock(known_mu_);
  for (const auto& [id, known] : known_) {
    const InstanceRecord& r = known.record;
    if (!options_.cluster.empty() && r.cluster != options_.cluster) continue;
    refs.push_back({r.id, r.node, handleOf(r.workload)});
  }
  return refs;
}

Result<std::string> ProcessDriver::readLog(const std::string& runtime_id, size_t max_bytes) {
  TIDE_ASSIGN_OR_RETURN(LogSlice slice, readLogSlice(runtime_id, std::nullopt, max_bytes));
  return std::move(slice.text);
}

Result<LogSlice> ProcessDriver::readLogSlice(const std::string& runtime_id, const std::optional<LogCursor>& from,
                                             size_t max_bytes) {
  if (!isSafeName(runtime_id)) return badName("id", runtime_id);
  const std::string path = store_.logPath(runtime_id);
  std::optional<LogFile> current = LogFile::open(path, runtime_id);
  if (!current) return Status::notFound("no log for instance " + runtime_id);
  LogSlice slice;
  if (!from) {
    // <log>.1 is the file before <log> only while <log> has not rotated since it was opened:
    // after two rotations it would be a newer file, whose text put first would be out of
    // order (and could join with the older file's first line into a line of its own). So
    // the pair is read again when <log> moved on meanwhile.
    for (int attempt = 0;; ++attempt) {
      slice.text = current->tail(max_bytes);
      slice.end = LogCursor{current->name(), current->size()};
      if (slice.text.size() >= max_bytes) return slice;
      std::optional<LogFile> rotated = LogFile::open(path + ".1", runtime_id);
      std::optional<LogFile> now = LogFile::open(path, runtime_id);
      if (attempt < kLogReadAttempts && now && now->name() != current->name()) {
        current = std::move(now);
        continue;
      }
      if (rotated && rotated->name() != current->name()) {  // the same file while it rotates
        slice.text.insert(0, rotated->tail(max_bytes - slice.text.size()));
      }
      return slice;
    }
  }
  const bool in_current = from->file.empty() || from->file == current->name();
  if (in_current && from->offset <= current->size()) {
    slice.text = current->read(from->offset, max_bytes);
    slice.end = LogCursor{current->name(), from->offset + static_cast<int64_t>(slice.text.size())};
    return slice;
  }
  if (!in_current) {
    std::optional<LogFile> rotated = LogFile::open(path + ".1", runtime_id);
    if (rotated && rotated->name() == from->file && from->offset <= rotated->size()) {
      slice.text = rotated->read(from->offset, max_bytes);
      const int64_t rotated_end = from->offset + static_cast<int64_t>(slice.text.size());
      if (rotated_end < rotated->size()) {
        slice.end = LogCursor{rotated->name(), rotated_end};
        return slice;
      }
      std::string after = current->read(0, max_bytes - slice.text.size());
      slice.end = LogCursor{current->name(), static_cast<int64_t>(after.size())};
      slice.text += after;
      return slice;
    }
  }
  // Beyond the end, or a file rotated away twice: what was between is gone.
  slice.text = current->read(0, max_bytes);
  slice.end = LogCursor{current->name(), static_cast<int64_t>(slice.text.size())};
  slice.continues = false;
  return slice;
}

Status ProcessDriver::pruneRemoved() {
  const TimePoint now = clock_.now();
  std::lock_guard<std::mutex> lock(store_mu_);
  StateStore::Lock file_lock = store_.lock();
  for (const std::string& id : store_.leftoverIds()) {
    if (store_.hasInstance(id)) continue;
    std::optional<TimePoint> gone = store_.goneSince(id);
    if (!gone) {
      TIDE_RETURN_IF_ERROR(store_.markGone(id, now));
    } else if (now - *gone >= options_.log_retention) {
      TIDE_RETURN_IF_ERROR(store_.removeLeftovers(id));
    }
  }
  return Status::ok();
}

void ProcessDriver::pruneWhenDue() {
  {
    std::lock_guard<std::mutex> lock(prune_mu_);
    const TimePoint now = clock_.now();
    if (now < next_prune_) return;
    next_prune_ = now + kPruneInterval;
  }
  (void)pruneRemoved();  // best effort: the next due prune tries again
}

}  // namespace tide::drivers
