#include "host/api/handler.h"

namespace tide::api {

const char* roleName(Role role) {
  switch (role) {
    case Role::kPublic: return "public";
    case Role::kViewer: return "viewer";
    case Role::kOperator: return "operator";
    case Role::kApprover: return "approver";
    case Role::kAdmin: return "admin";
    case Role::kAgent: return "agent";
  }
  return "public";
}

std::optional<Role> parseRole(std::string_view name) {
  for (Role role : {Role::kViewer, Role::kOperator, Role::kApprover, Role::kAdmin, Role::kAgent}) {
    if (name == roleName(role)) return role;
  }
  return std::nullopt;
}

bool roleAllows(Role held, Role required) {
  if (required == Role::kPublic) return true;
  if (held == Role::kAgent || required == Role::kAgent) return held == required || held == Role::kAdmin;
  return held >= required;
}

const std::string& ApiRequest::param(const std::string& name) const {
  static const std::string kEmpty;
  auto it = path_params.find(name);
  return it == path_params.end() ? kEmpty : it->second;
}

std::shared_ptr<void> WaitSlots::tryAcquire() {
  if (used_.fetch_add(1) >= capacity_) {
    used_.fetch_sub(1);
    return nullptr;
  }
  return std::shared_ptr<void>(this, [](void* slots) { static_cast<WaitSlots*>(slots)->used_.fetch_sub(1); });
}

std::string dumpJson(const Json& json) { return json.dump(-1, ' ', false, Json::error_handler_t::replace); }

ApiResponse jsonReply(const Json& body, int status) {
  ApiResponse response;
  response.status = status;
  response.body = dumpJson(body);
  return response;
}

Json warningsJson(const std::vector<ErrorDetail>& warnings) {
  Json out = Json::array();
  for (const auto& w : warnings) out.push_back(Json{{"field", w.field}, {"message", w.message}, {"location", w.location}});
  return out;
}

ApiResponse deletedReply(std::string_view kind, std::string_view name) {
  return jsonReply(Json{{"deleted", true}, {"kind", kind}, {"name", name}});
}

model::Operation userOperation(const ApiRequest& request, model::OperationType type, const std::string& reason) {
  model::Operation operation;
  operation.type = type;
  operation.intent = "user";
  operation.requested_by = request.principal.name;
  operation.priority = kUserOperationPriority;
  operation.message = reason;
  return operation;
}

}  // namespace tide::api
