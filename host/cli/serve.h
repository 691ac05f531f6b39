#pragma once
// `tide serve`: loads the host config, opens the ledger, checks its invariants, starts
// the HTTP API and runs until SIGINT/SIGTERM.

#include <signal.h>

#include <iosfwd>
#include <string>

#include "drivers/registry.h"
#include "host/config/host_config.h"
#include "host/core/clock.h"

namespace tide::cli {

struct ServeOptions {
  std::string config_path;  // empty: built-in defaults
  std::string listen;       // overrides the config's `listen` when set
  std::string data_dir;     // overrides the config's `data_dir` when set
  // docs/architecture.md#stopping-workloads-on-exit: off by default, as workloads outlive the host.
  bool stop_workloads_on_exit = false;
};

// The config file with the command line's flags laid over it, finalized: what `tide serve`
// runs with, and what `tide doctor` reads a stopped host's data dir by.
Result<config::HostConfig> resolveHostConfig(const ServeOptions& options);

// The host's part of every driver's configuration (data dir, volume root, ports, images).
drivers::DriverContext hostDriverContext(const config::HostConfig& config, const Clock& clock);

// Blocks SIGINT and SIGTERM before any thread starts, so every thread inherits the mask and
// only waitForStopSignal() sees them (tide serve, tide agent).
sigset_t blockStopSignals();
// Waits for one of them and says which on `out`: "tide: SIGTERM received, stopping".
void waitForStopSignal(const sigset_t& stop_signals, std::ostream& out);

// Returns the process exit code. Prints "tide listening on http://HOST:PORT" to `out`
// once the API accepts connections, and writes the same URL to <data_dir>/tide.addr.
int runServe(const ServeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace tide::cli
