#include "host/agent/agent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

namespace tide::agent {
namespace {

using model::Json;

constexpr size_t kLogTailBytes = 64 << 10;

bool newer(const DocumentVersion& a, const DocumentVersion& b) {
  return a.epoch > b.epoch || (a.epoch == b.epoch && a.revision > b.revision);
}

std::string versionText(const DocumentVersion& v) {
  return "epoch " + std::to_string(v.epoch) + " revision " + std::to_string(v.revision);
}

const SystemClock kSystemClock;

}  // namespace

Json machineResources() {
  unsigned cores = std::thread::hardware_concurrency();
  if (cores == 0) cores = static_cast<unsigned>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  double memory_gib = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (!line.starts_with("MemTotal:")) continue;
    std::istringstream fields(line.substr(9));
    double kib = 0;
    fields >> kib;
    memory_gib = std::round(kib / (1024.0 * 1024.0) * 100) / 100;
    break;
  }
  return Json{{"cores", cores}, {"memory_gib", memory_gib}};
}

Result<std::unique_ptr<Agent>> Agent::create(AgentOptions options, AgentTransport& transport) {
  if (options.node.empty()) return Status::invalidArgument("agent: no node", {{"node", "required", ""}});
  if (options.data_dir.empty()) return Status::invalidArgument("agent: no data dir", {{"data_dir", "required", ""}});
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) return Status::internal("cannot create data dir " + options.data_dir + ": " + ec.message());
  ::chmod(options.data_dir.c_str(), 0700);

  const std::filesystem::path data_dir(options.data_dir);
  drivers::DriverContext context;
  // The driver's state under <data dir>/process (or /container), volumes under <data dir>/volumes.
  context.data_dir = options.data_dir;
  context.port_range_start = options.port_range_start;
  context.port_range_end = options.port_range_end;
  context.image_catalog = options.image_catalog;
  context.tide_binary = options.tide_binary;
  context.clock = options.clock;
  Json driver_config = Json::object();
  if (options.runtime == "container" && options.driver_config.is_object()) driver_config = options.driver_config;
  if (options.runtime == "process" || options.runtime == "container") {
    if (!driver_config.contains("stop_grace_seconds")) {
      driver_config["stop_grace_seconds"] = options.stop_grace.count() / 1000.0;
    }
  }
  TIDE_ASSIGN_OR_RETURN(std::unique_ptr<drivers::Driver> driver,
                        drivers::makeDriver(options.runtime, driver_config, context));
  TIDE_ASSIGN_OR_RETURN(AppliedState state, loadAppliedState((data_dir / "agent.json").string()));

  std::unique_ptr<Agent> agent(new Agent(std::move(options), transport, std::move(driver), std::move(state)));
  // The last agent died half-way through a document: finish it, as it would have.
  std::optional<DesiredState> unfinished;
  {
    std::lock_guard<std::mutex> lock(agent->mu_);
    if (!agent->state_.complete && !agent->state_.document.is_null()) {
      TIDE_ASSIGN_OR_RETURN(DesiredState document, parseDesiredState(agent->state_.document, agent->options_.node));
      unfinished = std::move(document);
    } else if (!agent->state_.document.is_null()) {
      auto document = parseDesiredState(agent->state_.document, agent->options_.node);
      if (document.isOk()) agent->desired_ = std::move(document).value();
      agent->completed_ = agent->state_.version;
    }
  }
  if (unfinished) {
    std::lock_guard<std::mutex> lock(agent->apply_mu_);
    agent->log("finishing " + versionText(unfinished->version) + ", which the last agent did not finish applying");
    agent->applyLocked(*unfinished);
  }
  return agent;
}

Agent::Agent(AgentOptions options, AgentTransport& transport, std::unique_ptr<drivers::Driver> driver,
             AppliedState state)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : kSystemClock),
      transport_(transport),
      driver_(std::move(driver)),
      health_(clock_, options_.probe_threads),
      resources_(machineResources()),
      state_(std::move(state)) {}

Agent::~Agent() { stop(); }

std::string Agent::statePath() const { return (std::filesystem::path(options_.data_dir) / "agent.json").string(); }

void Agent::log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << "tide agent: " << line << std::endl;
  }
}

DocumentVersion Agent::applied() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.version;
}

