#pragma once
// Verdicts, levels and the combination rule of docs/architecture.md#combination-rules, as pure functions.
//
//   any hard deny              -> REJECTED
//   else any soft deny         -> PENDING_APPROVAL, overridable: an approver may override it
//                                 with a reason, or reject it
//   else any manual            -> PENDING_APPROVAL
//   else at least one approve  -> APPROVED
//   else the default           -> PENDING_APPROVAL (manual) or REJECTED (deny)
// Advisory votes never count; they are only recorded. Abstain never counts. What waits asks
// for the strictest of the manual votes' approval requirements (model::strictest), one
// approval when none asked for more.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/model/approvals.h"
#include "host/model/states.h"

namespace tide::lua {

enum class Verdict { kApprove, kDeny, kManual, kAbstain };
enum class Level { kAdvisory, kSoft, kHard };
enum class Outcome { kApproved, kRejected, kPendingApproval };

const char* verdictName(Verdict verdict);  // approve | deny | manual | abstain
const char* levelName(Level level);        // advisory | soft | hard
// The operation state an outcome moves its operation to, and its name (the state's).
model::OperationState outcomeState(Outcome outcome);
const char* outcomeName(Outcome outcome);  // APPROVED | REJECTED | PENDING_APPROVAL
std::optional<Verdict> parseVerdict(std::string_view name);
std::optional<Level> parseLevel(std::string_view name);

struct PolicyVote {
  std::string policy;
  Level level = Level::kHard;
  Verdict verdict = Verdict::kAbstain;
  std::string reason;
  model::ApprovalRequirement requirement;  // for kManual: what manual{...} asked for
};

struct Combined {
  Outcome outcome = Outcome::kPendingApproval;
  std::string summary;       // one line naming the policies that decided it
  bool overridable = false;  // PENDING_APPROVAL because of soft denies: an approval must override
  model::ApprovalRequirement approvals;  // what PENDING_APPROVAL needs
};

// `default_outcome` is kPendingApproval or kRejected; it applies when no policy approved.
Combined combineVotes(const std::vector<PolicyVote>& votes, Outcome default_outcome);

}  // namespace tide::lua
