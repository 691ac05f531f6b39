#pragma once
// `tide agent`'s transport (host/agent/agent.h) over the host's HTTP API (docs/agents.md#the-protocol), with
// cli::Client (bearer token, TLS with an optional CA file):
//   GET  /v1/agents/{node}/desired?epoch=E&revision=R&wait=S   (epoch and revision left out on a first call)
//   POST /v1/agents/{node}/report
//   POST /v1/agents/{node}/logs/{id}                            (text/plain)
// Thread-safe: each call uses a Client of its own.

#include <memory>
#include <string>

#include "host/agent/agent.h"
#include "host/cli/client.h"

namespace tide::cli {

class HttpTransport final : public agent::AgentTransport {
 public:
  HttpTransport(Endpoint endpoint, std::string node);

  Result<model::Json> fetchDesired(const std::optional<agent::DocumentVersion>& known, std::chrono::seconds wait) override;
  Result<model::Json> report(const model::Json& report) override;
  Status postLog(const std::string& id, const std::string& text) override;
  void interrupt() override;

 private:
  // An endpoint whose reads may last `wait` and then some for a slow host.
  Client client(std::chrono::seconds wait) const;

  Endpoint endpoint_;
  const std::string node_path_;  // /v1/agents/<node>
};

}  // namespace tide::cli
