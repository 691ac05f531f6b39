#include "host/lua/policy/policy_verdict.h"

namespace tide::lua {
namespace {

std::string describe(const std::vector<const PolicyVote*>& votes) {
  std::string out;
  for (const PolicyVote* vote : votes) {
    if (!out.empty()) out += "; ";
    out += vote->policy;
    if (!vote->reason.empty()) out += ": " + vote->reason;
  }
  return out;
}

}  // namespace

const char* verdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kApprove: return "approve";
    case Verdict::kDeny: return "deny";
    case Verdict::kManual: return "manual";
    case Verdict::kAbstain: return "abstain";
  }
  return "manual";
}

const char* levelName(Level level) {
  switch (level) {
    case Level::kAdvisory: return "advisory";
    case Level::kSoft: return "soft";
    case Level::kHard: return "hard";
  }
  return "hard";
}

model::OperationState outcomeState(Outcome outcome) {
  switch (outcome) {
    case Outcome::kApproved: return model::OperationState::kApproved;
    case Outcome::kRejected: return model::OperationState::kRejected;
    case Outcome::kPendingApproval: return model::OperationState::kPendingApproval;
  }
  return model::OperationState::kPendingApproval;
}

const char* outcomeName(Outcome outcome) { return model::toString(outcomeState(outcome)).c_str(); }

std::optional<Verdict> parseVerdict(std::string_view name) {
  for (Verdict v : {Verdict::kApprove, Verdict::kDeny, Verdict::kManual, Verdict::kAbstain}) {
    if (name == verdictName(v)) return v;
  }
  return std::nullopt;
}

std::optional<Level> parseLevel(std::string_view name) {
  for (Level l : {Level::kAdvisory, Level::kSoft, Level::kHard}) {
    if (name == levelName(l)) return l;
  }
  return std::nullopt;
}

Combined combineVotes(const std::vector<PolicyVote>& votes, Outcome default_outcome) {
  std::vector<const PolicyVote*> hard_denies, soft_denies, manuals, approvals;
  model::ApprovalRequirement requirement;
  for (const PolicyVote& vote : votes) {
    if (vote.level == Level::kAdvisory) continue;
    switch (vote.verdict) {
      case Verdict::kDeny: (vote.level == Level::kHard ? hard_denies : soft_denies).push_back(&vote); break;
      case Verdict::kManual:
        manuals.push_back(&vote);
        requirement = model::strictest(requirement, vote.requirement);
        break;
      case Verdict::kApprove: approvals.push_back(&vote); break;
      case Verdict::kAbstain: break;
    }
  }
  if (!hard_denies.empty()) {
    std::vector<const PolicyVote*> denies = hard_denies;
    denies.insert(denies.end(), soft_denies.begin(), soft_denies.end());
    return {Outcome::kRejected, "denied by " + describe(denies), false, {}};
  }
  if (!soft_denies.empty()) {
    std::string summary = "denied by " + describe(soft_denies) + " (soft: an approver may override it with a reason)";
    if (!manuals.empty()) summary += "; manual approval required by " + describe(manuals);
    return {Outcome::kPendingApproval, std::move(summary), true, requirement};
  }
  if (!manuals.empty()) {
    return {Outcome::kPendingApproval, "manual approval required by " + describe(manuals), false, requirement};
  }
  if (!approvals.empty()) {
    return {Outcome::kApproved, "approved by " + describe(approvals), false, {}};
  }
  if (default_outcome == Outcome::kRejected) {
    return {Outcome::kRejected, "no policy approved; the default is to reject", false, {}};
  }
  return {Outcome::kPendingApproval, "no policy approved; the default is manual approval", false, {}};
}

}  // namespace tide::lua
