#pragma once
// `tide serve` and the `tide` binary as real processes, for tests that need the control
// loop: a server on a free port with its own data dir, started from the source tree so the
// shipped scripts are the defaults, and the shipped policies but one (shippedPolicies()).

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.h"
#include "tests/support/eventually.h"
#include "tests/support/ports.h"
#include "tests/support/workloads.h"

namespace tide::testing {

// `tide serve` as a child process on a free port with its own data dir.
class ServeProcess {
 public:
  // `extra_config`: more lines of tide.yaml (policies_dir, limits, ...). Without a
  // policies_dir, the shipped policies but change-freeze (shippedPolicies()).
  // `serve_flags`: more arguments of every `tide serve` it starts (--stop-workloads-on-exit).
  // `process_config`: more keys of the `process` section, in flow style ("log_max_bytes: 4096").
  explicit ServeProcess(const std::string& extra_config = "", std::vector<std::string> serve_flags = {},
                        const std::string& process_config = "")
      : serve_flags_(std::move(serve_flags)) {
    url_ = "http://127.0.0.1:" + std::to_string(freePort());
    // Workloads take host ports from this process's own block, never from a test beside it.
    const PortRange ports = nextPortRange(50);
    std::ofstream config(data_dir_.path() / "tide.yaml");
    config << "process: {port_range_start: " << ports.start << ", port_range_end: " << ports.end
           << (process_config.empty() ? "" : ", " + process_config) << "}\n"
           << extra_config;
    if (extra_config.find("policies_dir:") == std::string::npos) {
      config << "\npolicies_dir: " << shippedPolicies(data_dir_.path()).string() << "\n";
    }
    config.close();
    start();
  }

  // Starts (or restarts, after stop()) `tide serve` on the same port and data dir.
  void start() {
    std::string listen = url_.substr(std::string("http://").size());
    std::string data_dir = data_dir_.path().string();
    std::string log = (data_dir_.path() / "serve.log").string();
    std::string config = (data_dir_.path() / "tide.yaml").string();
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      // The shipped policies and scripts (./policies, ./scripts) are the defaults.
      if (::chdir(TIDE_SOURCE_DIR) != 0) ::_exit(126);
      std::vector<const char*> argv = {"tide",     "serve", "--listen", listen.c_str(), "--data-dir", data_dir.c_str(),
                                       "--config", config.c_str()};
      for (const std::string& flag : serve_flags_) argv.push_back(flag.c_str());
      argv.push_back(nullptr);
      ::execv(TIDE_BINARY, const_cast<char* const*>(argv.data()));
      ::_exit(127);
    }
    httplib::Client health(url_);
    health.set_connection_timeout(std::chrono::milliseconds(200));
    bool healthy = false;
    for (int attempt = 0; attempt < 300 && !healthy; ++attempt) {
      auto reply = health.Get("/healthz");
      healthy = reply && reply->status == 200;
      if (!healthy) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!healthy) stop();  // a failed constructor runs no destructor
    REQUIRE_MESSAGE(healthy, "tide serve did not become healthy; see " << log);
    std::ifstream(data_dir_.path() / "admin.token") >> token_;
    REQUIRE(!token_.empty());
  }

  // Stops the server and ends the workloads it started, which outlive it by design
  // (docs/architecture.md#the-process-driver).
  ~ServeProcess() {
    stop();
    killWorkloadsOf(data_dir_.path().string());
  }

  const std::string& url() const { return url_; }
  const std::filesystem::path& dataDir() const { return data_dir_.path(); }
  // The token commands use: the admin token the server wrote at its first start, or the
  // one actAs() named.
  const std::string& token() const { return acting_.empty() ? token_ : acting_; }
  // Commands act with `token` from now on, across restarts, e.g. an admin the bootstrap
  // token minted, so that the approvers newToken() mints are not the requester's own
  // (docs/architecture.md#four-eyes).
  void actAs(const std::string& token) { acting_ = token; }

  // A new token for a second person (`tide token create`), minted with the bootstrap
  // token, e.g. an approver for the operations an actAs() admin asks for.
  std::string newToken(const std::string& name, const std::string& role) const {
    CliRun created = tide("token create --name " + name + " --role " + role + " -o json", {}, token_);
    REQUIRE_MESSAGE(created.code == 0, created.err);
    return nlohmann::json::parse(created.out)["token"].get<std::string>();
  }

  // Stops the server (SIGTERM) and returns its exit status; -1 when it was not running.
  int stop() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Kills the server (SIGKILL), as a crash or a lost machine would, and reaps it.
  void crash() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  // Stops the server with SIGTERM like stop(), but gives up waiting after a bound generous
  // for a loaded machine: nullopt when it did not exit by then (it is SIGKILLed), else its
  // exit status (-1 when killed by a signal). For tests of how the server stops.
  std::optional<int> terminate() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    const bool exited = eventually([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; });
    if (!exited) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
    }
    pid_ = -1;
    if (!exited) return std::nullopt;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // `TIDE_BINARY <args> --server URL --token T` as a process, killed after `limit` when
  // one is given (exit code 124, as timeout(1) reports it). T is token() unless `token`
  // names another.
  CliRun tide(const std::string& args, std::chrono::seconds limit = std::chrono::seconds(0),
              const std::string& token = "") const {
    std::string err_file = (data_dir_.path() / "cli.err").string();
    std::string timeout = limit.count() > 0 ? "timeout " + std::to_string(limit.count()) + " " : "";
    std::string command = timeout + TIDE_BINARY + " " + args + " --server " + url_ + " --token " +
                          (token.empty() ? this->token() : token) + " 2>" + err_file;
    CliRun result = runShellCommand(command);
    std::stringstream err;
    err << std::ifstream(err_file).rdbuf();
    result.err = err.str();
    return result;
  }

 private:
  TempDir data_dir_;
  std::vector<std::string> serve_flags_;
  std::string url_;
  std::string token_;
  std::string acting_;  // actAs()
  pid_t pid_ = -1;
};

}  // namespace tide::testing
