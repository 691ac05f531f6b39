#pragma once
// The runtime driver interface (docs/architecture.md#drivers). A driver turns runtime instances of the
// ledger into real workloads on one kind of runtime (local processes, SSH hosts, ...).
//
// Contracts every driver keeps:
// - Idempotent by RuntimeSpec::id / VolumeSpec::id: ensure() of something that already
//   exists returns its status instead of creating a second one; stop()/remove() of
//   something already stopped/gone succeed. The host may crash between any two calls and
//   repeat them after restart.
// - Errors are Status values: kUnavailable for transient trouble worth retrying,
//   kInvalidArgument / kUnprocessable for specs that can never work, kNotFound from
//   status() when the runtime has no such object.
// - Thread-safe: the executor calls one driver from several worker threads.
// - Health, when the driver knows it: a driver that can tell whether an instance is
//   healthy (the sim driver, node agents) reports it in RuntimeStatus::healthy, and tide
//   takes that word instead of running the plan's http/tcp/exec check
//   (docs/architecture.md#health-checks). A driver that cannot tell leaves it empty.
// - Status in batches: the observer asks each driver once per pass about every instance it
//   judges (statusAll), so a driver that talks to a remote runtime can answer many
//   instances in one round trip.

#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/core/status.h"
#include "host/model/records.h"