Result<ApplyOutcome> Agent::applyDocument(const Json& raw) {
  TIDE_ASSIGN_OR_RETURN(DesiredState document, parseDesiredState(raw, options_.node));
  std::lock_guard<std::mutex> apply_lock(apply_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    const DocumentVersion seen = state_.version;
    if (document.version.epoch < seen.epoch) {
      if (!refused_ || newer(document.version, *refused_) || newer(*refused_, document.version)) {
        log("refused document of epoch " + std::to_string(document.version.epoch) + ": epoch " +
            std::to_string(seen.epoch) + " seen");
      }
      refused_ = document.version;
      return ApplyOutcome::kRefusedOlderEpoch;
    }
    refused_.reset();
    if (!state_.document.is_null() && !newer(document.version, seen)) return ApplyOutcome::kAlreadyApplied;
    // Fenced before anything changes: a restarted agent never goes back to an older epoch.
    AppliedState next = state_;
    next.version = document.version;
    next.complete = false;
    next.document = raw;
    TIDE_RETURN_IF_ERROR(saveAppliedState(statePath(), next));
    state_ = std::move(next);
  }
  applyLocked(document);
  return ApplyOutcome::kApplied;
}

void Agent::applyLocked(const DesiredState& document) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    desired_ = document;
  }
  std::set<std::string> listed_volumes;
  for (const drivers::VolumeSpec& volume : document.volumes) {
    listed_volumes.insert(volume.id);
    Status ensured = driver_->ensureVolume(volume);
    std::lock_guard<std::mutex> lock(mu_);
    if (ensured.isOk()) {
      state_.volumes.insert(volume.id);
      volume_failures_.erase(volume.id);
    } else {
      volume_failures_[volume.id] = ensured.message();
    }
  }

  std::set<std::string> listed_instances;
  for (const DesiredInstance& instance : document.instances) {
    if (stopping_) return;  // complete stays false: the next agent finishes this document
    listed_instances.insert(instance.spec.id);
    Status applied = applyInstance(instance);
    std::lock_guard<std::mutex> lock(mu_);
    if (applied.isOk()) {
      failures_.erase(instance.spec.id);
    } else {
      log("instance " + instance.spec.id + ": " + applied.message());
      failures_[instance.spec.id] = applied.message();
    }
  }

  if (auto inventory = driver_->list(); inventory.isOk()) {
    for (const drivers::RuntimeRef& ref : *inventory) {
      if (stopping_) return;
      if (listed_instances.count(ref.id) != 0) continue;
      Status removed = driver_->remove(ref);
      std::lock_guard<std::mutex> lock(mu_);
      if (removed.isOk()) {
        state_.coordinates.erase(ref.id);
        failures_.erase(ref.id);
      } else {
        log("instance " + ref.id + ": cannot remove it: " + removed.message());
        failures_[ref.id] = removed.message();
      }
    }
  } else {
    log("cannot list the instances this node runs: " + inventory.status().message());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = failures_.begin(); it != failures_.end();) {
      it = listed_instances.count(it->first) == 0 ? failures_.erase(it) : std::next(it);
    }
  }

  std::set<std::string> unlisted_volumes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& id : state_.volumes) {
      if (listed_volumes.count(id) == 0) unlisted_volumes.insert(id);
    }
  }
  for (const std::string& id : unlisted_volumes) {
    Status removed = driver_->removeVolume({id, options_.node});
    std::lock_guard<std::mutex> lock(mu_);
    if (removed.isOk()) {
      state_.volumes.erase(id);
      volume_failures_.erase(id);
    } else {
      log("volume " + id + ": cannot remove it: " + removed.message());
    }
  }

  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  state_.complete = true;
  completed_ = state_.version;
  if (Status saved = saveAppliedState(statePath(), state_); !saved.isOk()) {
    log("cannot save " + statePath() + ": " + saved.message());
  }
}

Status Agent::applyInstance(const DesiredInstance& instance) {
  const drivers::RuntimeSpec& spec = instance.spec;
  const drivers::RuntimeRef ref{spec.id, spec.node, ""};
  if (!instance.want_running) return driver_->stop(ref);
  std::optional<Json> started_with;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = state_.coordinates.find(spec.id); it != state_.coordinates.end()) started_with = it->second;
  }
  if (started_with && *started_with != spec.coordinates) {
    // An update whose intermediate revisions this agent never saw: start it again as asked.
    TIDE_RETURN_IF_ERROR(driver_->remove(ref));
    std::lock_guard<std::mutex> lock(mu_);
    state_.coordinates.erase(spec.id);
  } else if (started_with) {
    // Started as it is listed and exited on its own since: the host decides what follows (its
    // observer marks the instance FAILED and a RESTART places a new one). Starting it again
    // here would run it beside that new one, outside the ledger.
    auto current = driver_->status(ref);
    if (current.isOk() && current->state == model::WorkloadState::kExited) return Status::ok();
  }
  // Only whether ensure() worked matters here; the host reads the instance's status itself.
  TIDE_RETURN_IF_ERROR(driver_->ensure(spec).status());
  std::lock_guard<std::mutex> lock(mu_);
  state_.coordinates[spec.id] = spec.coordinates;
  return Status::ok();
}

