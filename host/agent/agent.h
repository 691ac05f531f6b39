#pragma once
// The node agent (docs/agents.md): runs on a node, pulls the node's desired state from the
// host, runs it with a process (or container) driver of its own and reports what runs. The HTTP part is
// the AgentTransport; everything else is here, so tests drive an Agent with a transport that
// plays the host.
//
// An Agent owns a ProcessDriver over <data dir>/process (volumes under <data dir>/volumes)
// and keeps what it applied in <data dir>/agent.json (applied_state.h):
// - Fencing: a document of an older epoch than the agent's is refused (logged, nothing
//   changes); within its epoch only a newer revision is applied; a newer epoch always is.
// - Applying: volumes are ensured, then instances (want running: ensure; want stopped:
//   stop; an id the driver runs that the document does not list: remove), then the volumes
//   it ensured earlier that the document does not list are removed. An instance whose
//   coordinates differ from those it was started with is removed and ensured again; one it
//   started with these coordinates that exited on its own is left EXITED (the host decides
//   whether it runs again, as a new instance). One instance's failure does not stop the
//   others: it is reported in that instance's message.
// - Reporting: after each applied document and every heartbeat, the driver's whole
//   inventory with statuses, health (health_monitor.h), the applied version, the agent's
//   version and the machine's resources. An answer naming a newer document makes the poll
//   loop ask at once.
// - Restart: a new Agent over the same data dir re-adopts what runs (the process driver's
//   records), fences as the last one did, and applies again a document the last one did
//   not finish applying.
// - The host away: the loops keep retrying with capped, jittered backoff (1 s to 10 s) and
//   log once per change (reachable / unreachable), while the workloads keep running.
//
// Thread-safety: start() and stop() from one thread; the step methods (pollOnce,
// applyDocument, reportOnce, pumpHealth) may run on any threads at once (applying is
// serialised).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "drivers/registry.h"
#include "host/agent/applied_state.h"
#include "host/agent/desired_state.h"
#include "host/agent/health_monitor.h"
#include "host/core/clock.h"
#include "host/core/status.h"

namespace tide::agent {

// The agent's side of the protocol's three routes (docs/agents.md#the-protocol).
// Thread-safety: every method may be called from any thread at once.
class AgentTransport {
 public:
  virtual ~AgentTransport() = default;
  // GET /v1/agents/{node}/desired: the node's document; at once when the host's version
  // differs from `known` (nullopt: a first call, sends neither), else when it changes or
  // after `wait`. kUnavailable when the host cannot be reached.
  virtual Result<model::Json> fetchDesired(const std::optional<DocumentVersion>& known, std::chrono::seconds wait) = 0;
  // POST /v1/agents/{node}/report; the answer is {"epoch", "revision"} of the host's document.
  virtual Result<model::Json> report(const model::Json& report) = 0;
  // POST /v1/agents/{node}/logs/{id} with the tail of an instance's log.
  virtual Status postLog(const std::string& id, const std::string& text) = 0;
  // Ends the calls in flight at once (they fail) and makes later ones fail at once: the
  // agent stops within a second even in the middle of a long poll.
  virtual void interrupt() {}
};

struct AgentOptions {
  std::string node;
  std::string data_dir;  // <data dir>/process, <data dir>/volumes, <data dir>/agent.json
  // What runs the workloads: "process" (real processes), "container" (OCI containers run by
  // Podman, docs/architecture.md#the-container-driver), or "sim" (in memory, healthy on its own
  // word; for benches of the host with many agents and no real workloads).
  std::string runtime = "process";
  // The container runtime's driver_config, as a container cluster's (podman, runtime,
  // ulimits, ...); stop_grace_seconds defaults to stop_grace. Only for "container".
  model::Json driver_config = model::Json::object();
  int port_range_start = 30000;
  int port_range_end = 32767;
  drivers::ImageCatalog image_catalog;  // images the coordinates may name
  std::string tide_binary;              // what {{tide}} stands for in coordinates
  std::chrono::milliseconds stop_grace{10000};
  std::chrono::milliseconds heartbeat{1000};
  std::chrono::seconds long_poll_wait{30};
  std::chrono::milliseconds backoff_min{1000};  // retry delays when the host cannot be reached
  std::chrono::milliseconds backoff_max{10000};
  std::chrono::milliseconds health_tick{100};  // how often due probes are looked for
  size_t probe_threads = 4;
  std::string agent_version;
  std::function<void(const std::string& line)> log;  // one line a call; empty: stderr
  const Clock* clock = nullptr;                      // null: the system clock
};

// What became of a document handed to the agent.
enum class ApplyOutcome {
  kApplied,
  kRefusedOlderEpoch,  // its epoch is older than the agent's: nothing changed
  kAlreadyApplied,     // its revision is not newer than the agent's within the epoch
};

// The machine's resources as the OS tells them: cores (hardware_concurrency, else
// sysconf) and memory_gib (MemTotal of /proc/meminfo; 0 when unreadable).
model::Json machineResources();

class Agent {
 public:
  // Creates the data dir and the process driver over it (re-adopting what it recorded) and
  // loads agent.json. kInvalidArgument for a missing node or data dir or a bad port range,
  // kInternal when the data dir or agent.json cannot be used.
  static Result<std::unique_ptr<Agent>> create(AgentOptions options, AgentTransport& transport);
  ~Agent();  // stop()s
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Runs the poll, report and health loops on threads of their own until stop().
  void start();
  // Ends the loops (within a second: a long poll in flight is interrupted) and leaves every
  // workload running. Idempotent.
  void stop();