namespace tide::drivers {

using Json = model::Json;

struct VolumeSpec {
  std::string id;  // stable: "<meta instance>-<index>", survives relocation of the instance
  std::string node;
  std::string storage_class;
  double capacity_gib = 0;
  std::string mount_path;  // as the application sees it
};

struct VolumeRef {
  std::string id;
  std::string node;
};

// One application of a plan, as an instance runs it (model::Application with its coordinates).
struct ApplicationSpec {
  std::string payload_name;
  Json coordinates = Json::object();
  std::vector<model::Port> ports;
  model::Resources resources;
  std::optional<model::HealthCheck> health_check;
  std::string pod;  // model::Application::pod
};

// The pod a runtime joins (docs/architecture.md#applications): the network namespace some
// applications of one instance share, which a driver that runs pods makes for the first of
// them to start and removes with the last.
struct PodSpec {
  std::string name;                // "<runtime id>.<payload name of the application others join>"
  std::vector<model::Port> ports;  // the declared ports of every application in it, published together
};

struct RuntimeSpec {
  std::string id;             // the runtime instance id, as text
  std::string meta_instance;  // for names and logs
  std::string node;
  std::string payload_name;
  // The plan and the deployment the instance runs for, for drivers that label what they run
  // (the container driver's tide.plan and tide.deployment); empty when the caller does not say.
  std::string plan;
  std::string deployment;
  Json coordinates = Json::object();  // {image} | {command: [...], env: {...}}
  std::vector<model::Port> ports;     // declared ports; the driver assigns host ports
  std::vector<VolumeSpec> volumes;
  model::Resources resources;
  // The plan's check for this application, for drivers that judge health themselves (a
  // node agent probes on its own machine); the others leave it to the host's probes.
  std::optional<model::HealthCheck> health_check;
  // Every application of the plan the instance runs, in start order (each after the ones it
  // depends_on; docs/architecture.md#applications). The single fields above describe the
  // first. A driver itself sees one application at most: the host runs an instance of
  // several through ApplicationGroupDriver (drivers/application_group.h), which asks its
  // driver for one runtime per application, with these fields filled for that application.
  std::vector<ApplicationSpec> applications;
  // The pod this runtime joins; none when empty. Set only by ApplicationGroupDriver. A driver
  // that runs no pods refuses a spec with one (kUnprocessable).
  std::optional<PodSpec> pod;
};

// "TIDE_PORT_TCP_80" for the port key "tcp/80": the env name that gives a workload (and an
// exec check) the host port of a declared port.
inline std::string portEnvName(std::string_view port_key) {
  std::string name = "TIDE_PORT_";
  for (char c : port_key) name += c == '/' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

// What a driver that runs no pods answers a spec that joins one.
inline Status noPods(const std::string& driver_kind, const PodSpec& pod) {
  return Status(Code::kUnprocessable,
                "the " + driver_kind + " driver runs no pods (pod " + pod.name +
                    "): a plan whose applications share a pod runs on a container cluster",
                {{"pod", "not supported by the " + driver_kind + " driver", ""}});
}

// A node the driver cannot reach now: its agent missed heartbeats (docs/agents.md).
struct UnreachableNode {
  std::string node;
  std::chrono::system_clock::time_point since;  // its last heartbeat, or when the host started
};

struct RuntimeRef {
  std::string id;
  std::string node;
  std::string handle;  // the driver's own handle (e.g. "pid:start-time"), may be empty
};

struct RuntimeStatus {
  model::WorkloadState state = model::WorkloadState::kUnknown;
  std::string handle;
  Json ports = Json::object();  // {"tcp/80": 31080}
  int exit_code = 0;            // for EXITED
  std::string message;
  // For RUNNING: whether the instance is healthy, when the driver knows (see above); empty
  // when it does not, and the plan's health check decides.
  std::optional<bool> healthy;
};

// One runtime's answer within a batch: its status; kNotFound when the driver has no such
// runtime; another error (kUnavailable, kInternal, ...) about that runtime alone.
using RuntimeAnswer = Result<RuntimeStatus>;

// The local volumes a node declares (model::Node::local_volumes), by node name: what
// drivers account volume capacity against.
using NodeVolumesFn = std::function<std::vector<model::LocalVolume>(const std::string& node)>;

// A place in an instance's log: `offset` bytes into the log file `file` names. The process
// driver names a file "<runtime id>.<inode>": the log and, after a rotation, the same file
// as <log>.1 keep the name; the log started at the rotation has a new one.
struct LogCursor {
  std::string file;
  int64_t offset = 0;
};

// A piece of an instance's log and where it ends, so the next read asks for only what follows.
struct LogSlice {
  std::string text;
  // Absent where the driver hands out only a log's last bytes (an agent's: docs/agents.md).
  std::optional<LogCursor> end;
  bool continues = true;  // false: asked from a cursor, the text does not go on from it
};

class Driver {
 public:
  virtual ~Driver() = default;
  virtual Status ensureVolume(const VolumeSpec& volume) = 0;
  virtual Status removeVolume(const VolumeRef& volume) = 0;
  virtual Result<RuntimeStatus> ensure(const RuntimeSpec& spec) = 0;  // create + start
  virtual Status stop(const RuntimeRef& ref) = 0;
  virtual Status remove(const RuntimeRef& ref) = 0;
  virtual Result<RuntimeStatus> status(const RuntimeRef& ref) = 0;
  virtual Result<std::vector<RuntimeRef>> list() = 0;  // inventory, for the observer

  // The driver's nodes it cannot reach now. The control loop leaves their instances'
  // health unknown and replaces them after a grace period (docs/agents.md#losing-a-node).
  // Drivers that reach every node they serve (all but the agent driver) have none.
  virtual std::vector<UnreachableNode> unreachableNodes() { return {}; }

  // The status of every ref, in one call: answer i is refs[i]'s, exactly what status()
  // would return for it. An error of the whole call (kUnavailable: the runtime could not be
  // asked at all) judges none of them. Like status(), it changes nothing. The default asks
  // status() once per ref; drivers that can do better (one lock, one round trip) override it.
  virtual Result<std::vector<RuntimeAnswer>> statusAll(const std::vector<RuntimeRef>& refs) {
    std::vector<RuntimeAnswer> answers;
    answers.reserve(refs.size());
    for (const RuntimeRef& ref : refs) answers.push_back(status(ref));
    return answers;
  }

  // The log of runtime instance `runtime_id`, for `tide logs`: without `from`, its last
  // `max_bytes`; with it, at most `max_bytes` from that place on. kNotFound for an instance
  // the driver has no log of. Drivers that keep logs (process, agent) override it; a driver
  // that wraps another (fault, failpoint) passes the call through unchanged; the default
  // answers kUnprocessable, as a driver whose instances write no logs must (sim).
  virtual Result<LogSlice> readLogSlice(const std::string& /*runtime_id*/, const std::optional<LogCursor>& /*from*/,
                                        size_t /*max_bytes*/) {
    return Status::unprocessable("this cluster's driver keeps no logs");
  }
};

// The last `max_bytes` of a runtime instance's log: driver.readLogSlice without a cursor.
inline Result<std::string> readInstanceLog(Driver& driver, const std::string& runtime_id, size_t max_bytes) {
  TIDE_ASSIGN_OR_RETURN(LogSlice slice, driver.readLogSlice(runtime_id, std::nullopt, max_bytes));
  return std::move(slice.text);
}

}  // namespace tide::drivers
