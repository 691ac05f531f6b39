#pragma once
// HAProxy's runtime API (the admin `stats socket`): one command per connection, with a
// deadline, and parsers for the two tables the router reads back (`show servers state`,
// `show stat`). Stateless; thread-safe.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "host/core/status.h"

namespace tide::drivers::traffic {

inline constexpr std::chrono::milliseconds kRuntimeApiTimeout{3000};

// Sends `command` to the admin socket and returns haproxy's whole answer. kUnavailable when
// the socket cannot be reached or does not answer within `timeout` (the message names the
// socket and the errno).
Result<std::string> runtimeCommand(const std::string& socket_path, const std::string& command,
                                   std::chrono::milliseconds timeout = kRuntimeApiTimeout);

// Like runtimeCommand, but an answer other than an empty one or a known success line
// ("New server registered.", "Server deleted.") is an error naming the command.
Status runtimeAction(const std::string& socket_path, const std::string& command);

// One row of `show servers state`.
struct ServerStateRow {
  std::string backend;
  std::string server;
  std::string address;  // "127.0.0.1:8080"
  int op_state = 0;     // 0 stopped (its check fails), 1 starting, 2 running, 3 stopping
  int admin_state = 0;  // bit field: kAdminMaintMask, kAdminDrainMask
  int weight = 0;       // the user weight (what `set server ... weight` sets)
};
inline constexpr int kAdminMaintMask = 0x01 | 0x02 | 0x04 | 0x20;  // forced, inherited, config, resolution
inline constexpr int kAdminDrainMask = 0x08 | 0x10;                // forced, inherited

// Parses the answer of `show servers state` (version 1 format). Lines it cannot read are skipped.
std::vector<ServerStateRow> parseServersState(const std::string& text);

// One server row of `show stat` (frontend and backend summary rows are left out).
struct ServerStatRow {
  std::string backend;
  std::string server;
  int64_t current_sessions = 0;  // scur
  std::string status;            // "UP", "DOWN", "MAINT", "DRAIN", "no check", ...
};

std::vector<ServerStatRow> parseShowStat(const std::string& text);

}  // namespace tide::drivers::traffic
