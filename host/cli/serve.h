#pragma once
// `tide serve`: loads the host config, opens the ledger, checks its invariants, starts
// the HTTP API and runs until SIGINT/SIGTERM.

#include <iosfwd>
#include <string>

namespace tide::cli {

struct ServeOptions {
  std::string config_path;  // empty: built-in defaults
  std::string listen;       // overrides the config's `listen` when set
  std::string data_dir;     // overrides the config's `data_dir` when set
};

// Returns the process exit code. Prints "tide listening on http://HOST:PORT" to `out`
// once the API accepts connections, and writes the same URL to <data_dir>/tide.addr.
int runServe(const ServeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace tide::cli
