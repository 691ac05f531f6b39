#pragma once
// The workload processes a test's host started: they outlive the host by design
// (docs/architecture.md#the-process-driver), so tests count them and end them themselves.

#include <signal.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace tide::testing {

// Live (not zombie) processes whose environment names a runtime instance and `data_dir`.
inline std::vector<pid_t> workloadsOf(const std::string& data_dir) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::stringstream environ;
    environ << std::ifstream(it->path() / "environ").rdbuf();
    const std::string env = environ.str();
    if (env.find("TIDE_RUNTIME_ID=") == std::string::npos || env.find(data_dir) == std::string::npos) continue;
    std::ifstream stat(it->path() / "stat");
    std::string pid, command, state;
    stat >> pid >> command >> state;  // a command with a space only shifts us into its name: not Z
    if (!state.empty() && state != "Z" && state != "X") out.push_back(std::stoi(name));
  }
  return out;
}

// What `ps` shows as `pid`'s command line: its arguments joined by spaces ("" when gone).
inline std::string commandLineOf(pid_t pid) {
  std::stringstream raw;
  raw << std::ifstream("/proc/" + std::to_string(pid) + "/cmdline").rdbuf();
  std::string text = raw.str();
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text) c = c == '\0' ? ' ' : c;
  return text;
}

// The parent of `pid` (0 when gone): the waiter, for a workload (drivers/process/spawn.h).
inline pid_t parentOf(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t name_end = line.rfind(')');  // the name may hold spaces and parentheses
  if (name_end == std::string::npos) return 0;
  std::istringstream rest(line.substr(name_end + 1));
  std::string state;
  pid_t parent = 0;
  rest >> state >> parent;
  return parent;
}

// A number from /proc/<pid>/status ("Threads", "VmRSS" in KiB); 0 when the process is gone.
inline int64_t procStatus(pid_t pid, const std::string& key) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
  }
  return 0;
}

// Private memory of `pid` (Private_Clean + Private_Dirty of smaps_rollup), in KiB: what it
// holds that no other process shares, unlike its RSS, which counts the shared binary.
inline int64_t privateKib(pid_t pid) {
  std::ifstream rollup("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  int64_t kib = 0;
  while (std::getline(rollup, line)) {
    if (line.rfind("Private_Clean:", 0) == 0 || line.rfind("Private_Dirty:", 0) == 0) {
      kib += std::stoll(line.substr(line.find(':') + 1));
    }
  }
  return kib;
}

// Kills every workload of `data_dir` with its process group (each leads its own session).
inline void killWorkloadsOf(const std::string& data_dir) {
  for (pid_t pid : workloadsOf(data_dir)) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
}

// Ends the workloads of `data_dir` when it goes out of scope, also when a REQUIRE failed
// on the way (a failed test left its workloads running).
struct WorkloadsReaper {
  std::string data_dir;
  ~WorkloadsReaper() { killWorkloadsOf(data_dir); }
};

}  // namespace tide::testing
