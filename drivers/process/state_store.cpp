#include "drivers/process/state_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "host/core/durable_file.h"

namespace tide::drivers {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

Json toJson(const InstanceRecord& r) {
  Json volumes = Json::array();
  for (const MountedVolume& v : r.volumes) {
    volumes.push_back({{"id", v.id}, {"mount_path", v.mount_path}, {"host_path", v.host_path}});
  }
  return Json{{"id", r.id},
              {"node", r.node},
              {"cluster", r.cluster},
              {"meta_instance", r.meta_instance},
              {"pid", r.workload.pid},
              {"start_time", r.workload.start_time},
              {"waiter_pid", r.waiter.pid},
              {"waiter_start_time", r.waiter.start_time},
              {"argv", r.argv},
              {"env_names", r.env_names},
              {"ports", r.ports},
              {"volumes", volumes},
              {"stop_requested", r.stop_requested},
              {"starts", r.starts}};
}

// Throws nlohmann::json::exception on a malformed record; the callers catch it.
InstanceRecord instanceFromJson(const Json& j) {
  InstanceRecord r;
  r.id = j.at("id").get<std::string>();
  r.node = j.value("node", "");
  r.cluster = j.value("cluster", "");
  r.meta_instance = j.value("meta_instance", "");
  r.workload = {j.value("pid", 0), j.value("start_time", uint64_t{0})};
  r.waiter = {j.value("waiter_pid", 0), j.value("waiter_start_time", uint64_t{0})};
  r.argv = j.value("argv", std::vector<std::string>{});
  r.env_names = j.value("env_names", std::vector<std::string>{});
  r.ports = j.value("ports", std::map<std::string, int>{});
  for (const Json& v : j.value("volumes", Json::array())) {
    r.volumes.push_back({v.value("id", ""), v.value("mount_path", ""), v.value("host_path", "")});
  }
  r.stop_requested = j.value("stop_requested", false);
  r.starts = j.value("starts", 0);
  return r;
}

Json toJson(const VolumeRecord& r) {
  return Json{{"id", r.id},
              {"node", r.node},
              {"storage_class", r.storage_class},
              {"capacity_gib", r.capacity_gib},
              {"path", r.path}};
}

VolumeRecord volumeFromJson(const Json& j) {
  return {j.at("id").get<std::string>(), j.value("node", ""), j.value("storage_class", ""),
          j.value("capacity_gib", 0.0), j.value("path", "")};
}

Result<std::optional<Json>> readJson(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec) && !ec) return std::optional<Json>();
  std::ifstream in(path);
  if (!in) return Status::internal("cannot read " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  Json parsed = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Status::internal("corrupt state file " + path.string());
  return std::optional<Json>(std::move(parsed));
}

// Removes `path` (nothing when it is not there) durably.
Status removeFile(const fs::path& path, const StateStore::SyncFn& sync) {
  std::error_code ec;
  const bool removed = fs::remove(path, ec);
  if (ec) return Status::internal("cannot remove " + path.string() + ": " + ec.message());
  return removed ? syncDir(path.parent_path(), sync) : Status::ok();
}

std::vector<fs::path> filesWithExtension(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == extension) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

bool isSafeName(const std::string& name) {
  if (name.empty() || name.front() == '.' || name.size() > 200) return false;
  return std::all_of(name.begin(), name.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '.' || c == '_' || c == '-'; });
}

Status badName(const std::string& field, const std::string& value) {
  return Status::invalidArgument(
      "invalid " + field,
      {{field, "\"" + value + "\" is not a usable name ([A-Za-z0-9._-], not starting with '.')", ""}});
}

Result<StateStore> StateStore::open(const std::string& state_dir, SyncFn sync) {
  std::error_code ec;
  fs::path dir = fs::absolute(state_dir, ec);
  if (ec) return Status::internal("bad state dir " + state_dir + ": " + ec.message());
  for (const char* sub : {"instances", "logs", "volumes", "workloads"}) {
    fs::create_directories(dir / sub, ec);
    if (ec) return Status::internal("cannot create " + (dir / sub).string() + ": " + ec.message());
  }
  // Records, logs and working dirs are the host's and each workload's own business.
  fs::permissions(dir, fs::perms::owner_all, ec);
  if (ec) return Status::internal("cannot restrict " + dir.string() + " to its owner: " + ec.message());
  if (!sync) sync = [](int fd) { return ::fsync(fd); };
  return StateStore(dir.lexically_normal().string(), std::move(sync));
}

StateStore::Lock::~Lock() {
  if (fd_ >= 0) close(fd_);  // closing the descriptor releases the flock
}

StateStore::Lock StateStore::lock() const {
  // A descriptor of its own per call: flock excludes other open file descriptions, which
  // covers other threads of this process as well as other processes.
  int fd = ::open((fs::path(dir_) / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
  }
  return Lock(fd);
}

std::string StateStore::logPath(const std::string& id) const {
  return (fs::path(dir_) / "logs" / (id + ".log")).string();
}

std::string StateStore::exitPath(const std::string& id) const {
  return (fs::path(dir_) / "instances" / (id + ".exit")).string();
}

std::string StateStore::instancePath(const std::string& id) const {
  return (fs::path(dir_) / "instances" / (id + ".json")).string();
}

std::string StateStore::workDir(const std::string& id) const {
  return (fs::path(dir_) / "workloads" / id).string();
}

std::optional<TimePoint> StateStore::goneSince(const std::string& id) const {
  std::ifstream in(fs::path(dir_) / "logs" / (id + ".gone"));
  std::string text;
  if (!(in >> text)) return std::nullopt;
  Result<TimePoint> when = parseTimestamp(text);
  if (!when.isOk()) return std::nullopt;
  return *when;
}

Status StateStore::markGone(const std::string& id, TimePoint when) const {
  return writeFileDurably(fs::path(dir_) / "logs" / (id + ".gone"), formatTimestamp(when) + "\n", sync_);
}

Status StateStore::clearGone(const std::string& id) const {
  return removeFile(fs::path(dir_) / "logs" / (id + ".gone"), sync_);
}

std::vector<std::string> StateStore::leftoverIds() const {
  std::set<std::string> ids;
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(dir_) / "workloads", ec), end; !ec && it != end; it.increment(ec)) {
    ids.insert(it->path().filename().string());
  }
  for (fs::directory_iterator it(fs::path(dir_) / "logs", ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    for (std::string_view suffix : {".log", ".log.1", ".log.next", ".gone"}) {
      if (name.size() > suffix.size() && name.ends_with(suffix)) ids.insert(name.substr(0, name.size() - suffix.size()));
    }
  }
  return {ids.begin(), ids.end()};
}

