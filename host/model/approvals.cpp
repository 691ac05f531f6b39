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

bool among(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Whether `distinct_from` keeps `actor` (minted by `minted_by`) from counting: it names the
// actor or one of its minters, or "requester" and the actor is the requester's party.
bool excluded(const ApprovalRequirement& requirement, const std::string& requested_by,
              const std::vector<std::string>& requester_minted_by, const std::string& actor,
              const std::vector<std::string>& minted_by) {
  return std::any_of(requirement.distinct_from.begin(), requirement.distinct_from.end(), [&](const std::string& name) {
    if (name == "requester") return sameParty(requested_by, requester_minted_by, actor, minted_by);
    return name == actor || among(minted_by, name);
  });
}

// Why `actor` counts as `party` in a refusal: "" when it is that token itself.
std::string asParty(const std::string& actor, const std::vector<std::string>& minted_by, const std::string& party,
                    const std::vector<std::string>& party_minted_by) {
  if (actor == party) return "";
  if (among(minted_by, party)) return " (" + actor + " was minted by " + party + ")";
  if (among(party_minted_by, actor)) return " (" + actor + " minted " + party + "'s token)";
  return "";
}

}  // namespace

bool sameParty(const std::string& a, const std::vector<std::string>& a_minted_by, const std::string& b,
               const std::vector<std::string>& b_minted_by) {
  return a == b || among(a_minted_by, b) || among(b_minted_by, a);
}

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

namespace {

std::vector<GivenApproval> givenApprovalsOf(const Json& entries) {
  std::vector<GivenApproval> out;
  if (!entries.is_array()) return out;
  for (const Json& g : entries) {
    if (!g.is_object()) continue;
    GivenApproval given{g.value("actor", ""),  g.value("role", ""), g.value("override", false),
                        g.value("reason", ""), g.value("at", ""),   {}};
    for (const Json& minter : g.value("minted_by", Json::array())) {
      if (minter.is_string()) given.minted_by.push_back(minter.get<std::string>());
    }
    out.push_back(std::move(given));
  }
  return out;
}

}  // namespace

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
  state.given = givenApprovalsOf(approvals.value("given", Json::array()));
  return state;
}

Json givenApprovalJson(const GivenApproval& g) {
  Json entry{{"actor", g.actor}, {"role", g.role}, {"override", g.override}, {"reason", g.reason}, {"at", g.at}};
  if (!g.minted_by.empty()) entry["minted_by"] = g.minted_by;
  return entry;
}

std::vector<GivenApproval> rolloutApprovals(const Json& signals) {
  if (!signals.is_object()) return {};
  return givenApprovalsOf(signals.value(kRolloutApprovalsSignal, Json::array()));
}

bool inRolloutOf(const Operation& operation, const Deployment& deployment) {
  return operation.plan == deployment.plan && operation.intent == deployment.deployment_id &&
         operation.requested_by == deployment.added_by;
}

GivenApproval fromRolloutApproval(const GivenApproval& rollout_approval) {
  GivenApproval out = rollout_approval;
  out.override = false;  // a soft deny is overridden operation by operation, with its own reason
  out.reason =
      "approved with the whole rollout" + (rollout_approval.reason.empty() ? "" : ": " + rollout_approval.reason);
  out.at.clear();
  return out;
}

Json approvalsJson(const ApprovalState& state) {
  Json given = Json::array();
  for (const GivenApproval& g : state.given) given.push_back(givenApprovalJson(g));
  return Json{{"required", state.requirement.approvals},
              {"role", state.requirement.role},
              {"distinct_from", state.requirement.distinct_from},
              {"given", std::move(given)}};
}

std::vector<const GivenApproval*> countedApprovals(const ApprovalState& state, const std::string& requested_by) {
  std::vector<const GivenApproval*> out;
  for (const GivenApproval& g : state.given) {
    if (!holdsRole(g.role, state.requirement.role) ||
        excluded(state.requirement, requested_by, {}, g.actor, g.minted_by)) {
      continue;
    }
    const bool counted = std::any_of(out.begin(), out.end(), [&g](const GivenApproval* c) {
      return sameParty(c->actor, c->minted_by, g.actor, g.minted_by);
    });
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
  const bool requester = sameParty(requested_by, operation.requester_minted_by, actor, approver.minted_by);
  const std::string as_requester = asParty(actor, approver.minted_by, requested_by, operation.requester_minted_by);
  if (operation.approver_must_differ && requester) {
    const std::string verb = approver.act == ApprovalAct::kApprove ? "approved" : "rejected";
    return Status::permissionDenied("operation " + std::to_string(operation.operation_id) + " was requested by " +
                                    requested_by + as_requester + "; it must be " + verb +
                                    " by someone else (auth.approver_must_differ)");
  }
  // Anyone the route and the four-eyes rule let in may reject; one rejection rejects.
  if (approver.act == ApprovalAct::kReject) return Status::ok();
  const ApprovalRequirement& requirement = state.requirement;
  if (!holdsRole(approver.role, requirement.role)) {
    return Status::permissionDenied("this operation needs approvals from the " + requirement.role + " role or above; " +
                                    actor + " holds " + approver.role);
  }
  if (excluded(requirement, requested_by, operation.requester_minted_by, actor, approver.minted_by)) {
    if (requester && among(requirement.distinct_from, "requester")) {
      const std::string who = actor == requested_by ? actor + " requested this operation"
                                                    : "this operation was requested by " + requested_by + as_requester;
      return Status::permissionDenied(who + " and the policy asks for approvals distinct from the requester");
    }
    std::string named = actor;
    if (!among(requirement.distinct_from, actor)) {
      for (const std::string& minter : approver.minted_by) {
        if (among(requirement.distinct_from, minter)) named = minter;
      }
    }
    return Status::permissionDenied((named == actor ? actor + " is named" : actor + " was minted by " + named) +
                                    " and the policy asks for approvals distinct from " + named);
  }
  for (const GivenApproval& g : state.given) {
    if (g.actor == actor) return Status::conflict(actor + " has already approved this operation");
    if (sameParty(g.actor, g.minted_by, actor, approver.minted_by)) {
      return Status::conflict(actor + " has already approved this operation as " + g.actor +
                              asParty(actor, approver.minted_by, g.actor, g.minted_by));
    }
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
      ruling.after.given.push_back(
          {approver->name, approver->role, approver->override, approver->reason, "", approver->minted_by});
    }
  }
  ruling.still_needed = approvalsStillNeeded(ruling.after, operation.requested_by);
  ruling.complete = ruling.still_needed == 0;
  if (ruling.complete) ruling.approved_by = countedActors(ruling.after, operation.requested_by);
  return ruling;
}

bool approvalComplete(const ApprovalState& state, const std::string& requested_by) {
  return judgeApproval({0, requested_by, state, 1, false, {}}, std::nullopt).complete;
}

Status checkApproval(const ApprovalState& state, const std::string& requested_by, const GivenApproval& approval) {
  return judgeApproval({0, requested_by, state, 1, false, {}},
                       Approver{approval.actor, approval.role, ApprovalAct::kApprove, approval.override,
                                approval.reason, approval.minted_by})
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
