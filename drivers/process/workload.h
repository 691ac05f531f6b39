#pragma once
// `tide workload`: a tiny HTTP service built into the binary so demos and tests need
// nothing else installed (docs/architecture.md#drivers). Routes:
//   GET /healthz  200 "ok"; 503 "starting" before --healthy-after, 500 "failing" after --fail-health-after
//   GET /version  the version text
//   GET /         "tide-workload version=<v> instance=<$TIDE_INSTANCE> message=<text>\n", or 500 for
//                 the --error-rate share of requests
//   GET /metrics  Prometheus metrics of the requests to / (workload_metrics.h)
// It exits 0 on SIGTERM or SIGINT, and 3 when --crash-after passes.

#include <optional>
#include <string>

namespace tide::drivers {

struct WorkloadOptions {
  std::string listen;  // HOST:PORT (port 0: any free port, printed on start)
  std::string version = "v1";
  std::optional<double> fail_health_after_seconds;
  std::optional<double> healthy_after_seconds;
  std::optional<double> crash_after_seconds;
  std::string message;
  double error_rate = 0;  // the share of GET / answered 500
  double delay_seconds = 0;  // how long GET / takes before it answers (a slow version, for drills)
};

// Serves until SIGTERM/SIGINT (returns 0) or the crash time (exits the process with 3).
// Returns 1 when the address is malformed or cannot be bound. Meant to own its process:
// it blocks SIGTERM/SIGINT to wait for them and ignores SIGPIPE.
int runWorkload(const WorkloadOptions& options);

// Parses `tide workload` flags (--listen, --version, --fail-health-after, --healthy-after,
// --crash-after, --message, --error-rate) and runs the workload. argv[0] is the command's own name and
// is skipped, so `tide` calls it as runWorkloadCli(argc - 1, argv + 1). Exit codes as
// runWorkload; CLI11's for a malformed command line.
int runWorkloadCli(int argc, char** argv);

}  // namespace tide::drivers