Status StateStore::removeLeftovers(const std::string& id) const {
  TIDE_RETURN_IF_ERROR(removeFile(logPath(id), sync_));
  TIDE_RETURN_IF_ERROR(removeFile(logPath(id) + ".1", sync_));
  TIDE_RETURN_IF_ERROR(removeFile(logPath(id) + ".next", sync_));  // a rotation cut short
  std::error_code ec;
  fs::remove_all(workDir(id), ec);
  if (ec) return Status::internal("cannot remove " + workDir(id) + ": " + ec.message());
  return clearGone(id);
}

Result<std::optional<InstanceRecord>> StateStore::loadInstance(const std::string& id) const {
  fs::path path = instancePath(id);
  TIDE_ASSIGN_OR_RETURN(std::optional<Json> json, readJson(path));
  if (!json) return std::optional<InstanceRecord>();
  try {
    return std::optional<InstanceRecord>(instanceFromJson(*json));
  } catch (const nlohmann::json::exception& e) {
    return Status::internal("corrupt state file " + path.string() + ": " + e.what());
  }
}

Status StateStore::saveInstance(const InstanceRecord& record) const {
  return writeFileDurably(instancePath(record.id), toJson(record).dump(2) + "\n", sync_);
}

Status StateStore::removeInstance(const std::string& id) const {
  TIDE_RETURN_IF_ERROR(removeFile(exitPath(id), sync_));
  return removeFile(instancePath(id), sync_);
}

std::vector<std::string> StateStore::instanceIds() const {
  std::vector<std::string> ids;
  for (const fs::path& path : filesWithExtension(fs::path(dir_) / "instances", ".json")) {
    ids.push_back(path.stem().string());
  }
  return ids;
}

std::map<std::string, FileStamp> StateStore::instanceStamps() const {
  std::map<std::string, FileStamp> out;
  const std::string dir = (fs::path(dir_) / "instances").string();
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return out;
  constexpr std::string_view kExtension = ".json";
  while (const dirent* entry = ::readdir(listing)) {
    const std::string_view name = entry->d_name;
    if (name.size() <= kExtension.size() || !name.ends_with(kExtension)) continue;
    struct stat file {};
    if (::fstatat(::dirfd(listing), entry->d_name, &file, 0) != 0 || !S_ISREG(file.st_mode)) continue;
    out[std::string(name.substr(0, name.size() - kExtension.size()))] = {
        static_cast<uint64_t>(file.st_ino), static_cast<int64_t>(file.st_size),
        static_cast<int64_t>(file.st_mtim.tv_sec) * 1'000'000'000 + file.st_mtim.tv_nsec};
  }
  ::closedir(listing);
  return out;
}

bool StateStore::hasInstance(const std::string& id) const {
  std::error_code ec;
  return fs::exists(instancePath(id), ec);
}

std::optional<int> StateStore::readExitCode(const std::string& id) const {
  std::ifstream in(exitPath(id));
  int code = 0;
  if (!(in >> code)) return std::nullopt;
  return code;
}

Result<std::optional<VolumeRecord>> StateStore::loadVolume(const std::string& node, const std::string& id) const {
  fs::path path = fs::path(dir_) / "volumes" / node / (id + ".json");
  TIDE_ASSIGN_OR_RETURN(std::optional<Json> json, readJson(path));
  if (!json) return std::optional<VolumeRecord>();
  try {
    return std::optional<VolumeRecord>(volumeFromJson(*json));
  } catch (const nlohmann::json::exception& e) {
    return Status::internal("corrupt volume record " + path.string() + ": " + e.what());
  }
}

Status StateStore::saveVolume(const VolumeRecord& record) const {
  fs::path dir = fs::path(dir_) / "volumes" / record.node;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::internal("cannot create " + dir.string() + ": " + ec.message());
  return writeFileDurably(dir / (record.id + ".json"), toJson(record).dump(2) + "\n", sync_);
}

Status StateStore::removeVolume(const std::string& node, const std::string& id) const {
  return removeFile(fs::path(dir_) / "volumes" / node / (id + ".json"), sync_);
}

Result<std::vector<VolumeRecord>> StateStore::volumesOn(const std::string& node) const {
  std::vector<VolumeRecord> out;
  for (const fs::path& path : filesWithExtension(fs::path(dir_) / "volumes" / node, ".json")) {
    TIDE_ASSIGN_OR_RETURN(std::optional<VolumeRecord> record, loadVolume(node, path.stem().string()));
    if (record) out.push_back(std::move(*record));
  }
  return out;
}

Result<std::optional<Json>> readJsonFile(const std::string& path) { return readJson(path); }

}  // namespace tide::drivers
