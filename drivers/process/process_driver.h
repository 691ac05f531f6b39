#pragma once
// The `process` driver (docs/architecture.md#drivers): every node of a process cluster is a logical node on
// this machine, and every runtime instance is a local process tree.
//
// - A process runs in a session and process group of its own, detached from the host
//   (spawn.h), so it survives a host restart. stdout and stderr are appended to
//   <state dir>/logs/<runtime id>.log, rotated to <runtime id>.log.1 at log_max_bytes.
// - A process sees nothing of the host: it starts in its own working directory
//   <state dir>/workloads/<runtime id>/ (0700, owned by run_as when set), with only its
//   declared environment, the TIDE_* variables, HOME (its working dir) and a minimal PATH,
//   and with no descriptor of the host's but stdin (/dev/null), stdout and stderr.
// - remove() marks the instance gone; its log and working dir are deleted log_retention
//   later (by `clock`), by pruneRemoved(), which list() runs at most once a minute.
// - Each instance has a record under <state dir>/instances (state_store.h). The driver keeps
//   the records in memory: it loads them once when created and writes a record's file (the
//   journal) before changing it in memory, so a new driver over the same state dir re-adopts
//   every instance. status(), statusAll() and list() answer from memory plus a liveness
//   check (/proc/<pid>/stat, skipped once the workload was seen gone); they read a record's
//   file only for an id memory does not hold (one another driver over the same state dir
//   recorded after this one started), and the exit file once per exit. A pid counts as the
//   instance's only while /proc/<pid>/stat shows the recorded start time, so a reused pid is
//   never signalled.
// - Declared ports get host ports from the configured range, unique among all records of
//   the state dir, checked free by binding before first use, and kept across restarts.
// - Volumes are directories <volume root>/<node>/<storage class>/<volume id>/ with
//   capacity accounting against the node's declared local volumes.
//
// Status states: RUNNING; STOPPED (exited after stop()); EXITED (exited on its own, with
// its exit code: the status it returned, 128 + signal when killed, -1 when unknown).
// Thread-safe. Calls for one runtime id are serialised; stop() may block for the grace period.

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "drivers/driver.h"
#include "drivers/process/launch.h"
#include "drivers/process/local_volumes.h"
#include "drivers/process/state_store.h"
#include "drivers/process/workload_user.h"
#include "host/core/clock.h"

namespace tide::drivers {

struct ProcessDriverOptions {
  std::string state_dir;    // e.g. <data_dir>/process
  std::string volume_root;  // e.g. <data_dir>/volumes
  int port_range_start = 30000;
  int port_range_end = 32767;
  ImageCatalog image_catalog;
  std::string tide_binary;                      // what {{tide}} stands for
  std::chrono::milliseconds stop_grace{10000};  // SIGTERM → SIGKILL
  NodeVolumesFn node_volumes;                   // unset: volumes are not limited by capacity
  // When set, records carry it and list() reports only this cluster's instances, so two
  // process clusters sharing a state dir do not see each other's instances as orphans.
  std::string cluster;
  std::optional<WorkloadUser> run_as;  // workloads run as this user; nullopt: the host's user
  size_t log_max_bytes = 10 << 20;     // a log is rotated to <log>.1 beyond this; 0: never
  std::chrono::hours log_retention{24};  // how long the log and working dir outlive remove()
  const Clock* clock = nullptr;          // retention is measured on it; null: the system clock
};

// A process cluster's driver_config: {"stop_grace_seconds": N} (optional, in [0, 3600]).
// The rest of a ProcessDriverOptions is the host's (DriverContext), not the cluster's.
struct ProcessDriverConfig {
  std::chrono::milliseconds stop_grace{10000};
};

// kInvalidArgument naming each bad field ("driver_config.stop_grace_seconds").
Result<ProcessDriverConfig> parseProcessDriverConfig(const Json& driver_config);

class ProcessDriver final : public Driver {
 public:
  // Creates the state directories. kInvalidArgument for a bad port range or empty dirs,
  // kInternal when the directories cannot be created.
  static Result<std::unique_ptr<ProcessDriver>> create(ProcessDriverOptions options);

  // Idempotent by (node, id). kUnprocessable when the node's declared capacity of the
  // storage class left over by its other volumes is smaller than requested; kConflict when
  // the id exists with another storage class or capacity.
  Status ensureVolume(const VolumeSpec& volume) override;
  // Deletes the directory and its accounting. Idempotent.
  Status removeVolume(const VolumeRef& volume) override;

  // Running: its status. Recorded but exited: started again with the same host ports.
  // Unknown: ports assigned, volumes ensured, started. Errors: kInvalidArgument for bad
  // coordinates, kUnprocessable for an unknown image or a command that cannot be
  // executed, kResourceExhausted when the port range is full.
  Result<RuntimeStatus> ensure(const RuntimeSpec& spec) override;
  // SIGTERM to the process group, SIGKILL after the grace period. Idempotent; kUnavailable
  // when the group survives SIGKILL.
  Status stop(const RuntimeRef& ref) override;
  // stop(), then forget the instance and release its ports. The log and working dir stay
  // for log_retention. Idempotent.
  Status remove(const RuntimeRef& ref) override;
  // kNotFound for an id without a record.
  Result<RuntimeStatus> status(const RuntimeRef& ref) override;
  // status() of each ref, the records looked up under one lock.
  Result<std::vector<RuntimeAnswer>> statusAll(const std::vector<RuntimeRef>& refs) override;
  // Every instance in memory (of `cluster`, when set), sorted by id: the records found when
  // the driver was created and those it wrote since.
  Result<std::vector<RuntimeRef>> list() override;

