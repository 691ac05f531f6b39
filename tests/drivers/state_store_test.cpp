// The process driver's state files: what is synced, and what a failed sync leaves.

#include "drivers/process/state_store.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/drivers/driver_test_support.h"

namespace tide {
namespace {

using drivers::InstanceRecord;
using drivers::StateStore;
using testing::TempDir;

// A sync that records what it was asked to sync (files and directories) and fails, with
// EIO, the calls whose number (from 1) is in `failing`.
struct RecordingSync {
  std::vector<bool> directories;  // one per call: was it a directory
  std::vector<int> failing;

  StateStore::SyncFn fn() {
    return [this](int fd) {
      struct stat info {};
      ::fstat(fd, &info);
      directories.push_back(S_ISDIR(info.st_mode));
      if (std::find(failing.begin(), failing.end(), static_cast<int>(directories.size())) != failing.end()) {
        errno = EIO;
        return -1;
      }
      return ::fsync(fd);
    };
  }
};

InstanceRecord savedRecord(const std::string& id, int starts) {
  InstanceRecord r;
  r.id = id;
  r.node = "worker-1";
  r.starts = starts;
  return r;
}

// Files left under instances/ besides the records: temp files of an interrupted write.
size_t tempFiles(const TempDir& dir) {
  size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path() / "instances")) {
    n += entry.path().filename().string().find(".tmp.") != std::string::npos;
  }
  return n;
}

TEST_CASE("state store: a saved record is synced, and then its directory") {
  TempDir dir;
  RecordingSync sync;
  auto store = StateStore::open(dir.path().string(), sync.fn());
  REQUIRE(store.isOk());
  REQUIRE(store->saveInstance(savedRecord("7", 1)).isOk());
  CHECK(sync.directories == std::vector<bool>{false, true});

  sync.directories.clear();
  REQUIRE(store->removeInstance("7").isOk());
  CHECK(sync.directories == std::vector<bool>{true});  // the record's removal; there was no exit file
}

TEST_CASE("state store: a record whose sync fails is not saved, and the old one stays") {
  TempDir dir;
  RecordingSync sync;
  auto store = StateStore::open(dir.path().string(), sync.fn());
  REQUIRE(store.isOk());
  REQUIRE(store->saveInstance(savedRecord("7", 1)).isOk());

  sync.directories.clear();
  sync.failing = {1};  // the new file's own sync
  Status saved = store->saveInstance(savedRecord("7", 2));
  CHECK(saved.code() == Code::kInternal);
  CHECK(saved.message().find("cannot sync") != std::string::npos);
  CHECK(saved.message().find("7.json") != std::string::npos);
  CHECK(saved.message().find("Input/output error") != std::string::npos);
  auto loaded = store->loadInstance("7");
  REQUIRE(loaded.isOk());
  REQUIRE(loaded->has_value());
  CHECK((*loaded)->starts == 1);
  CHECK(tempFiles(dir) == 0);
}

TEST_CASE("state store: a failed sync of the directory after the rename is an error") {
  TempDir dir;
  RecordingSync sync;
  auto store = StateStore::open(dir.path().string(), sync.fn());
  REQUIRE(store.isOk());
  sync.failing = {2};  // the directory's sync
  Status saved = store->saveInstance(savedRecord("7", 1));
  CHECK(saved.code() == Code::kInternal);
  CHECK(saved.message().find("cannot sync " + (dir.path() / "instances").string()) != std::string::npos);
  CHECK(tempFiles(dir) == 0);
}

}  // namespace
}  // namespace tide