  // One long poll of at most `wait`, and the document it brings handed to applyDocument();
  // its log requests are answered. The transport's error when the host cannot be reached,
  // kInvalidArgument for a document without the protocol's shape.
  Result<ApplyOutcome> pollOnce(std::chrono::seconds wait);
  // Fences and applies `document` (the JSON the host sent). kInvalidArgument naming the field
  // for a document without the protocol's shape; kInternal when agent.json cannot be written
  // (then nothing was applied). Instances that fail are reported, not returned.
  Result<ApplyOutcome> applyDocument(const model::Json& document);
  // Posts one report; the host's answer.
  Result<model::Json> reportOnce();
  // The report as it would be posted now.
  model::Json buildReport();
  // One step of the health loop: the RUNNING instances with checks probed when due.
  void pumpHealth();

  DocumentVersion applied() const;
  drivers::Driver& driver() { return *driver_; }

 private:
  Agent(AgentOptions options, AgentTransport& transport, std::unique_ptr<drivers::Driver> driver,
        AppliedState state);

  // REQUIRES: apply_mu_. Brings the driver to `document`, recording per-instance failures.
  void applyLocked(const DesiredState& document);
  Status applyInstance(const DesiredInstance& instance);
  void postLogs(const DesiredState& document);
  void log(const std::string& line) const;
  std::string statePath() const;

  void pollLoop();
  void reportLoop();
  void healthLoop();
  // Waits `delay`, or until stop() (or pollSoon(), when `until_poll_asked`). True when stopping.
  bool pause(std::chrono::milliseconds delay, bool until_poll_asked);
  void pollSoon();
  // The next delay of a loop whose last call failed: doubled from backoff_min up to
  // backoff_max, each wait drawn from [3/4, 1] of it so that agents spread out.
  std::chrono::milliseconds nextBackoff(std::chrono::milliseconds& backoff);
  // Logs what went wrong talking to the host (or that it works again), once per change.
  void noteHost(const Status& outcome);

  const AgentOptions options_;
  const Clock& clock_;
  AgentTransport& transport_;
  std::unique_ptr<drivers::Driver> driver_;  // a process driver (drivers/registry.h)
  HealthMonitor health_;
  const model::Json resources_;

  std::mutex apply_mu_;  // one document applied at a time
  mutable std::mutex mu_;
  AppliedState state_;                          // GUARDED_BY(mu_); saved to agent.json
  // The last document applied to its end, which reports name as applied: state_.version is
  // taken before applying, and a report sent meanwhile would claim instances it has not
  // started yet, which the host would take as gone. GUARDED_BY(mu_).
  DocumentVersion completed_;
  std::optional<DesiredState> desired_;         // GUARDED_BY(mu_); the document applied last
  std::map<std::string, std::string> failures_;  // GUARDED_BY(mu_); id → why its last apply failed
  std::map<std::string, std::string> volume_failures_;  // GUARDED_BY(mu_)
  std::set<std::string> logs_posted_;            // GUARDED_BY(mu_); requests answered and still open

  std::atomic<bool> stopping_{false};
  std::atomic<bool> poll_soon_{false};
  std::mutex host_mu_;
  std::string host_problem_;  // GUARDED_BY(host_mu_); the last one logged, empty while the host answers
  std::optional<DocumentVersion> refused_;  // GUARDED_BY(mu_); the last document refused, logged once
  std::vector<std::thread> threads_;
};

}  // namespace tide::agent
