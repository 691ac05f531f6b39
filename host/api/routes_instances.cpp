// /v1/instances: meta instances, each with its runtime instances; the operations people
// ask for on one; its log.

#include <algorithm>

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/api/views.h"
#include "host/core/names.h"
#include "host/model/transitions.h"

namespace tide::api::instances {
namespace {

constexpr int64_t kDefaultLogTailBytes = int64_t{64} << 10;
constexpr int64_t kMaxLogTailBytes = int64_t{8} << 20;
// Far beyond any log file; a larger offset is a client's mistake, not a rotated log.
constexpr int64_t kMaxLogOffset = (int64_t{1} << 53) - 1;

std::string typeList() {
  std::string out;
  for (const std::string& type : model::namesOf<model::OperationType>()) out += (out.empty() ? "" : ", ") + type;
  return out;
}

Result<model::OperationType> readOperationType(const Json& body) {
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> type, readStringField(body, "type"));
  if (type) {
    if (std::optional<model::OperationType> known = model::parse<model::OperationType>(*type)) return *known;
  }
  std::string message =
      type ? "must be one of " + typeList() + ", got '" + *type + "'" : "is required: one of " + typeList();
  return Status::invalidArgument("body field 'type' " + message, {{"type", message, ""}});
}

}  // namespace

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(
      ledger::ListOptions options,
      readListOptions(request, {{"plan"}, {"state", model::statesOf(model::RecordKind::kMetaInstance)}}));
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::MetaInstance> page, context.ledger.instances().listMetaInstances(options));
  TIDE_ASSIGN_OR_RETURN(auto unfinished, unfinishedOperations(context.ledger, page.items));
  Json items = Json::array();
  for (const model::MetaInstance& meta : page.items) {
    TIDE_ASSIGN_OR_RETURN(Json view, instanceView(context.ledger, meta, /*with_operations=*/false));
    auto operation = unfinished.find(meta.name);
    view["unfinished_operation"] = operation == unfinished.end() ? Json(nullptr) : Json(operation->second);
    items.push_back(std::move(view));
  }
  Json body = {{"items", items}};
  if (page.next_after != 0) body["next_after"] = page.next_after;
  return jsonReply(body);
}

Result<ApiResponse> get(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(model::MetaInstance meta, context.ledger.instances().getMetaInstance(request.param("name")));
  TIDE_ASSIGN_OR_RETURN(Json view, instanceView(context.ledger, meta, /*with_operations=*/true));
  ApiResponse response = jsonReply(view);
  response.headers.emplace_back("ETag", std::to_string(meta.meta.generation));
  return response;
}

// A user operation: intent "user", requested by the caller. The ledger refuses it (409)
// while an operation of equal or higher priority is unfinished on the instance, and when
// the type does not fit the instance's state (docs/architecture.md#operation-fit).
Result<ApiResponse> operate(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {}));
  TIDE_ASSIGN_OR_RETURN(Json body, readOptionalJsonObject(request, {"type", "reason"}));
  TIDE_ASSIGN_OR_RETURN(model::OperationType type, readOperationType(body));
  TIDE_ASSIGN_OR_RETURN(std::optional<std::string> reason, readStringField(body, "reason"));
  TIDE_ASSIGN_OR_RETURN(model::MetaInstance meta, context.ledger.instances().getMetaInstance(request.param("name")));
  model::Operation operation = userOperation(request, type, reason.value_or(""));
  operation.meta_instance = meta.name;
  TIDE_ASSIGN_OR_RETURN(model::Operation created,
                        context.ledger.operations().createOperation(operation, request.principal.name));
  return recordReply(created, 201);
}

// docs/api.md#following-a-log: without `offset`, the log's last `tail_bytes`; with it (and
// the `file` a reply named), what follows that place, so a follower reads only new bytes.
// Where the driver can resume (process nodes) the reply's headers say where it ends.
Result<ApiResponse> logs(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"tail_bytes", "offset", "file", "application"}));
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> tail_bytes,
                        readIntegerParam(request, "tail_bytes", 1, kMaxLogTailBytes));
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> offset, readIntegerParam(request, "offset", 0, kMaxLogOffset));
  auto file = request.query.find("file");
  const bool has_file = file != request.query.end();
  if (offset && tail_bytes) return badParam("tail_bytes", "does not go with offset: a reply from an offset reads on");
  if (has_file && !offset) return badParam("file", "needs offset: it names the file the offset is in");
  std::optional<drivers::LogCursor> from;
  if (offset) from = drivers::LogCursor{has_file ? file->second : "", *offset};
  TIDE_ASSIGN_OR_RETURN(model::MetaInstance meta, context.ledger.instances().getMetaInstance(request.param("name")));
  if (!context.read_logs) return Status::unavailable("logs are not available on this host");
  const size_t max_bytes = static_cast<size_t>(from ? kMaxLogTailBytes : tail_bytes.value_or(kDefaultLogTailBytes));
  std::string application;
  if (auto it = request.query.find("application"); it != request.query.end()) {
    if (std::string problem = nameProblem(it->second); !problem.empty()) return badParam("application", problem);
    application = it->second;
  }
  TIDE_ASSIGN_OR_RETURN(drivers::LogSlice slice, context.read_logs(meta.name, application, from, max_bytes));
  if (!from && slice.text.size() > max_bytes) slice.text.erase(0, slice.text.size() - max_bytes);
  ApiResponse response;
  response.content_type = "text/plain; charset=utf-8";
  response.body = std::move(slice.text);
  if (slice.end) {
    response.headers.emplace_back("Tide-Log-File", slice.end->file);
    response.headers.emplace_back("Tide-Log-Offset", std::to_string(slice.end->offset));
  }
  if (from) response.headers.emplace_back("Tide-Log-Continues", slice.continues ? "true" : "false");
  return response;
}

}  // namespace tide::api::instances
