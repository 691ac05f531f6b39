#include "host/cli/agent_transport.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <mutex>
#include <thread>

#include "tests/support/eventually.h"
#include "tests/support/self_signed.h"

using namespace tide;
using namespace tide::cli;
using model::Json;

namespace {

// A loopback server that records what the agent's transport sends it; over TLS with the
// given certificate.
struct RecordingHost {
  const testing::SelfSignedCertificate* tls;
  std::unique_ptr<httplib::Server> owned;
  httplib::Server& server;
  std::thread thread;
  int port = 0;
  std::mutex mu;
  std::vector<std::string> requests;  // "METHOD path?query | authorization | body"

  explicit RecordingHost(const testing::SelfSignedCertificate* certificate = nullptr)
      : tls(certificate),
        owned(certificate ? std::make_unique<httplib::SSLServer>(certificate->cert.c_str(), certificate->key.c_str())
                          : std::make_unique<httplib::Server>()),
        server(*owned) {
    auto record = [this](const httplib::Request& request) {
      std::string query;
      for (const auto& [key, value] : request.params) query += (query.empty() ? "?" : "&") + key + "=" + value;
      std::lock_guard<std::mutex> lock(mu);
      requests.push_back(request.method + " " + request.path + query + " | " +
                         request.get_header_value("Authorization") + " | " + request.body);
    };
    server.Get("/v1/agents/n1/desired", [record](const httplib::Request& request, httplib::Response& response) {
      record(request);
      response.set_content(R"({"node":"n1","epoch":7,"revision":42,"instances":[]})", "application/json");
    });
    server.Post("/v1/agents/n1/report", [record](const httplib::Request& request, httplib::Response& response) {
      record(request);
      response.set_content(R"({"epoch":7,"revision":43})", "application/json");
    });
    server.Post(R"(/v1/agents/n1/logs/(\d+))", [record](const httplib::Request& request, httplib::Response& response) {
      record(request);
      response.status = 204;
    });
    port = server.bind_to_any_port("127.0.0.1");
    REQUIRE(port > 0);
    thread = std::thread([this] { server.listen_after_bind(); });
    REQUIRE(testing::eventually([this] { return server.is_running(); }));
  }
  ~RecordingHost() {
    server.stop();
    thread.join();
  }
  std::string url() const { return (tls ? "https" : "http") + std::string("://127.0.0.1:") + std::to_string(port); }
};

}  // namespace

TEST_CASE("agent: the HTTP transport uses the protocol's paths, the bearer token and the long-poll query") {
  RecordingHost host;
  Endpoint endpoint;
  endpoint.server = host.url();
  endpoint.token = "secret-token";
  HttpTransport transport(endpoint, "n1");

  auto first = transport.fetchDesired(std::nullopt, std::chrono::seconds(30));
  REQUIRE_MESSAGE(first.isOk(), first.status().toString());
  CHECK((*first)["revision"] == 42);
  REQUIRE(transport.fetchDesired(agent::DocumentVersion{7, 42}, std::chrono::seconds(5)).isOk());
  auto answer = transport.report(Json{{"epoch", 7}, {"applied_revision", 42}});
  REQUIRE(answer.isOk());
  CHECK((*answer)["revision"] == 43);
  CHECK(transport.postLog("118", "last lines\n").isOk());

  std::lock_guard<std::mutex> lock(host.mu);
  REQUIRE(host.requests.size() == 4);
  CHECK(host.requests[0] == "GET /v1/agents/n1/desired?wait=30 | Bearer secret-token | ");
  CHECK(host.requests[1] == "GET /v1/agents/n1/desired?epoch=7&revision=42&wait=5 | Bearer secret-token | ");
  CHECK(host.requests[2] == R"(POST /v1/agents/n1/report | Bearer secret-token | {"applied_revision":42,"epoch":7})");
  CHECK(host.requests[3] == "POST /v1/agents/n1/logs/118 | Bearer secret-token | last lines\n");
}

TEST_CASE("agent: an interrupted HTTP transport fails at once and keeps failing") {
  RecordingHost host;
  Endpoint endpoint;
  endpoint.server = host.url();
  HttpTransport transport(endpoint, "n1");
  transport.interrupt();
  auto polled = transport.fetchDesired(std::nullopt, std::chrono::seconds(30));
  CHECK(polled.status().code() == Code::kUnavailable);
  CHECK(polled.status().message() == "interrupted");
}

TEST_CASE("agent: over TLS the transport trusts the host's certificate through --ca-file, and refuses it without") {
  testing::SelfSignedCertificate certificate;
  RecordingHost host(&certificate);
  Endpoint endpoint;
  endpoint.server = host.url();
  endpoint.token = "secret-token";

  auto untrusted = HttpTransport(endpoint, "n1").fetchDesired(std::nullopt, std::chrono::seconds(0));
  REQUIRE_FALSE(untrusted.isOk());
  CHECK(untrusted.status().message().find("--ca-file") != std::string::npos);

  endpoint.ca_file = certificate.cert;  // self-signed: its own CA
  auto trusted = HttpTransport(endpoint, "n1").fetchDesired(std::nullopt, std::chrono::seconds(0));
  REQUIRE_MESSAGE(trusted.isOk(), trusted.status().toString());
  CHECK((*trusted)["revision"] == 42);
  std::lock_guard<std::mutex> lock(host.mu);
  REQUIRE(host.requests.size() == 1);  // the refused handshake sent nothing
  CHECK(host.requests[0] == "GET /v1/agents/n1/desired?wait=0 | Bearer secret-token | ");
}
