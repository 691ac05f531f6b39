// Liveness, readiness, metrics and the API's own description. No auth; query parameters
// are ignored so probes and scrapers may add their own.

#include "host/api/handlers.h"
#include "host/api/metrics.h"
#include "host/core/embedded.h"
#include "host/lua/registry/script_registry.h"

namespace tide::api::system {

Result<ApiResponse> healthz(ApiContext&, const ApiRequest&) { return jsonReply({{"status", "ok"}}); }

Result<ApiResponse> readyz(ApiContext& context, const ApiRequest&) {
  if (context.stopping) return Status::unavailable("the server is stopping");
  ledger::ListOptions probe;
  probe.limit = 1;
  Result<ledger::Page<model::Capability>> page = context.ledger.inventory().listCapabilities(probe);
  if (!page.isOk()) return Status::unavailable("the ledger is not usable: " + page.status().message());
  return jsonReply({{"status", "ready"}});
}

Result<ApiResponse> metrics(ApiContext& context, const ApiRequest&) {
  ApiResponse response;
  response.content_type = "text/plain; version=0.0.4";
  response.body = context.metrics.render();
  response.body += "# HELP tide_events_last_seq Sequence number of the newest ledger event.\n";
  response.body += "# TYPE tide_events_last_seq gauge\n";
  response.body += "tide_events_last_seq " + std::to_string(context.ledger.audit().lastEventSeq()) + "\n";
  const ledger::WriteStats writes = context.ledger.writeStats();
  response.body +=
      "# HELP tide_ledger_writes_total Ledger writes (one record change each, with its events).\n"
      "# TYPE tide_ledger_writes_total counter\n"
      "tide_ledger_writes_total " +
      std::to_string(writes.writes) + "\n" +
      "# HELP tide_ledger_commits_total Ledger transactions committed: one fsync each; "
      "writes_total / commits_total is the mean group-commit batch.\n"
      "# TYPE tide_ledger_commits_total counter\n"
      "tide_ledger_commits_total " +
      std::to_string(writes.commits) + "\n" +
      "# HELP tide_ledger_failed_commits_total Ledger transactions the database refused to commit.\n"
      "# TYPE tide_ledger_failed_commits_total counter\n"
      "tide_ledger_failed_commits_total " +
      std::to_string(writes.failed_commits) + "\n" +
      "# HELP tide_ledger_largest_group Most writes one commit has carried.\n"
      "# TYPE tide_ledger_largest_group gauge\n"
      "tide_ledger_largest_group " +
      std::to_string(writes.largest_group) + "\n";
  if (auto counts = context.ledger.operations().operationCounts(); counts.isOk()) {
    response.body += "# HELP tide_operations Operations in the ledger by type and state.\n";
    response.body += "# TYPE tide_operations gauge\n";
    for (const auto& [key, n] : counts.value()) {
      response.body +=
          "tide_operations{type=\"" + key.first + "\",state=\"" + key.second + "\"} " + std::to_string(n) + "\n";
    }
  }
  if (auto halt = context.ledger.audit().controlHalt(); halt.isOk()) {
    response.body +=
        "# HELP tide_control_loop_halted 1 while the control loop is halted (an admin resumes it).\n"
        "# TYPE tide_control_loop_halted gauge\n"
        "tide_control_loop_halted " +
        std::string(halt->has_value() ? "1" : "0") + "\n";
    if (halt->has_value()) {
      response.body +=
          "# HELP tide_control_loop_halt_reason The alarm that halted the control loop.\n"
          "# TYPE tide_control_loop_halt_reason gauge\n"
          "tide_control_loop_halt_reason{reason=\"" +
          (*halt)->kind + "\"} 1\n";
    }
  }
  if (context.scripts != nullptr) response.body += context.scripts->metricsText();
  if (context.extra_metrics) response.body += context.extra_metrics();
  return response;
}

Result<ApiResponse> openapi(ApiContext&, const ApiRequest&) {
  const std::vector<embedded::File>& files = embedded::openapiDocument();
  if (files.empty()) return Status::internal("the OpenAPI document is not embedded");
  ApiResponse response;
  response.body = std::string(files.front().text);
  return response;
}

}  // namespace tide::api::system
