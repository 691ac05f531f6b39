#include "host/cli/agent_transport.h"

namespace tide::cli {
namespace {

// How long a reply may take beyond the wait the agent asked the host for.
constexpr std::chrono::seconds kReplyMargin{15};

}  // namespace

HttpTransport::HttpTransport(Endpoint endpoint, std::string node)
    : endpoint_(std::move(endpoint)), node_path_("/v1/agents/" + pathSegment(node)) {
  if (!endpoint_.interrupt) endpoint_.interrupt = std::make_shared<RequestInterrupt>();
}

Client HttpTransport::client(std::chrono::seconds wait) const {
  Endpoint endpoint = endpoint_;
  endpoint.read_timeout = wait + kReplyMargin;
  return Client(std::move(endpoint));
}

Result<model::Json> HttpTransport::fetchDesired(const std::optional<agent::DocumentVersion>& known,
                                                std::chrono::seconds wait) {
  Query query;
  if (known) {
    query.emplace_back("epoch", std::to_string(known->epoch));
    query.emplace_back("revision", std::to_string(known->revision));
  }
  query.emplace_back("wait", std::to_string(wait.count()));
  return client(wait).get(node_path_ + "/desired", query);
}

Result<model::Json> HttpTransport::report(const model::Json& report) {
  return client(std::chrono::seconds(0)).post(node_path_ + "/report", report);
}

Status HttpTransport::postLog(const std::string& id, const std::string& text) {
  return client(std::chrono::seconds(0)).postText(node_path_ + "/logs/" + pathSegment(id), text, "text/plain").status();
}

void HttpTransport::interrupt() { endpoint_.interrupt->interrupt(); }

}  // namespace tide::cli
