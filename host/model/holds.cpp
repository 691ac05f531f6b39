#include "host/model/holds.h"

#include "host/model/approvals.h"
#include "host/model/states.h"
#include "host/model/transitions.h"

namespace tide::model {
namespace {

constexpr std::string_view kHeldByHook = "held by hook ";
constexpr std::string_view kDelayedByHook = "delayed by hook ";
constexpr std::string_view kWaitingForPlacement = "waiting for placement: ";

// "operation 12 (CREATE of nginx-service-x)".
std::string nameOf(const Operation& operation) {
  return "operation " + std::to_string(operation.meta.id) + " (" + toString(operation.type) + " of " +
         operation.meta_instance + ")";
}

}  // namespace

std::string hookHoldMessage(bool veto, const std::string& hook, const std::string& reason) {
  return std::string(veto ? kHeldByHook : kDelayedByHook) + hook + ": " + reason;
}

std::string_view hookHoldKind(const Operation& operation) {
  if (operation.state != OperationState::kApproved) return "";
  if (std::string_view(operation.message).starts_with(kHeldByHook)) return "veto";
  if (std::string_view(operation.message).starts_with(kDelayedByHook)) return "delay";
  return "";
}

std::string placementWaitMessage(const std::string& why) { return std::string(kWaitingForPlacement) + why; }

bool isRouterHoldMessage(std::string_view message) {
  return message.starts_with(kRouterWaitPrefix) || message.starts_with(kRouterDownPrefix);
}

std::optional<Hold> operationHold(const Operation& operation) {
  const int64_t id = operation.meta.id;
  if (operation.state == OperationState::kPendingApproval) {
    const std::string approvals = describeApprovals(operation.decision, operation.requested_by);
    return Hold{"approval",
                "waiting for approval of " + nameOf(operation) + (approvals.empty() ? "" : ": " + approvals), id};
  }
  const std::string_view message = operation.message;
  if (!hookHoldKind(operation).empty()) {
    return Hold{"hook", nameOf(operation) + " " + operation.message, id};
  }
  if (operation.state == OperationState::kPending && message.starts_with(kWaitingForPlacement)) {
    return Hold{"placement", nameOf(operation) + " is " + operation.message, id};
  }
  return std::nullopt;
}

std::vector<Hold> deploymentHolds(const Deployment& deployment) {
  std::vector<Hold> holds;
  if (isRolloutOver(deployment.state)) return holds;
  if (deployment.state == DeploymentState::kPaused) {
    holds.push_back({"paused", deployment.message.empty() ? "paused" : deployment.message, 0});
  } else if (isRouterHoldMessage(deployment.message)) {
    holds.push_back({"router", deployment.message, 0});
  }
  return holds;
}

}  // namespace tide::model
