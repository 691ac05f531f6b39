#pragma once
// The `container` driver (docs/architecture.md#the-container-driver): every runtime instance is
// an OCI container that Podman runs on this machine, with the runc runtime. Nodes of a
// container cluster are logical nodes of this machine, as with the process driver.
//
// - A container is named tide-[<cluster>-]<runtime id>-<8 hex of the state dir> and labelled
//   tide.home (the state dir: which host or agent runs it), tide.cluster, tide.node,
//   tide.instance (the runtime id), tide.meta, tide.payload, tide.plan, tide.deployment.
//   Podman is the inventory: list() is the containers with this driver's tide.home (and
//   tide.cluster when set), so a host restarted over the same data dir adopts what runs, and
//   the observer removes the containers the ledger does not know as orphans.
// - Ports: each declared port gets a host port of the configured range that nothing holds,
//   published on `publish_address` (127.0.0.1 by default) and passed as TIDE_PORT_TCP_80.
//   Podman keeps a container's ports across its restarts.
// - Logs: podman writes each container's stdout and stderr with the k8s-file log driver to
//   <state dir>/logs/<runtime id>.log (container_log.h), rotated at log_max_bytes. remove()
//   marks the log gone; list() deletes it log_retention later.
// - Volumes: directories <volume root>/<node>/<class>/<id>/ (local_volumes.h), bind-mounted
//   at their mount path.
// - Stop: `podman stop` (SIGTERM, SIGKILL after stop_grace). A stop is remembered in
//   <state dir>/stopped/<runtime id> (written before podman is asked), so an exit after it
//   reads STOPPED, an exit on its own EXITED, across host restarts too.
// - Every podman call has a deadline (podman.h): a hung podman fails the call with
//   kUnavailable instead of hanging the host.
//
// Status states: RUNNING (running, paused, stopping); PENDING (created, not started);
// STOPPED (ended after stop()); EXITED (ended on its own, with its exit code and the
// runtime's message); healthy from the container's HEALTHCHECK once it has a verdict,
// otherwise empty (the plan's check decides).
// Thread-safe. Calls for one runtime id are serialised; stop() may block for the grace period.

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "drivers/container/podman.h"
#include "drivers/driver.h"
#include "drivers/process/local_volumes.h"
#include "drivers/process/state_store.h"
#include "host/core/clock.h"

namespace tide::drivers {

// A container cluster's driver_config; every key optional.
struct ContainerDriverConfig {
  std::string podman = "podman";  // path or name on PATH
  std::string runtime = "runc";   // podman --runtime (crun fails on cgroup v1 hybrid hosts)
  // --ulimit nofile=N:N and nproc=N:N. Podman's defaults (1048576 open files) fail where the
  // host's own hard limit is lower; 0: the host process's hard limit, at most 65536 and 4096.
  int64_t ulimit_nofile = 0;
  int64_t ulimit_nproc = 0;
  std::chrono::milliseconds stop_grace{10000};
  std::string publish_address = "127.0.0.1";  // host address ports are published on
  std::string network;                        // podman --network; empty: podman's default
  std::string pull = "missing";               // podman run --pull: always, missing, never, newer
  // Host directories whose subtrees coordinates' `mounts` may bind; none by default, so a
  // manifest cannot reach into the host.
  std::vector<std::string> mount_sources;
  std::chrono::milliseconds command_timeout{30000};  // deadline of every podman call but run
  std::chrono::milliseconds start_timeout{300000};   // of `podman run`, which may pull the image
};

// kInvalidArgument naming each bad field ("driver_config.ulimit_nofile").
Result<ContainerDriverConfig> parseContainerDriverConfig(const Json& driver_config);

struct ContainerDriverOptions {
  ContainerDriverConfig config;
  std::string state_dir;    // e.g. <data_dir>/container
  std::string volume_root;  // e.g. <data_dir>/volumes
  int port_range_start = 30000;
  int port_range_end = 32767;
  NodeVolumesFn node_volumes;            // unset: volumes are not limited by capacity
  std::string cluster;                   // scopes list(); empty: every container of this state dir
  size_t log_max_bytes = 10 << 20;       // k8s-file max-size; 0: never rotated
  std::chrono::hours log_retention{24};  // how long a log outlives remove()
  const Clock* clock = nullptr;          // retention is measured on it; null: the system clock
};

class ContainerDriver final : public Driver {
 public:
  // Creates the state directories and writes the pods' containers.conf. kInvalidArgument for
  // a bad port range or empty dirs, kInternal when the directories cannot be created (or
  // what writing the file returns). Does not run podman.
  static Result<std::unique_ptr<ContainerDriver>> create(ContainerDriverOptions options);

