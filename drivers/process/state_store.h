#pragma once
// The process driver's memory on disk, under its state dir:
//   instances/<runtime id>.json   one record per instance (written via temp file + rename)
//   instances/<runtime id>.exit   the exit code, written by the instance's waiter
//   logs/<runtime id>.log         stdout + stderr of the instance, kept after remove
//   logs/<runtime id>.log.1       the log before it was last rotated
//   logs/<runtime id>.gone        when the instance was removed (an RFC 3339 time): its log
//                                 and working dir are deleted a retention period later
//   workloads/<runtime id>/       the instance's working directory (0700)
//   volumes/<node>/<volume id>.json  capacity accounting of each volume directory
//   lock                          flock'ed around read-modify-write of the records, so
//                                 several drivers (or hosts) over one state dir agree
// Records are the only truth: a new driver over the same dir re-adopts everything.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "drivers/process/proc_stat.h"
#include "host/core/clock.h"
#include "host/core/durable_file.h"
#include "host/core/status.h"

namespace tide::drivers {

struct MountedVolume {
  std::string id;
  std::string mount_path;
  std::string host_path;
};

struct InstanceRecord {
  std::string id;
  std::string node;
  std::string cluster;  // the cluster whose driver created it; scopes list()
  std::string meta_instance;
  ProcessIdentity workload;  // pid 0 until the first start succeeded
  ProcessIdentity waiter;
  std::vector<std::string> argv;
  std::vector<std::string> env_names;  // names only: values may be secrets
  std::map<std::string, int> ports;    // "tcp/80" → host port
  std::vector<MountedVolume> volumes;
  bool stop_requested = false;  // stop()/remove() asked for the exit: STOPPED, not EXITED
  int starts = 0;
};

struct VolumeRecord {
  std::string id;
  std::string node;
  std::string storage_class;
  double capacity_gib = 0;
  std::string path;
};

// True for names usable as one path component: [A-Za-z0-9._-], not starting with '.'.
bool isSafeName(const std::string& name);
// kInvalidArgument: `value` of `field` is not such a name (the detail names the field).
Status badName(const std::string& field, const std::string& value);

// Which version of a file: a write (a new file renamed into place) changes it.
struct FileStamp {
  uint64_t inode = 0;
  int64_t size = -1;
  int64_t modified_ns = 0;
  bool operator==(const FileStamp&) const = default;
};

// Thread-safe: every call touches files only; callers serialise read-modify-write
// sequences with lock().
class StateStore {
 public:
  // What makes a file's or directory's content durable: fsync(2), or what a test puts in
  // its place to see failures handled. Returns 0 or -1 with errno set.
  using SyncFn = tide::SyncFn;

  // Creates the directories. kInternal when that fails. Every write and removal below is
  // synced (the file, then its directory) before it returns ok; a sync that fails is an
  // error (kInternal naming the file), never ignored. `sync` empty: fsync(2).
  static Result<StateStore> open(const std::string& state_dir, SyncFn sync = nullptr);

  // An exclusive flock on <state dir>/lock, released by the destructor. Blocks.
  class Lock {
   public:
    explicit Lock(int fd) : fd_(fd) {}
    Lock(Lock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    Lock& operator=(Lock&&) = delete;
    ~Lock();

   private:
    int fd_;
  };
  Lock lock() const;

  const std::string& dir() const { return dir_; }
  std::string logPath(const std::string& id) const;
  std::string exitPath(const std::string& id) const;
  std::string instancePath(const std::string& id) const;  // the record's file
  std::string workDir(const std::string& id) const;

  // The time marked by markGone, nullopt when there is no (readable) mark.
  std::optional<TimePoint> goneSince(const std::string& id) const;
  Status markGone(const std::string& id, TimePoint when) const;
  Status clearGone(const std::string& id) const;
  // Every id with a log, a rotated log, a gone mark or a working dir; sorted.
  std::vector<std::string> leftoverIds() const;
  // The log, the rotated log and the working dir, then the gone mark (so an interrupted
  // removal is retried). Idempotent.
  Status removeLeftovers(const std::string& id) const;

  // nullopt when there is no record; kInternal when it cannot be read or parsed.
  Result<std::optional<InstanceRecord>> loadInstance(const std::string& id) const;
  Status saveInstance(const InstanceRecord& record) const;
  Status removeInstance(const std::string& id) const;  // record and exit file; the log stays
  std::vector<std::string> instanceIds() const;        // sorted
  // Every record's id and file stamp, by id: one directory read and a stat per record, no
  // parsing.
  std::map<std::string, FileStamp> instanceStamps() const;
  bool hasInstance(const std::string& id) const;       // a record exists (a stat, no read)
  // The code in the exit file, nullopt when the waiter has not written one.
  std::optional<int> readExitCode(const std::string& id) const;

  Result<std::optional<VolumeRecord>> loadVolume(const std::string& node, const std::string& id) const;
  Status saveVolume(const VolumeRecord& record) const;
  Status removeVolume(const std::string& node, const std::string& id) const;
  // Every volume record of `node`; kInternal when one cannot be read (capacity accounting
  // fails closed rather than ignore a volume).
  Result<std::vector<VolumeRecord>> volumesOn(const std::string& node) const;

 private:
  StateStore(std::string dir, SyncFn sync) : dir_(std::move(dir)), sync_(std::move(sync)) {}
  std::string dir_;
  SyncFn sync_;
};

// Small state files beside the records (a node agent's agent.json, the agent hub's documents)
// are written with writeFileDurably (host/core/durable_file.h) and read with this:
// the JSON in `path`; nullopt when there is no such file, kInternal when it cannot be read or parsed.
Result<std::optional<nlohmann::json>> readJsonFile(const std::string& path);

}  // namespace tide::drivers
