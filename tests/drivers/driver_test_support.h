#pragma once
// Fixtures for driver tests: a temporary directory, a process driver over it that kills
// every process group it started when the test ends, and polling helpers (tests wait for
// outcomes with generous bounds instead of sleeping).

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "drivers/process/proc_stat.h"
#include "drivers/process/process_driver.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"
#include "tests/support/temp_dir.h"

namespace tide::testing {

// Runtime `id` of a web payload (image nginx:1.25, TCP port 80) on `node`, as the executor
// would hand it to a driver.
inline drivers::RuntimeSpec webSpec(const std::string& id, const std::string& node = "n1") {
  drivers::RuntimeSpec spec;
  spec.id = id;
  spec.node = node;
  spec.meta_instance = "web-" + id;
  spec.payload_name = "web";
  spec.coordinates = nlohmann::json{{"image", "nginx:1.25"}};
  spec.ports = {{"TCP", 80}};
  return spec;
}

inline std::string readText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The text of a file once it ends with a newline (written completely), or "" on timeout.
inline std::string awaitLine(const std::string& path) {
  std::string text;
  eventually([&] {
    text = readText(path);
    return !text.empty() && text.back() == '\n';
  });
  return text;
}

// Alive and not a zombie (orphans may linger as zombies when pid 1 does not reap).
inline bool processAlive(pid_t pid) {
  std::optional<drivers::ProcStat> stat = drivers::readProcStat(pid);
  return stat && stat->state != 'Z' && stat->state != 'X';
}

// "pid:<pid>:<start time>" → identity.
inline drivers::ProcessIdentity parseHandle(const std::string& handle) {
  drivers::ProcessIdentity identity;
  unsigned long long start = 0;
  int pid = 0;
  if (std::sscanf(handle.c_str(), "pid:%d:%llu", &pid, &start) == 2) identity = {pid, start};
  return identity;
}

// A process driver over a fresh state dir. The destructor SIGKILLs the process group of
// every instance still recorded there, so no test leaves processes behind.
struct ProcessDriverFixture {
  TempDir dir;
  drivers::ProcessDriverOptions options;
  std::unique_ptr<drivers::ProcessDriver> driver;

  explicit ProcessDriverFixture(int port_start = 0, int port_count = 50) {
    if (port_start == 0) port_start = nextPortRange(port_count).start;
    options.state_dir = dir.file("process");
    options.volume_root = dir.file("volumes");
    options.port_range_start = port_start;
    options.port_range_end = port_start + port_count - 1;
    options.stop_grace = std::chrono::milliseconds(2000);
    options.tide_binary = TIDE_BINARY;
    reopen();
  }

  void reopen() {
    auto created = drivers::ProcessDriver::create(options);
    REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    driver = std::move(created).value();
  }

  std::unique_ptr<drivers::ProcessDriver> another() const {
    auto created = drivers::ProcessDriver::create(options);
    REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    return std::move(created).value();
  }

  ~ProcessDriverFixture() {
    drivers::ProcessDriverOptions every_cluster = options;
    every_cluster.cluster.clear();
    auto all = drivers::ProcessDriver::create(every_cluster);
    if (!all.isOk()) return;
    auto refs = (*all)->list();
    if (!refs.isOk()) return;
    for (const drivers::RuntimeRef& ref : *refs) {
      drivers::ProcessIdentity identity = parseHandle(ref.handle);
      if (identity.pid > 0 && drivers::ownsGroup(identity)) kill(-identity.pid, SIGKILL);
    }
  }

  drivers::RuntimeSpec command(const std::string& id, const std::string& shell_script) const {
    drivers::RuntimeSpec spec;
    spec.id = id;
    spec.meta_instance = "web-" + id;
    spec.node = "node-a";
    spec.payload_name = "web";
    spec.coordinates = {{"command", {"/bin/sh", "-c", shell_script}}};
    return spec;
  }

  std::string stateOf(const std::string& id) const {
    auto status = driver->status({id, "node-a", ""});
    return status.isOk() ? model::toString(status->state) : std::string(codeName(status.status().code()));
  }
};

}  // namespace tide::testing
