#pragma once
// The user workloads run as (host config `process.run_as`), looked up once at start so the
// fork that drops to it needs no lookups (they are not async-signal-safe).

#include <sys/types.h>

#include <string>
#include <vector>

#include "host/core/status.h"

namespace tide::drivers {

struct WorkloadUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups, the primary one included
};

// `name` from the user database. kInvalidArgument naming `field` when the user is unknown or
// is root, or when this process is not root (only root can start processes as another user).
Result<WorkloadUser> lookUpWorkloadUser(const std::string& name, const std::string& field);

}  // namespace tide::drivers
