// `tide doctor`: the ledger's invariants and each driver's inventory against the ledger
// (docs/architecture.md#tide-doctor), by asking the host (GET /v1/doctor) or, with --data-dir or
// --config, by reading a host's data dir itself. Exit 1 when a violation is found.

#include <filesystem>
#include <memory>

#include "host/cli/commands.h"
#include "host/cli/serve.h"
#include "host/cli/table.h"
#include "host/engine/doctor.h"

namespace tide::cli {
namespace {

struct DoctorFlags {
  std::string data_dir;
  std::string config_path;
};

void printDoctorReport(std::ostream& out, const Json& report) {
  const Json findings = report.value("findings", Json::array());
  if (!findings.empty()) {
    Table table({"SEVERITY", "KIND", "SUBJECT", "FINDING"});
    for (const Json& f : findings) {
      table.addRow({f.value("severity", ""), f.value("kind", ""), f.value("subject", ""), f.value("message", "")});
    }
    table.print(out);
  }
  const Json checked = report.value("checked", Json::object());
  out << "doctor: " << (report.value("sound", false) ? "OK" : "VIOLATED") << ": "
      << report.value("violations", 0) << " violation(s), " << report.value("warnings", 0) << " warning(s); checked "
      << checked.value("live_runtime_instances", 0) << " live runtime instance(s) against "
      << checked.value("driver_runtimes", 0) << " driver runtime(s) in " << checked.value("clusters", 0)
      << " cluster(s)\n";
}

// The checks run here, on the data dir's ledger and the drivers' own state.
Result<Json> offlineReport(const DoctorFlags& flags) {
  ServeOptions serve;
  serve.config_path = flags.config_path;
  serve.data_dir = flags.data_dir;
  TIDE_ASSIGN_OR_RETURN(config::HostConfig config, resolveHostConfig(serve));
  constexpr std::string_view kSqlite = "sqlite://";
  if (config.database.starts_with(kSqlite)) {
    const std::string path = config.database.substr(kSqlite.size());
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) return Status::notFound("no ledger at " + path);
  }
  SystemClock clock;
  TIDE_ASSIGN_OR_RETURN(auto ledger, ledger::Ledger::open(config.database, clock));
  engine::DriverSet drivers(*ledger, hostDriverContext(config, clock));
  TIDE_ASSIGN_OR_RETURN(engine::DoctorReport report, engine::examine(*ledger, drivers));
  return engine::doctorReportJson(report);
}

}  // namespace

void addDoctorCommand(CLI::App& app, Verbs& verbs) {
  auto flags = std::make_shared<DoctorFlags>();
  CLI::App* doctor = verbs.add(
      app, "doctor",
      "Check the ledger's invariants and each driver's inventory against the ledger (duplicates, leaks, "
      "reservations, the event chain); exits 1 on a violation",
      [flags](Session& session) -> Status {
        const bool offline = !flags->data_dir.empty() || !flags->config_path.empty();
        TIDE_ASSIGN_OR_RETURN(Json report, offline ? offlineReport(*flags) : session.client.get("/v1/doctor"));
        session.print(report, printDoctorReport);
        const int violations = report.value("violations", 0);
        if (violations == 0) return Status::ok();
        return Status::internal("the doctor found " + std::to_string(violations) + " violation(s)");
      });
  doctor->add_option("--data-dir", flags->data_dir,
                     "read this host data dir (ledger and driver state) directly instead of asking the host");
  doctor->add_option("--config", flags->config_path,
                     "read the data dir and drivers this host config (YAML) names, as `tide serve --config` would");
}

}  // namespace tide::cli