  // The last `max_bytes` of the instance's log, reaching into the rotated log when the
  // current one is shorter (kept after remove, for log_retention). kNotFound when there is no log.
  Result<std::string> readLog(const std::string& runtime_id, size_t max_bytes);
  // Without `from`, readLog's text; with it, at most `max_bytes` from that place on: in the
  // current log, or in the rotated one when `from.file` names the file rotated away (then
  // on into the current log), so a follower misses nothing across a rotation. From an
  // offset beyond the file's end, or a file that is neither, the text starts again at the
  // current log's start (`continues` false). Either way the slice says where it ends.
  Result<LogSlice> readLogSlice(const std::string& runtime_id, const std::optional<LogCursor>& from,
                                size_t max_bytes) override;

  // Deletes the logs and working dirs of instances removed log_retention ago or earlier,
  // and marks as removed now what no record or mark accounts for (an older tide's logs, a
  // start that failed). Safe beside other drivers over the same state dir.
  Status pruneRemoved();

 private:
  // A record and what the driver learnt since it was written.
  struct Known {
    InstanceRecord record;
    bool gone = false;             // the workload was seen exited (a process never comes back)
    std::optional<int> exit_code;  // read from the exit file once the waiter wrote it
  };
  // What describing an instance needs of its Known, copied out under known_mu_.
  struct Sighting {
    ProcessIdentity workload;
    ProcessIdentity waiter;
    bool stop_requested = false;
    std::map<std::string, int> ports;
    bool gone = false;
    std::optional<int> exit_code;
  };

  ProcessDriver(ProcessDriverOptions options, StateStore store, std::map<std::string, Known> known);

  std::shared_ptr<std::mutex> instanceMutex(const std::string& id);
  // The record of `id`: memory's, else the journal's (then kept in memory). nullopt when
  // there is none; kInternal when its file cannot be read. REQUIRES: the id's instance mutex.
  Result<std::optional<InstanceRecord>> recorded(const std::string& id);
  // Writes the record's file, then memory. REQUIRES: the id's instance mutex.
  Status record(const InstanceRecord& record);
  // Removes the record's file, then memory. REQUIRES: the id's instance mutex.
  Status forget(const std::string& id);
  static Sighting sightingOf(const InstanceRecord& record);    // as if nothing was learnt yet
  std::optional<Sighting> sight(const std::string& id) const;  // REQUIRES: known_mu_
  // Liveness and exit code of what `seen` shows, remembered in memory when learnt.
  RuntimeStatus describe(const std::string& id, const Sighting& seen);
  // status() of an id memory does not hold.
  Result<RuntimeStatus> statusFromJournal(const std::string& id);
  // REQUIRES: store_mu_ and the store's file lock are held.
  Result<std::map<std::string, int>> assignPorts(const RuntimeSpec& spec, const std::map<std::string, int>& kept);
  // The host ports every record of the state dir but `id`'s holds, by the records on disk:
  // another driver over the same dir may have written them. REQUIRES: as assignPorts.
  std::set<int> portsOfOthers(const std::string& id);
  Status stopLocked(const std::string& id);  // REQUIRES: the id's instance mutex is held
  Status terminate(const ProcessIdentity& workload, std::chrono::milliseconds grace) const;
  // Creates the working dir of `id` (0700, owned by run_as when set). kInternal on failure.
  Result<std::string> prepareWorkDir(const std::string& id) const;
  void pruneWhenDue();

  const ProcessDriverOptions options_;
  const Clock& clock_;
  const StateStore store_;
  const LocalVolumes volumes_;  // over store_
  std::mutex store_mu_;  // with store_.lock(): read-modify-write of records across ids
  // The ports of each record file as last read, and which version of the file that was:
  // portsOfOthers() parses only the records that changed (it parsed all of them for every
  // start before, half the host's CPU while 1,000 workloads started).
  struct RecordPorts {
    FileStamp stamp;
    std::vector<int> ports;
  };
  std::map<std::string, RecordPorts> record_ports_;  // GUARDED_BY(store_mu_), by runtime id
  std::mutex instance_mus_mu_;
  std::map<std::string, std::shared_ptr<std::mutex>> instance_mus_;  // per runtime id
  mutable std::mutex known_mu_;                                      // never held while waiting for anything
  std::map<std::string, Known> known_;                               // GUARDED_BY(known_mu_), by runtime id
  std::mutex prune_mu_;
  TimePoint next_prune_{};  // GUARDED_BY(prune_mu_)
};

}  // namespace tide::drivers
