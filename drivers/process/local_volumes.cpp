#include "drivers/process/local_volumes.h"

#include <cmath>
#include <filesystem>
#include <sstream>

namespace tide::drivers {
namespace {

namespace fs = std::filesystem;

constexpr double kCapacityEpsilon = 1e-9;

}  // namespace

Status LocalVolumes::ensure(const VolumeSpec& volume) const {
  if (!isSafeName(volume.id)) return badName("volume.id", volume.id);
  if (!isSafeName(volume.node)) return badName("volume.node", volume.node);
  if (!isSafeName(volume.storage_class)) return badName("volume.storage_class", volume.storage_class);
  if (!(volume.capacity_gib >= 0))
    return Status::invalidArgument("volume " + volume.id + ": capacity_gib must be >= 0");

  StateStore::Lock file_lock = store_.lock();
  TIDE_ASSIGN_OR_RETURN(std::optional<VolumeRecord> existing, store_.loadVolume(volume.node, volume.id));
  std::error_code ec;
  if (existing) {
    if (existing->storage_class != volume.storage_class ||
        std::fabs(existing->capacity_gib - volume.capacity_gib) > kCapacityEpsilon) {
      return Status::conflict("volume " + volume.id + " on node " + volume.node + " exists as " +
                              std::to_string(existing->capacity_gib) + " GiB of " + existing->storage_class);
    }
    fs::create_directories(existing->path, ec);
    if (ec) return Status::internal("cannot create " + existing->path + ": " + ec.message());
    return Status::ok();
  }

  if (node_volumes_) {
    double declared = 0;
    for (const model::LocalVolume& local : node_volumes_(volume.node)) {
      if (local.storage_class == volume.storage_class) declared += local.capacity_gib;
    }
    TIDE_ASSIGN_OR_RETURN(std::vector<VolumeRecord> on_node, store_.volumesOn(volume.node));
    double used = 0;
    for (const VolumeRecord& other : on_node) {
      if (other.storage_class == volume.storage_class) used += other.capacity_gib;
    }
    if (used + volume.capacity_gib > declared + kCapacityEpsilon) {
      std::ostringstream message;
      message << "node " << volume.node << " has " << (declared - used) << " GiB of storage class "
              << volume.storage_class << " left (" << declared << " declared), volume " << volume.id << " needs "
              << volume.capacity_gib;
      return Status::unprocessable(message.str());
    }
  }

  // The record first: a crash after it leaves accounted space without a directory, which
  // the next ensure creates, never a directory nobody accounts for.
  VolumeRecord record{volume.id, volume.node, volume.storage_class, volume.capacity_gib,
                      (fs::path(volume_root_) / volume.node / volume.storage_class / volume.id).string()};
  TIDE_RETURN_IF_ERROR(store_.saveVolume(record));
  fs::create_directories(record.path, ec);
  if (ec) {
    (void)store_.removeVolume(volume.node, volume.id);  // best effort: the error below is what the caller needs
    return Status::internal("cannot create " + record.path + ": " + ec.message());
  }
  return Status::ok();
}

Status LocalVolumes::remove(const VolumeRef& volume) const {
  if (!isSafeName(volume.id)) return badName("volume.id", volume.id);
  if (!isSafeName(volume.node)) return badName("volume.node", volume.node);
  StateStore::Lock file_lock = store_.lock();
  TIDE_ASSIGN_OR_RETURN(std::optional<VolumeRecord> record, store_.loadVolume(volume.node, volume.id));
  std::vector<fs::path> dirs;
  std::error_code ec;
  if (record) {
    dirs.emplace_back(record->path);
  } else {
    // No accounting (a crash between the two steps of ensure): look in every class.
    fs::path node_dir = fs::path(volume_root_) / volume.node;
    for (fs::directory_iterator it(node_dir, ec), end; !ec && it != end; it.increment(ec)) {
      dirs.push_back(it->path() / volume.id);
    }
  }
  for (const fs::path& dir : dirs) {
    fs::remove_all(dir, ec);
    if (ec) return Status::internal("cannot remove " + dir.string() + ": " + ec.message());
  }
  return store_.removeVolume(volume.node, volume.id);
}

Result<std::vector<MountedVolume>> LocalVolumes::mount(const RuntimeSpec& spec) const {
  std::vector<MountedVolume> mounted;
  for (VolumeSpec volume : spec.volumes) {
    if (volume.node.empty()) volume.node = spec.node;
    TIDE_RETURN_IF_ERROR(ensure(volume));
    TIDE_ASSIGN_OR_RETURN(std::optional<VolumeRecord> record, store_.loadVolume(volume.node, volume.id));
    if (!record) return Status::unavailable("volume " + volume.id + " vanished while starting " + spec.id);
    mounted.push_back({volume.id, volume.mount_path, record->path});
  }
  return mounted;
}

}  // namespace tide::drivers
