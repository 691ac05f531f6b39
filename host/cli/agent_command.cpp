#include "host/cli/agent_command.h"

#include <filesystem>
#include <fstream>
#include <mutex>
#include <ostream>
#include <sstream>

#include "host/agent/agent.h"
#include "host/cli/agent_transport.h"
#include "host/cli/serve.h"
#include "host/config/host_config.h"
#include "host/core/dir_lock.h"

namespace tide::cli {
namespace {

struct PortRange {
  int start = 0;
  int end = 0;
};

// "30000-32767" → {30000, 32767}: both in 1..65535, the first below the second.
Result<PortRange> parsePortRange(const std::string& text) {
  const Status bad = Status::invalidArgument(
      "--port-range: \"" + text + "\" must be A-B with 1 <= A < B <= 65535",
      {{"--port-range", "must be A-B with 1 <= A < B <= 65535", ""}});
  const size_t dash = text.find('-');
  if (dash == std::string::npos) return bad;
  auto number = [](const std::string& digits) -> std::optional<int> {
    if (digits.empty() || digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) {
      return std::nullopt;
    }
    return std::stoi(digits);
  };
  std::optional<int> start = number(text.substr(0, dash));
  std::optional<int> end = number(text.substr(dash + 1));
  if (!start || !end || *start < 1 || *end > 65535 || *start >= *end) return bad;
  return PortRange{*start, *end};
}

// The token from --token or the first line of --token-file, exactly one of them.
Result<std::string> resolveToken(const AgentCommandOptions& options) {
  if (options.token.empty() == options.token_file.empty()) {
    return Status::invalidArgument("pass exactly one of --token and --token-file",
                                   {{"--token", "exactly one of --token and --token-file", ""}});
  }
  if (!options.token.empty()) return options.token;
  std::ifstream in(options.token_file);
  std::string token;
  if (!in || !std::getline(in, token)) {
    return Status::invalidArgument("--token-file: cannot read " + options.token_file,
                                   {{"--token-file", "cannot be read", ""}});
  }
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) {
    return Status::invalidArgument("--token-file: " + options.token_file + " holds no token",
                                   {{"--token-file", "empty", ""}});
  }
  return token;
}

// Everything the agent runs with, or the first bad option.
Result<agent::AgentOptions> agentOptions(const AgentCommandOptions& options) {
  agent::AgentOptions out;
  out.node = options.node;
  out.data_dir = options.data_dir;
  TIDE_ASSIGN_OR_RETURN(PortRange ports, parsePortRange(options.port_range));
  out.port_range_start = ports.start;
  out.port_range_end = ports.end;
  if (!(options.heartbeat_seconds >= 0.1 && options.heartbeat_seconds <= 60)) {
    return Status::invalidArgument("--heartbeat-seconds must be in [0.1, 60]",
                                   {{"--heartbeat-seconds", "must be in [0.1, 60]", ""}});
  }
  out.heartbeat = std::chrono::milliseconds(static_cast<int64_t>(options.heartbeat_seconds * 1000));
  if (options.runtime != "process" && options.runtime != "container" && options.runtime != "sim") {
    return Status::invalidArgument("--runtime must be process, container or sim, got '" + options.runtime + "'",
                                   {{"--runtime", "must be process, container or sim", ""}});
  }
  out.runtime = options.runtime;
  if (!options.driver_config.empty()) {
    if (options.runtime != "container") {
      return Status::invalidArgument("--driver-config goes with --runtime container",
                                     {{"--driver-config", "only for --runtime container", ""}});
    }
    out.driver_config = model::Json::parse(options.driver_config, nullptr, /*allow_exceptions=*/false);
    if (!out.driver_config.is_object()) {
      return Status::invalidArgument("--driver-config must be a JSON object",
                                     {{"--driver-config", "must be a JSON object", ""}});
    }
  }
  if (options.image_catalog.empty()) {
    out.image_catalog = config::defaultImageCatalog();
  } else {
    auto catalog = config::loadImageCatalog(options.image_catalog);
    if (!catalog.isOk()) {
      return Status(catalog.status().code(), "--image-catalog: " + catalog.status().message(),
                    catalog.status().details());
    }
    out.image_catalog = std::move(catalog).value();
  }
  // Workloads name `{{tide}}` for this very binary, as under `tide serve`.
  std::error_code ec;
  out.tide_binary = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  out.agent_version = TIDE_VERSION;
  return out;
}

}  // namespace