void Agent::postLogs(const DesiredState& document) {
  const std::set<std::string> requested(document.logs.begin(), document.logs.end());
  std::vector<std::string> to_post;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A request the host dropped (it has the log) may come again later, for a newer tail.
    for (auto it = logs_posted_.begin(); it != logs_posted_.end();) {
      it = requested.count(*it) == 0 ? logs_posted_.erase(it) : std::next(it);
    }
    for (const std::string& id : requested) {
      if (logs_posted_.count(id) == 0) to_post.push_back(id);
    }
  }
  for (const std::string& id : to_post) {
    auto tail = drivers::readInstanceLog(*driver_, id, kLogTailBytes);
    // No log yet (or any more) is an empty tail: the host should not wait for one.
    const std::string text = tail.isOk() ? *tail : std::string();
    if (Status posted = transport_.postLog(id, text); !posted.isOk()) {
      noteHost(posted);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    logs_posted_.insert(id);
  }
}

Result<ApplyOutcome> Agent::pollOnce(std::chrono::seconds wait) {
  std::optional<DocumentVersion> known;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!state_.document.is_null()) known = state_.version;
  }
  TIDE_ASSIGN_OR_RETURN(Json raw, transport_.fetchDesired(known, wait));
  TIDE_ASSIGN_OR_RETURN(ApplyOutcome outcome, applyDocument(raw));
  if (outcome != ApplyOutcome::kRefusedOlderEpoch) {
    auto document = parseDesiredState(raw, options_.node);
    if (document.isOk()) postLogs(*document);
  }
  return outcome;
}

Json Agent::buildReport() {
  Json instances = Json::array();
  std::set<std::string> reported;
  // The version first, the inventory after: the inventory is at least as new as the
  // document the report says is applied.
  DocumentVersion completed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    completed = completed_;
  }
  auto inventory = driver_->list();
  std::vector<drivers::RuntimeRef> refs = inventory.isOk() ? *inventory : std::vector<drivers::RuntimeRef>{};
  auto statuses = driver_->statusAll(refs);

  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, const DesiredInstance*> desired;
  if (desired_) {
    for (const DesiredInstance& instance : desired_->instances) desired[instance.spec.id] = &instance;
  }
  for (size_t i = 0; statuses.isOk() && i < refs.size(); ++i) {
    const drivers::RuntimeAnswer& answer = (*statuses)[i];
    if (!answer.isOk()) continue;
    const drivers::RuntimeStatus& status = *answer;
    Json entry = {{"id", refs[i].id},         {"state", status.state},         {"handle", status.handle},
                  {"ports", status.ports},    {"exit_code", status.exit_code}, {"message", status.message}};
    if (auto failed = failures_.find(refs[i].id); failed != failures_.end()) entry["message"] = failed->second;
    auto wanted = desired.find(refs[i].id);
    if (status.state == model::WorkloadState::kRunning && status.healthy) {
      entry["healthy"] = *status.healthy;  // a runtime that judges health itself (sim) has the word
    } else if (status.state == model::WorkloadState::kRunning && wanted != desired.end() &&
               wanted->second->spec.health_check) {
      entry["healthy"] = health_.healthy(refs[i].id).value_or(false);
    }
    reported.insert(refs[i].id);
    instances.push_back(std::move(entry));
  }
  // An instance that could not be started at all has no record: it is reported as exited,
  // with why, so the host does not wait for it.
  for (const auto& [id, why] : failures_) {
    if (reported.count(id) != 0) continue;
    instances.push_back({{"id", id},
                         {"state", model::WorkloadState::kExited},
                         {"handle", ""},
                         {"ports", Json::object()},
                         {"exit_code", -1},
                         {"message", why}});
  }
  Json volumes = Json::array();
  if (desired_) {
    for (const drivers::VolumeSpec& volume : desired_->volumes) {
      auto failed = volume_failures_.find(volume.id);
      volumes.push_back({{"id", volume.id},
                         {"ready", failed == volume_failures_.end()},
                         {"message", failed == volume_failures_.end() ? "" : failed->second}});
    }
  }
  return Json{{"agent_version", options_.agent_version},
              {"epoch", completed.epoch},
              {"applied_revision", completed.revision},
              {"resources", resources_},
              {"instances", std::move(instances)},
              {"volumes", std::move(volumes)}};
}

Result<Json> Agent::reportOnce() {
  TIDE_ASSIGN_OR_RETURN(Json answer, transport_.report(buildReport()));
  if (answer.is_object() && answer.contains("epoch") && answer.contains("revision") &&
      answer["epoch"].is_number_integer() && answer["revision"].is_number_integer()) {
    const DocumentVersion host{answer["epoch"].get<int64_t>(), answer["revision"].get<int64_t>()};
    if (newer(host, applied())) pollSoon();
  }
  return answer;
}

