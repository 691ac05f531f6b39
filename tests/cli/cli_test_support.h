#pragma once
// Running the `tide` CLI in-process (tide::cli::run with captured output) against a real
// API server on an ephemeral port over an in-memory ledger.

#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <ostream>
#include <sstream>
#include <streambuf>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "host/api/server.h"
#include "host/cli/cli.h"
#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "tests/support/temp_dir.h"
#include "tests/support/source_tree.h"
#include "tests/support/text.h"

namespace tide::testing {

// Who the admin token `tide serve` writes at its first start acts as.
inline const std::string kBootstrapAdmin = "bootstrap-admin";

struct CliRun {
  int code = 0;
  std::string out;
  std::string err;
};

// `tide <args>`, with stdout going to `out_stream` when given.
inline CliRun runCli(std::vector<std::string> args, std::ostream* out_stream = nullptr) {
  args.insert(args.begin(), "tide");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  std::ostringstream out, err;
  CliRun result;
  result.code = cli::run(static_cast<int>(argv.size()), argv.data(), out_stream ? *out_stream : out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

// What `command` (run by /bin/sh) prints on stdout, and its exit code; stderr is left alone.
inline CliRun runShellCommand(const std::string& command) {
  CliRun result;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) result.out.append(buffer, n);
  const int status = ::pclose(pipe);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// An output that takes `lines` lines and then fails, like stdout closed by `| head`. It
// has no buffer, so every character reaches overflow().
class LineLimitedBuffer : public std::streambuf {
 public:
  explicit LineLimitedBuffer(int lines) : lines_left_(lines) {}
  const std::string& text() const { return text_; }

 protected:
  int overflow(int c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    if (lines_left_ <= 0) return traits_type::eof();
    text_ += traits_type::to_char_type(c);
    if (c == '\n') --lines_left_;
    return c;
  }

 private:
  int lines_left_;
  std::string text_;
};

// An API server over an in-memory ledger, with the admin token it bootstrapped (the
// principal "bootstrap-admin"). `configure` may change the server's options first.
struct LiveServer {
  TempDir data_dir;
  SystemClock clock;
  std::unique_ptr<ledger::Ledger> ledger;
  std::unique_ptr<api::ApiServer> server;
  std::string url;
  std::string token;

  explicit LiveServer(const std::function<void(api::ServerOptions&)>& configure = {}) {
    auto opened = ledger::Ledger::open("sqlite://:memory:", clock);
    REQUIRE_MESSAGE(opened.isOk(), opened.status().toString());
    ledger = std::move(opened).value();
    api::ServerOptions options;
    options.port = 0;
    options.data_dir = data_dir.path().string();
    if (configure) configure(options);
    server = std::make_unique<api::ApiServer>(options, *ledger, clock);
    Status started = server->start();
    REQUIRE_MESSAGE(started.isOk(), started.toString());
    url = "http://127.0.0.1:" + std::to_string(server->port());
    std::ifstream file(data_dir.path() / "admin.token");
    std::getline(file, token);
    REQUIRE(!token.empty());
  }

  // `tide <args> --server URL --token T`.
  CliRun run(std::vector<std::string> args, std::ostream* out = nullptr) const {
    args.insert(args.end(), {"--server", url, "--token", token});
    return runCli(std::move(args), out);
  }
};

}  // namespace tide::testing
