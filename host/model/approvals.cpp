#include "host/model/approvals.h"

#include <algorithm>
#include <array>
#include <string_view>

namespace tide::model {
namespace {

// The roles that can approve, weakest first; a token of any other role (agent) never counts
// towards a requirement that names one.
constexpr std::array<std::string_view, 4> kRolesByRank = {"viewer", "operator", "approver", "admin"};

int rankOf(std::string_view role) {
  for (size_t i = 0; i < kRolesByRank.size(); ++i) {
    if (kRolesByRank[i] == role) return static_cast<int>(i);
  }
  return -1;
}

bool holdsRole(const std::string& held, const std::string& required) {
  return required.empty() || rankOf(held) >= rankOf(required);
}

// Whether `distinct_from` keeps `actor` from counting.
bool excluded(const ApprovalRequirement& requirement, const std::string& requested_by, const std::string& actor) {
  return std::any_of(requirement.distinct_from.begin(), requirement.distinct_from.end(), [&](const std::string& name) {
    return name == actor || (name == "requester" && actor == requested_by);
  });
}

}  // namespace

ApprovalRequirement strictest(const ApprovalRequirement& a, const ApprovalRequirement& b) {
  ApprovalRequirement out = a;
  out.approvals = std::max(a.approvals, b.approvals);
  if (rankOf(b.role) > rankOf(a.role)) out.role = b.role;
  for (const std::string& name : b.distinct_from) {
    if (std::find(out.distinct_from.begin(), out.distinct_from.end(), name) == out.distinct_from.end()) {
      out.distinct_from.push_back(name);
    }
  }
  std::sort(out.distinct_from.begin(), out.distinct_from.end());
  return out;
}

std::string checkRequirementRole(const std::string& role) {
  if (role.empty() || rankOf(role) >= 0) return "";
  return "role must be viewer, operator, approver or admin, not '" + role + "'";
}

ApprovalState approvalStateOf(const Json& decision) {
  ApprovalState state;
  if (!decision.is_object()) return state;
  state.overridable = decision.value("overridable", false);
  auto it = decision.find("approvals");
  if (it == decision.end() || !it->is_object()) return state;
  const Json& approvals = *it;
  state.requirement.approvals = std::max<int>(1, approvals.value("required", 1));
  state.requirement.role = approvals.value("role", "");
  for (const Json& name : approvals.value("distinct_from", Json::array())) {
    if (name.is_string()) state.requirement.distinct_from.push_back(name.get<std::string>());
  }
  for (const Json& g : approvals.value("given", Json::array())) {
    if (!g.is_object()) continue;
    state.given.push_back({g.value("actor", ""), g.value("role", ""), g.value("override", false),
                           g.value("reason", ""), g.value("at", "")});
  }
  return state;
}

Json approvalsJson(const ApprovalState& state) {
  Json given = Json::array();
  for (const GivenApproval& g : state.given) {
    given.push_back(
        {{"actor", g.actor}, {"role", g.role}, {"override", g.override}, {"reason", g.reason}, {"at", g.at}});
  }
  return Json{{"required", state.requirement.approvals},
              {"role", state.requirement.role},
              {"distinct_from", state.requirement.distinct_from},
              {"given", std::move(given)}};
}

std::vector<const GivenApproval*> countedApprovals(const ApprovalState& state, const std::string& requested_by) {
  std::vector<const GivenApproval*> out;
  for (const GivenApproval& g : state.given) {
    if (!holdsRole(g.role, state.requirement.role) || excluded(state.requirement, requested_by, g.actor)) continue;
    const bool counted =
        std::any_of(out.begin(), out.end(), [&g](const GivenApproval* c) { return c->actor == g.actor; });
    if (!counted) out.push_back(&g);
  }
  return out;
}

std::string countedActors(const ApprovalState& state, const std::string& requested_by) {
  std::string out;
  for (const GivenApproval* g : countedApprovals(state, requested_by)) out += (out.empty() ? "" : ",") + g->actor;
  return out;
}

int approvalsStillNeeded(const ApprovalState& state, const std::string& requested_by) {
  const std::vector<const GivenApproval*> counted = countedApprovals(state, requested_by);
  const int missing = std::max(0, state.requirement.approvals - static_cast<int>(counted.size()));
  const bool overridden =
      std::any_of(counted.begin(), counted.end(), [](const GivenApproval* g) { return g->override; });
  // A soft deny stays until someone overrides it, however many plain approvals there are.
  return state.overridable && !overridden ? std::max(missing, 1) : missing;
}

namespace {

// Why `approver` may not approve `operation` now, or OK; the order is the order of the
// refusals a caller sees: four eyes, role, distinct_from, already approved, override.
Status mayApprove(const ApprovalCase& operation, const ApprovalState& state, const Approver& approver) {
  const std::string& requested_by = operation.requested_by;
  const std::string& actor = approver.name;
  if (operation.approver_must_differ && requested_by == actor) {
    const std::string verb = approver.act == ApprovalAct::kApprove ? "approved" : "rejected";
    return Status::permissionDenied("operation " + std::to_string(operation.operation_id) + " was requested by " +
                                    actor + "; it must be " + verb + " by someone else (auth.approver_must_differ)");
  }
  // Anyone the route and the four-eyes rule let in may reject; one rejection rejects.
  if (approver.act == ApprovalAct::kReject) return Status::ok();
  const ApprovalRequirement& requirement = state.requirement;
  if (!holdsRole(approver.role, requirement.role)) {
    return Status::permissionDenied("this operation needs approvals from the " + requirement.role + " role or above; " +
                                    actor + " holds " + approver.role);
  }
  if (excluded(requirement, requested_by, actor)) {
    const bool requester = actor == requested_by;
    return Status::permissionDenied(actor + (requester ? " requested this operation" : " is named") +
                                    " and the policy asks for approvals distinct from " +
                                    (requester ? std::string("the requester") : actor));
  }
  for (const GivenApproval& g : state.given) {
    if (g.actor == actor) return Status::conflict(actor + " has already approved this operation");
  }
  if (approver.override && approver.reason.empty()) {
    return Status::invalidArgument("an override needs a reason", {{"reason", "required with override", ""}});
  }
  if (state.overridable && !approver.override) {
    return Status::conflict(
        "this operation was denied by a soft policy; approve it with override and a reason, or reject it");
  }
  return Status::ok();
}

}  // namespace

ApprovalRuling judgeApproval(const ApprovalCase& operation, const std::optional<Approver>& approver) {
  ApprovalRuling ruling;
  ruling.after = operation.state;
  ruling.after.requirement.approvals = std::max(ruling.after.requirement.approvals, operation.plan_min_approvals);
  if (approver) {
    ruling.allowed = mayApprove(operation, ruling.after, *approver);
    if (ruling.allowed.isOk() && approver->act == ApprovalAct::kApprove) {
      ruling.after.given.push_back({approver->name, approver->role, approver->override, approver->reason, ""});
    }
  }
  ruling.still_needed = approvalsStillNeeded(ruling.after, operation.requested_by);
  ruling.complete = ruling.still_needed == 0;
  if (ruling.complete) ruling.approved_by = countedActors(ruling.after, operation.requested_by);
  return ruling;
}

bool approvalComplete(const ApprovalState& state, const std::string& requested_by) {
  return judgeApproval({0, requested_by, state}, std::nullopt).complete;
}

Status checkApproval(const ApprovalState& state, const std::string& requested_by, const GivenApproval& approval) {
  return judgeApproval({0, requested_by, state},
                       Approver{approval.actor, approval.role, ApprovalAct::kApprove, approval.override, approval.reason})
      .allowed;
}

std::string describeApprovals(const Json& decision, const std::string& requested_by) {
  if (!decision.is_object() || !decision.contains("approvals")) return "";
  const ApprovalState state = approvalStateOf(decision);
  std::string names;
  for (const GivenApproval* g : countedApprovals(state, requested_by)) {
    names += (names.empty() ? "" : ", ") + g->actor + (g->override ? " (override)" : "");
  }
  const int counted = static_cast<int>(countedApprovals(state, requested_by).size());
  std::string out = std::to_string(counted) + " of " + std::to_string(state.requirement.approvals) +
                    (state.requirement.approvals == 1 ? " approval" : " approvals");
  return names.empty() ? out : out + " (" + names + ")";
}

}  // namespace tide::model