CLI::App* addAgentCommand(CLI::App& app, AgentCommandOptions& options) {
  CLI::App* command = app.add_subcommand(
      "agent", "Run a node agent: pull this node's desired state from the host, run it, report what runs");
  command->add_option("--server", options.server, "the host's URL, http[s]://HOST:PORT")->required();
  command->add_option("--node", options.node, "the node this agent serves")->required();
  command->add_option("--token", options.token, "an agent token bound to the node (role agent)");
  command->add_option("--token-file", options.token_file, "a file holding the token (keeps it out of `ps`)");
  command->add_option("--ca-file", options.ca_file, "PEM file of the CA the host's certificate must chain to");
  command->add_option("--data-dir", options.data_dir,
                      "workload state, logs, volumes and agent.json (default ./.tide-agent)");
  command->add_option("--port-range", options.port_range, "host ports for workloads, A-B (default 30000-32767)");
  command->add_option("--image-catalog", options.image_catalog,
                      "YAML mapping of image pattern to argv (default: nginx:* and tide-workload:*)");
  command->add_option("--heartbeat-seconds", options.heartbeat_seconds, "seconds between reports (default 1)");
  command->add_option("--runtime", options.runtime,
                      "what runs the workloads: process (default), container (OCI images with Podman) or sim (in "
                      "memory, for benches of many agents)");
  command->add_option("--driver-config", options.driver_config,
                      "with --runtime container: its driver_config as JSON, e.g. '{\"ulimit_nofile\": 4096}'");
  return command;
}

int runAgent(const AgentCommandOptions& options, std::ostream& out, std::ostream& err) {
  auto resolved = agentOptions(options);
  Result<std::string> token = resolved.isOk() ? resolveToken(options) : Result<std::string>(resolved.status());
  if (!token.isOk()) {
    err << "tide agent: " << token.status().message() << "\n";
    return 2;
  }
  agent::AgentOptions agent_options = std::move(resolved).value();
  std::error_code ec;
  std::filesystem::create_directories(agent_options.data_dir, ec);
  // One agent per data dir: two would both think they run its workloads.
  auto data_dir_lock = DirLock::acquire(agent_options.data_dir);
  if (!data_dir_lock.isOk()) {
    err << "tide agent: " << data_dir_lock.status().message() << "\n";
    return 1;
  }
  const sigset_t stop_signals = blockStopSignals();

  Endpoint endpoint;
  endpoint.server = options.server;
  endpoint.token = *token;
  endpoint.ca_file = options.ca_file;
  HttpTransport transport(endpoint, agent_options.node);
  std::mutex err_mu;  // the agent's threads log whole lines
  agent_options.log = [&err, &err_mu](const std::string& line) {
    std::lock_guard<std::mutex> lock(err_mu);
    err << "tide agent: " << line << std::endl;
  };
  auto created = agent::Agent::create(agent_options, transport);
  if (!created.isOk()) {
    err << "tide agent: " << created.status().toString() << "\n";
    return 1;
  }
  agent::Agent& node_agent = **created;
  node_agent.start();
  out << "tide agent: node " << agent_options.node << " of " << options.server << " (data dir "
      << agent_options.data_dir << ")" << std::endl;
  waitForStopSignal(stop_signals, out);
  node_agent.stop();
  return 0;
}

}  // namespace tide::cli
