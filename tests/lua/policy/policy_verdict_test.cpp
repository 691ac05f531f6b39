#include "host/lua/policy/policy_verdict.h"
#include <doctest/doctest.h>

using namespace tide::lua;

namespace {

struct CombinationCase {
  const char* name;
  std::vector<PolicyVote> votes;
  Outcome default_outcome;
  Outcome expected;
  bool overridable;
};

PolicyVote vote(Level level, Verdict verdict) { return {"p", level, verdict, "because", {}}; }

}  // namespace

TEST_CASE("lua: verdicts combine by the combination rule") {
  using enum Level;
  using enum Verdict;
  const Outcome kManualDefault = Outcome::kPendingApproval;
  const std::vector<CombinationCase> cases = {
      {"a hard deny rejects", {vote(kHard, kDeny), vote(kHard, kApprove)}, kManualDefault, Outcome::kRejected, false},
      {"a soft deny waits for an approver's override",
       {vote(kSoft, kDeny), vote(kHard, kApprove)},
       kManualDefault,
       Outcome::kPendingApproval,
       true},
      {"hard and soft denies are not overridable",
       {vote(kSoft, kDeny), vote(kHard, kDeny)},
       kManualDefault,
       Outcome::kRejected,
       false},
      {"an advisory deny is only recorded",
       {vote(kAdvisory, kDeny), vote(kHard, kApprove)},
       kManualDefault,
       Outcome::kApproved,
       false},
      {"a hard deny beats manual", {vote(kSoft, kManual), vote(kHard, kDeny)}, kManualDefault, Outcome::kRejected, false},
      {"a soft deny beats manual: the wait needs an override",
       {vote(kHard, kManual), vote(kSoft, kDeny)},
       kManualDefault,
       Outcome::kPendingApproval,
       true},
      {"manual beats approve",
       {vote(kHard, kApprove), vote(kSoft, kManual)},
       kManualDefault,
       Outcome::kPendingApproval,
       false},
      {"an advisory manual is only recorded",
       {vote(kAdvisory, kManual), vote(kHard, kApprove)},
       kManualDefault,
       Outcome::kApproved,
       false},
      {"one approve among abstains approves",
       {vote(kHard, kAbstain), vote(kSoft, kApprove)},
       kManualDefault,
       Outcome::kApproved,
       false},
      {"an advisory approve alone does not approve",
       {vote(kAdvisory, kApprove)},
       kManualDefault,
       Outcome::kPendingApproval,
       false},
      {"only abstains: the manual default", {vote(kHard, kAbstain)}, kManualDefault, Outcome::kPendingApproval, false},
      {"no policies: the manual default", {}, kManualDefault, Outcome::kPendingApproval, false},
      {"only abstains: the deny default", {vote(kHard, kAbstain)}, Outcome::kRejected, Outcome::kRejected, false},
      {"the default does not override an approve",
       {vote(kHard, kApprove)},
       Outcome::kRejected,
       Outcome::kApproved,
       false},
  };
  for (const CombinationCase& c : cases) {
    CAPTURE(c.name);
    const Combined combined = combineVotes(c.votes, c.default_outcome);
    CHECK(combined.outcome == c.expected);
    CHECK(combined.overridable == c.overridable);
    CHECK_FALSE(combined.summary.empty());
  }
}

TEST_CASE("lua: the summary names the policies that decided") {
  const Combined combined = combineVotes(
      {{"freeze", Level::kHard, Verdict::kDeny, "year-end", {}}, {"dev", Level::kHard, Verdict::kApprove, "dev", {}}},
      Outcome::kPendingApproval);
  CHECK(combined.summary == "denied by freeze: year-end");
  CHECK(std::string(outcomeName(Outcome::kPendingApproval)) == "PENDING_APPROVAL");
  CHECK(parseVerdict("manual") == Verdict::kManual);
  CHECK_FALSE(parseVerdict("yes").has_value());
  CHECK(parseLevel("soft") == Level::kSoft);
}

TEST_CASE("lua: what waits asks for the strictest of the manual votes' approvals") {
  PolicyVote two{"two", Level::kHard, Verdict::kManual, "two people", {2, "approver", {"requester"}}};
  PolicyVote admin{"admin", Level::kSoft, Verdict::kManual, "an admin", {1, "admin", {"carol"}}};
  PolicyVote advisory{"loud", Level::kAdvisory, Verdict::kManual, "ten", {10, "", {}}};
  const Combined combined = combineVotes({two, admin, advisory}, Outcome::kPendingApproval);
  CHECK(combined.outcome == Outcome::kPendingApproval);
  CHECK(combined.approvals.approvals == 2);
  CHECK(combined.approvals.role == "admin");
  CHECK(combined.approvals.distinct_from == std::vector<std::string>{"carol", "requester"});

  const Combined soft_denied = combineVotes({two, {"freeze", Level::kSoft, Verdict::kDeny, "freeze", {}}},
                                            Outcome::kPendingApproval);
  CHECK(soft_denied.overridable);
  CHECK(soft_denied.approvals.approvals == 2);
  CHECK(soft_denied.summary.find("denied by freeze: freeze (soft") == 0);
}
