#pragma once
// `tide agent`: runs a node agent (agent.h) against a host over HTTP(S) until SIGINT/SIGTERM,
// which stop the agent and leave its workloads running (docs/agents.md#running-an-agent).

#include <iosfwd>
#include <string>

#include <CLI/CLI.hpp>

namespace tide::cli {

struct AgentCommandOptions {
  std::string server;
  std::string node;
  std::string token;
  std::string token_file;
  std::string ca_file;
  std::string data_dir = "./.tide-agent";
  std::string port_range = "30000-32767";
  std::string image_catalog;  // a YAML file; empty: the built-in catalog
  double heartbeat_seconds = 1;
  std::string runtime = "process";  // process | container | sim
  std::string driver_config;        // JSON: the container runtime's driver_config
};

// Adds the `agent` subcommand, its options read into `options`.
CLI::App* addAgentCommand(CLI::App& app, AgentCommandOptions& options);

// Returns the process exit code: 2 for a bad option (the message names it), 1 when the agent
// cannot start, 0 after a stop signal.
int runAgent(const AgentCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace tide::cli
