#include "drivers/process/workload_user.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

namespace tide::drivers {

Result<WorkloadUser> lookUpWorkloadUser(const std::string& name, const std::string& field) {
  auto bad = [&](const std::string& message) {
    return Status::invalidArgument(field + ": " + message, {{field, message, ""}});
  };
  if (::geteuid() != 0) {
    return bad("starting workloads as user \"" + name + "\" needs a host running as root (this one runs as uid " +
               std::to_string(::geteuid()) + ")");
  }
  std::vector<char> buffer(16384);
  passwd entry{};
  passwd* found = nullptr;
  if (getpwnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) {
    return bad("no user \"" + name + "\" on this machine");
  }
  if (found->pw_uid == 0) return bad("\"" + name + "\" is root; name an unprivileged user");
  WorkloadUser user{name, found->pw_uid, found->pw_gid, {}};
  int count = 32;
  user.groups.resize(static_cast<size_t>(count));
  while (getgrouplist(name.c_str(), user.gid, user.groups.data(), &count) < 0) {
    user.groups.resize(static_cast<size_t>(count));
  }
  user.groups.resize(static_cast<size_t>(count));
  return user;
}

}  // namespace tide::drivers
