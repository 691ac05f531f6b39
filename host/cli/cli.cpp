#include "host/cli/cli.h"

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "drivers/process/spawn.h"
#include "drivers/process/workload.h"
#include "host/cli/agent_command.h"
#include "host/cli/commands.h"
#include "host/cli/command_suggestions.h"
#include "host/cli/serve.h"
#include "host/cli/terminal_text.h"

namespace tide::cli {
namespace {

// Error messages and details mostly come from the server. The problems of an input, each
// located, print one per line as a compiler's do ("file:line:column: field: message") after
// a line counting them; other details print indented under the message. With `-o json`
// the error prints as the API answers it, details and all.
void printError(std::ostream& err, const Status& status, bool json) {
  if (json) {
    Json details = Json::array();
    for (const ErrorDetail& d : status.details()) {
      details.push_back({{"field", d.field}, {"message", d.message}, {"location", d.location}});
    }
    err << Json{{"error", {{"code", codeName(status.code())}, {"message", status.message()}, {"details", details}}}}
               .dump(2)
        << '\n';
    return;
  }
  const std::vector<ErrorDetail>& details = status.details();
  const bool located = !details.empty() && std::all_of(details.begin(), details.end(),
                                                       [](const ErrorDetail& d) { return !d.location.empty(); });
  std::string text;
  if (located) {
    const size_t n = details.size();
    const std::string source = sourceOfLocation(details.front().location);
    text = "error: " + std::to_string(n) + (n == 1 ? " error" : " errors") + " in " +
           (source.empty() ? details.front().location : source) + '\n';
  } else {
    text = "error: " + status.message() + '\n';
  }
  for (const ErrorDetail& detail : details) {
    std::string line;
    if (!detail.location.empty()) line += detail.location + ": ";
    if (!detail.field.empty()) line += detail.field + ": ";
    line += detail.message;
    if (located) {
      text += line + '\n';
    } else if (line != status.message()) {  // a lone problem is usually the message itself
      text += "  " + line + '\n';
    }
  }
  if (status.code() == Code::kUnauthenticated) {
    text += "hint: pass --token or set TIDE_TOKEN (`tide serve` writes an admin token to <data-dir>/admin.token)\n";
  }
  err << stripTerminalControls(text);
}

}  // namespace

int run(int argc, char** argv) { return run(argc, argv, std::cout, std::cerr); }

int run(int argc, char** argv, std::ostream& out, std::ostream& err) {
  CLI::App app("tide: a deployment control plane with Lua policies and rollout scripts", "tide");
  app.set_version_flag("--version", TIDE_VERSION);
  app.require_subcommand(1);

  ServeOptions serve;
  CLI::App* serve_command = app.add_subcommand("serve", "Run the tide host: ledger, control loop and HTTP API");
  serve_command->add_option("--config", serve.config_path, "host config file (YAML); default: built-in defaults");
  serve_command->add_option("--listen", serve.listen, "HOST:PORT to serve the API on (default 127.0.0.1:7700)");
  serve_command->add_option("--data-dir", serve.data_dir,
                            "where the ledger, logs and admin token live (default ./.tide)");
  serve_command->add_flag("--stop-workloads-on-exit", serve.stop_workloads_on_exit,
                          "on SIGINT/SIGTERM, stop the process driver's workloads (recorded STOPPED; the next "
                          "start asks to restart them); for demos");

  AgentCommandOptions agent;
  CLI::App* agent_command = addAgentCommand(app, agent);

  // `tide workload ...` is parsed by the workload itself (drivers/process/workload.h).
  CLI::App* workload_command =
      app.add_subcommand("workload", "Run the built-in demo HTTP service (/healthz, /version); see --help")
          ->prefix_command();
  workload_command->set_help_flag();

  Verbs verbs;
  addInventoryCommands(app, verbs);
  addDeploymentCommands(app, verbs);
  addActivityCommands(app, verbs);
  addTokenCommands(app, verbs);
  addPlanCommands(app, verbs);
  addAuditCommands(app, verbs);
  addControlCommands(app, verbs);
  addDoctorCommand(app, verbs);
  addStatusCommand(app, verbs);
  OfflineAction offline;
  addPolicyCommands(app, verbs, offline);
  addCompletionCommand(app, offline);
  checkNumbersReadably(app);

  // A value an option refused: "error: --operation-id: 'abc' is not a positive whole number".
  const auto refused = [&err](const CLI::ParseError& e) {
    err << "error: " << stripTerminalControls(e.what()) << "\n";
    return 2;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ValidationError& e) {
    return refused(e);
  } catch (const CLI::ConversionError& e) {
    return refused(e);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; CLI11's own codes for usage errors all become 2.
    if (e.get_exit_code() != 0) {
      if (auto message = unknownCommandMessage(app, std::vector<std::string>(argv + 1, argv + argc))) {
        err << "error: " << *message << "\n";
        return 2;
      }
    }
    return app.exit(e, out, err) == 0 ? 0 : 2;
  }
  if (serve_command->parsed() || agent_command->parsed()) {
    // Before the host starts its threads and fills its memory: the workloads are forked from
    // this small copy of it (drivers/process/spawn.h). Without the helper they still start.
    if (!drivers::startSpawnHelper()) err << "tide: no spawn helper; workloads are forked by the host itself\n";
    return serve_command->parsed() ? runServe(serve, out, err) : runAgent(agent, out, err);
  }
  if (workload_command->parsed()) {
    std::vector<std::string> args = workload_command->remaining();
    args.insert(args.begin(), "workload");
    std::vector<char*> workload_argv;
    for (auto& arg : args) workload_argv.push_back(arg.data());
    return drivers::runWorkloadCli(static_cast<int>(workload_argv.size()), workload_argv.data());
  }
  if (offline) return offline(out);
  if (!verbs.chosen()) return 0;

  // Verbs return their errors as values; an exception here is a bug or an unexpected
  // reply shape, reported like any other failure rather than aborting.
  Status status;
  try {
    status = verbs.runChosen(out);
  } catch (const std::exception& e) {
    status = Status::internal(e.what());
  }
  out.flush();
  if (status.isOk()) return 0;
  printError(err, status, verbs.jsonOutput());
  return 1;
}

}  // namespace tide::cli