  Status ensureVolume(const VolumeSpec& volume) override;
  Status removeVolume(const VolumeRef& volume) override;

  // Coordinates {image, command?, args?, env?, mounts?}. Running: its status. Created or
  // ended: started again (same ports); should that fail, replaced. Unknown: ports assigned,
  // volumes ensured, `podman run -d`. Errors: kInvalidArgument for bad coordinates or a
  // malformed image reference, kUnprocessable for an image that cannot be had or a command
  // the image cannot run (podman's message; no container is left behind),
  // kResourceExhausted when the port range is full, kUnavailable when podman failed otherwise.
  Result<RuntimeStatus> ensure(const RuntimeSpec& spec) override;
  // `podman stop`: SIGTERM, SIGKILL after the grace period. Idempotent.
  Status stop(const RuntimeRef& ref) override;
  // `podman rm -f` after the grace period; the log stays for log_retention. Idempotent.
  Status remove(const RuntimeRef& ref) override;
  // kNotFound when there is no container for the id.
  Result<RuntimeStatus> status(const RuntimeRef& ref) override;
  // One `podman container inspect` for all refs.
  Result<std::vector<RuntimeAnswer>> statusAll(const std::vector<RuntimeRef>& refs) override;
  // One `podman ps`: this driver's containers (of `cluster` when set), sorted by id.
  Result<std::vector<RuntimeRef>> list() override;
  Result<LogSlice> readLogSlice(const std::string& runtime_id, const std::optional<LogCursor>& from,
                                size_t max_bytes) override;

  // The container name of runtime `id`.
  std::string containerName(const std::string& id) const;
  // OK when podman runs here (`podman info`); what `tide doctor` and tests ask.
  Status checkPodman() const { return podman_.info(); }

 private:
  ContainerDriver(ContainerDriverOptions options, StateStore store, std::set<std::string> stopped);

  std::shared_ptr<std::mutex> instanceMutex(const std::string& id);
  // `podman run -d` of a new container; REQUIRES: the id's instance mutex.
  Result<RuntimeStatus> runContainer(const RuntimeSpec& spec);
  // The pod `spec` joins (docs/architecture.md#applications), made with every member's ports
  // published when it is not there yet: its host ports by declared port ("tcp/80").
  Result<std::map<std::string, int>> ensurePod(const RuntimeSpec& spec);
  // After instance part `id` ("<runtime id>.<payload>") was removed: every pod of that
  // runtime id left with only its infra container is removed too.
  Status removeEmptyPods(const std::string& id);
  Status writePodConfig() const;
  std::string podName(const std::string& pod) const { return containerName(pod) + "-pod"; }
  // Starts an existing container that is not running; REQUIRES: the id's instance mutex.
  Result<RuntimeStatus> startExisting(const RuntimeSpec& spec, const ContainerFacts& facts);
  // The error of a failed `podman run`, after what it left behind is removed.
  Status runFailure(const RuntimeSpec& spec, const std::string& image, const CommandOutcome& outcome);
  Status markStopped(const std::string& id, bool stopped);
  bool stopRequested(const std::string& id) const;
  RuntimeStatus describe(const ContainerFacts& facts) const;
  // Deletes logs of removed instances after log_retention; `live`: ids with a container.
  void pruneLogs(const std::set<std::string>& live);

  const ContainerDriverOptions options_;
  const Clock& clock_;
  const Podman podman_;
  const StateStore store_;
  const LocalVolumes volumes_;  // over store_
  const std::string home_;      // the tide.home label: the state dir, absolute
  // The containers.conf a pod's infra container is made with (ensurePod): these ulimits and
  // the configured runtime, as every container of this driver gets (podman pod create has no
  // --ulimit, and podman's default open-file limit is above what runc may set on these
  // machines). Written once, by create().
  const std::string pod_config_;
  const int64_t nofile_;  // the open-file and process ulimits of every container
  const int64_t nproc_;
  std::mutex instance_mus_mu_;
  std::map<std::string, std::shared_ptr<std::mutex>> instance_mus_;  // per runtime id
  mutable std::mutex stopped_mu_;
  std::set<std::string> stopped_;  // GUARDED_BY(stopped_mu_): ids whose stop was asked for
  std::mutex prune_mu_;
  TimePoint next_prune_{};  // GUARDED_BY(prune_mu_)
};

}  // namespace tide::drivers
