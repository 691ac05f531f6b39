#pragma once
// Verdicts, levels and the combination rule of docs/architecture.md#combination-rules, as pure functions.
//
//   any hard or soft deny      -> REJECTED (overridable by an approver when all are soft)
//   else any manual            -> PENDING_APPROVAL
//   else at least one approve  -> APPROVED
//   else the default           -> PENDING_APPROVAL (manual) or REJECTED (deny)
// Advisory votes never count; they are only recorded. Abstain never counts.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tide::lua {

enum class Verdict { kApprove, kDeny, kManual, kAbstain };
enum class Level { kAdvisory, kSoft, kHard };
enum class Outcome { kApproved, kRejected, kPendingApproval };

const char* verdictName(Verdict verdict);  // approve | deny | manual | abstain
const char* levelName(Level level);        // advisory | soft | hard
const char* outcomeName(Outcome outcome);  // APPROVED | REJECTED | PENDING_APPROVAL (operation states)
std::optional<Verdict> parseVerdict(std::string_view name);
std::optional<Level> parseLevel(std::string_view name);

struct PolicyVote {
  std::string policy;
  Level level = Level::kHard;
  Verdict verdict = Verdict::kAbstain;
  std::string reason;
};

struct Combined {
  Outcome outcome = Outcome::kPendingApproval;
  std::string summary;       // one line naming the policies that decided it
  bool overridable = false;  // REJECTED by soft denies only: an approver may override
};

// `default_outcome` is kPendingApproval or kRejected; it applies when no policy approved.
Combined combineVotes(const std::vector<PolicyVote>& votes, Outcome default_outcome);

}  // namespace tide::lua
