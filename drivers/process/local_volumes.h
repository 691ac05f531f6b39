#pragma once
// Volumes as directories on this machine, <volume root>/<node>/<storage class>/<volume id>/,
// with capacity accounted in a StateStore (volumes/<node>/<id>.json) against the node's
// declared local volumes: what the process driver hands its workloads and the container
// driver bind-mounts into its containers (docs/architecture.md#the-process-driver).
//
// Thread-safe: every call holds the store's file lock around its read-modify-write, which
// excludes other threads, drivers and hosts over the same state dir alike.

#include <string>
#include <vector>

#include "drivers/driver.h"
#include "drivers/process/state_store.h"

namespace tide::drivers {

class LocalVolumes {
 public:
  // `store` must outlive this. `node_volumes` unset: volumes are not limited by capacity.
  LocalVolumes(const StateStore& store, std::string volume_root, NodeVolumesFn node_volumes)
      : store_(store), volume_root_(std::move(volume_root)), node_volumes_(std::move(node_volumes)) {}

  // Idempotent by (node, id). kInvalidArgument for an id, node or class that is not a safe
  // name, kUnprocessable when the node's declared capacity of the storage class left over by
  // its other volumes is smaller than requested; kConflict when the id exists with another
  // storage class or capacity; kInternal when the directory cannot be created.
  Status ensure(const VolumeSpec& volume) const;
  // Deletes the directory and its accounting. Idempotent.
  Status remove(const VolumeRef& volume) const;
  // ensure() of each of the spec's volumes (on spec.node when one names no node): where each
  // is mounted and its directory.
  Result<std::vector<MountedVolume>> mount(const RuntimeSpec& spec) const;

 private:
  const StateStore& store_;
  const std::string volume_root_;
  const NodeVolumesFn node_volumes_;
};

}  // namespace tide::drivers