void Agent::pumpHealth() {
  std::vector<drivers::RuntimeRef> refs;
  std::vector<const DesiredInstance*> checked;
  std::optional<DesiredState> desired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    desired = desired_;
  }
  if (desired) {
    for (const DesiredInstance& instance : desired->instances) {
      if (!instance.want_running || !instance.spec.health_check) continue;
      refs.push_back({instance.spec.id, instance.spec.node, ""});
      checked.push_back(&instance);
    }
  }
  std::vector<ProbeSubject> subjects;
  if (auto statuses = driver_->statusAll(refs); statuses.isOk()) {
    for (size_t i = 0; i < refs.size(); ++i) {
      const drivers::RuntimeAnswer& answer = (*statuses)[i];
      if (!answer.isOk() || answer->state != model::WorkloadState::kRunning || answer->healthy) continue;
      subjects.push_back({refs[i].id, answer->handle, *checked[i]->spec.health_check, drivers::localTarget(answer->ports)});
    }
  }
  health_.pump(subjects);
}

void Agent::start() {
  stopping_ = false;
  threads_.emplace_back([this] { pollLoop(); });
  threads_.emplace_back([this] { reportLoop(); });
  threads_.emplace_back([this] { healthLoop(); });
}

void Agent::stop() {
  stopping_ = true;
  if (!threads_.empty()) transport_.interrupt();
  clock_.wake();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
  health_.stop();
}

bool Agent::pause(std::chrono::milliseconds delay, bool until_poll_asked) {
  clock_.sleepFor(delay, [this, until_poll_asked] { return stopping_.load() || (until_poll_asked && poll_soon_.load()); });
  return stopping_;
}

void Agent::pollSoon() {
  poll_soon_ = true;
  clock_.wake();
}

std::chrono::milliseconds Agent::nextBackoff(std::chrono::milliseconds& backoff) {
  backoff = backoff.count() == 0 ? options_.backoff_min : std::min(backoff * 2, options_.backoff_max);
  thread_local std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int64_t> spread(backoff.count() * 3 / 4, backoff.count());
  return std::chrono::milliseconds(spread(random));
}

void Agent::noteHost(const Status& outcome) {
  std::lock_guard<std::mutex> lock(host_mu_);
  if (outcome.isOk()) {
    if (!host_problem_.empty()) log("the host answers again");
    host_problem_.clear();
    return;
  }
  if (outcome.message() == host_problem_) return;
  host_problem_ = outcome.message();
  log(host_problem_ + "; the workloads keep running, retrying");
}

void Agent::pollLoop() {
  std::chrono::milliseconds backoff{0};
  while (!stopping_) {
    poll_soon_ = false;
    const TimePoint polled = clock_.now();
    auto outcome = pollOnce(options_.long_poll_wait);
    if (stopping_) break;
    noteHost(outcome.status());
    if (outcome.isOk() && *outcome == ApplyOutcome::kApplied) {
      noteHost(reportOnce().status());
    }
    if (outcome.isOk() && *outcome == ApplyOutcome::kApplied) {
      backoff = std::chrono::milliseconds(0);
      continue;
    }
    if (outcome.isOk() && *outcome == ApplyOutcome::kAlreadyApplied) {
      backoff = std::chrono::milliseconds(0);
      // A long poll that ran its course: poll again at once. One the host answered at once
      // with nothing new (its long-poll slots are all held): wait for a report's answer to
      // name a newer document, which ends the pause, instead of asking every moment.
      if (clock_.now() - polled < options_.long_poll_wait / 2 &&
          pause(options_.long_poll_wait, /*until_poll_asked=*/true)) {
        break;
      }
      continue;
    }
    // The host is away, answers with an error, or serves an epoch this agent will not go
    // back to; a report whose answer names a newer document ends the wait.
    if (pause(nextBackoff(backoff), /*until_poll_asked=*/true)) break;
  }
}

void Agent::reportLoop() {
  std::chrono::milliseconds backoff{0};
  while (!stopping_) {
    auto answer = reportOnce();
    if (stopping_) break;
    noteHost(answer.status());
    std::chrono::milliseconds delay = options_.heartbeat;
    if (answer.isOk()) {
      backoff = std::chrono::milliseconds(0);
    } else {
      delay = std::max(delay, nextBackoff(backoff));
    }
    if (pause(delay, /*until_poll_asked=*/false)) break;
  }
}

void Agent::healthLoop() {
  while (!stopping_) {
    pumpHealth();
    if (pause(options_.health_tick, /*until_poll_asked=*/false)) break;
  }
}

}  // namespace tide::agent
