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

const char* outcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kApproved: return "APPROVED";
    case Outcome::kRejected: return "REJECTED";
    case Outcome::kPendingApproval: return "PENDING_APPROVAL";
  }
  return "PENDING_APPROVAL";
}

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
  std::vector<const PolicyVote*> denies, manuals, approvals;
  bool hard_deny = false;
  for (const PolicyVote& vote : votes) {
    if (vote.level == Level::kAdvisory) continue;
    switch (vote.verdict) {
      case Verdict::kDeny:
        denies.push_back(&vote);
        hard_deny = hard_deny || vote.level == Level::kHard;
        break;
      case Verdict::kManual: manuals.push_back(&vote); break;
      case Verdict::kApprove: approvals.push_back(&vote); break;
      case Verdict::kAbstain: break;
    }
  }
  if (!denies.empty()) {
    return {Outcome::kRejected, "denied by " + describe(denies), !hard_deny};
  }
  if (!manuals.empty()) {
    return {Outcome::kPendingApproval, "manual approval required by " + describe(manuals), false};
  }
  if (!approvals.empty()) {
    return {Outcome::kApproved, "approved by " + describe(approvals), false};
  }
  if (default_outcome == Outcome::kRejected) {
    return {Outcome::kRejected, "no policy approved; the default is to reject", false};
  }
  return {Outcome::kPendingApproval, "no policy approved; the default is manual approval", false};
}

}  // namespace tide::lua
