// The N-of-M approval rule (host/model/approvals.h) on its own: what counts, what is refused,
// and how far an operation got.
#include "host/model/approvals.h"

#include <doctest/doctest.h>

namespace tide::model {
namespace {

ApprovalState needs(int n, const std::string& role = "", std::vector<std::string> distinct_from = {}) {
  return ApprovalState{{n, role, std::move(distinct_from)}, false, {}};
}

GivenApproval by(const std::string& actor, const std::string& role = "approver", bool override = false,
                 const std::string& reason = "") {
  return {actor, role, override, reason, "", {}};
}

}  // namespace

TEST_CASE("model: approvals: N distinct people who hold the role and are not excluded complete an operation") {
  ApprovalState state = needs(2, "approver", {"requester"});
  state.given = {by("bob"), by("alice"), by("alice"), by("vera", "viewer")};
  CHECK(countedApprovals(state, "bob").size() == 1);  // bob requested it; alice counts once; vera lacks the role
  CHECK(approvalsStillNeeded(state, "bob") == 1);
  CHECK_FALSE(approvalComplete(state, "bob"));
  CHECK(approvalComplete(state, "carol"));
  CHECK(countedActors(state, "carol") == "bob,alice");
}

TEST_CASE("model: approvals: checkApproval refuses the requester, a weaker role, a second approval and a plain one of a soft deny") {
  ApprovalState state = needs(2, "approver", {"requester", "mallory"});
  CHECK(checkApproval(state, "bob", by("bob")).code() == Code::kPermissionDenied);
  CHECK(checkApproval(state, "bob", by("mallory", "admin")).code() == Code::kPermissionDenied);
  CHECK(checkApproval(state, "bob", by("otto", "operator")).code() == Code::kPermissionDenied);
  CHECK(checkApproval(state, "bob", by("root", "admin")).isOk());
  state.given.push_back(by("alice"));
  CHECK(checkApproval(state, "bob", by("alice")).code() == Code::kConflict);

  ApprovalState soft = needs(1);
  soft.overridable = true;
  CHECK(checkApproval(soft, "bob", by("alice")).code() == Code::kConflict);
  CHECK(checkApproval(soft, "bob", by("alice", "approver", true)).code() == Code::kInvalidArgument);
  CHECK(checkApproval(soft, "bob", by("alice", "approver", true, "INC-42")).isOk());
}

TEST_CASE("model: approvals: a soft deny needs an override among the counted approvals") {
  ApprovalState state = needs(2);
  state.overridable = true;
  state.given = {by("alice"), by("root", "admin")};
  CHECK(approvalsStillNeeded(state, "bob") == 1);
  state.given.push_back(by("carol", "approver", true, "hotfix"));
  CHECK(approvalComplete(state, "bob"));
}

TEST_CASE("model: approvals: the strictest requirement takes the larger count, the higher role and every exclusion") {
  const ApprovalRequirement a{2, "approver", {"requester"}};
  const ApprovalRequirement b{1, "admin", {"carol", "requester"}};
  const ApprovalRequirement s = strictest(a, b);
  CHECK(s.approvals == 2);
  CHECK(s.role == "admin");
  CHECK(s.distinct_from == std::vector<std::string>{"carol", "requester"});
  CHECK(strictest(ApprovalRequirement{}, a).role == "approver");
}

TEST_CASE("model: approvals: the decision's JSON round-trips and reads as '1 of 2 approvals (alice)'") {
  ApprovalState state = needs(2, "approver", {"requester"});
  state.given = {by("alice")};
  Json decision{{"outcome", "PENDING_APPROVAL"}, {"overridable", false}, {"approvals", approvalsJson(state)}};
  CHECK(describeApprovals(decision, "bob") == "1 of 2 approvals (alice)");
  const ApprovalState back = approvalStateOf(decision);
  CHECK(back.requirement.approvals == 2);
  CHECK(back.given.size() == 1);
  CHECK(back.given[0].actor == "alice");
  CHECK(describeApprovals(Json{{"outcome", "APPROVED"}}, "bob").empty());
  // An operation decided before approvals were counted waits for one person.
  CHECK(approvalStateOf(Json{{"outcome", "PENDING_APPROVAL"}}).requirement.approvals == 1);
}

// judgeApproval, the one rule the API, the ledger and the approval stage ask.
namespace {

ApprovalCase caseOf(ApprovalState state, const std::string& requested_by = "bob", bool approver_must_differ = false,
                    int plan_min_approvals = 1) {
  return ApprovalCase{7, requested_by, std::move(state), plan_min_approvals, approver_must_differ, {}};
}

Approver approver(const std::string& name, const std::string& role = "approver", bool override = false,
                  const std::string& reason = "") {
  return Approver{name, role, ApprovalAct::kApprove, override, reason, {}};
}

}  // namespace

TEST_CASE("model: judgeApproval: the four-eyes rule refuses the requester first, for approving and rejecting") {
  const ApprovalCase own = caseOf(needs(1), "bob", true);
  const ApprovalRuling approving = judgeApproval(own, approver("bob", "admin"));
  CHECK(approving.allowed.code() == Code::kPermissionDenied);
  CHECK(approving.allowed.message() ==
        "operation 7 was requested by bob; it must be approved by someone else (auth.approver_must_differ)");
  CHECK(approving.after.given.empty());
  CHECK_FALSE(approving.complete);
  const ApprovalRuling rejecting = judgeApproval(own, Approver{"bob", "admin", ApprovalAct::kReject, false, "", {}});
  CHECK(rejecting.allowed.message() ==
        "operation 7 was requested by bob; it must be rejected by someone else (auth.approver_must_differ)");
  // Without the host's rule the requester decides, unless the policy excludes them.
  CHECK(judgeApproval(caseOf(needs(1), "bob", false), approver("bob")).allowed.isOk());
  CHECK(judgeApproval(caseOf(needs(1, "", {"requester"}), "bob", false), approver("bob")).allowed.message() ==
        "bob requested this operation and the policy asks for approvals distinct from the requester");
}

TEST_CASE("model: judgeApproval: a rejection needs only the four-eyes rule") {
  const ApprovalCase strict = caseOf(needs(3, "admin", {"requester", "otto"}), "bob", true);
  CHECK(judgeApproval(strict, Approver{"otto", "approver", ApprovalAct::kReject, false, "", {}}).allowed.isOk());
}

TEST_CASE("model: judgeApproval: each refusal names its rule") {
  ApprovalState state = needs(2, "admin", {"requester", "mallory"});
  state.given = {by("root", "admin")};
  CHECK(judgeApproval(caseOf(state), approver("alice")).allowed.message() ==
        "this operation needs approvals from the admin role or above; alice holds approver");
  CHECK(judgeApproval(caseOf(state), approver("mallory", "admin")).allowed.message() ==
        "mallory is named and the policy asks for approvals distinct from mallory");
  CHECK(judgeApproval(caseOf(state), approver("root", "admin")).allowed.message() ==
        "root has already approved this operation");
  // An agent token holds no rank on the ladder and never counts.
  CHECK(judgeApproval(caseOf(needs(1, "viewer")), approver("node-1", "agent")).allowed.code() ==
        Code::kPermissionDenied);

  ApprovalState soft = needs(1);
  soft.overridable = true;
  CHECK(judgeApproval(caseOf(soft), approver("alice")).allowed.code() == Code::kConflict);
  CHECK(judgeApproval(caseOf(soft), approver("alice", "approver", true)).allowed.code() == Code::kInvalidArgument);
  const ApprovalRuling overridden = judgeApproval(caseOf(soft), approver("alice", "approver", true, "INC-42"));
  CHECK(overridden.allowed.isOk());
  CHECK(overridden.complete);
  CHECK(overridden.approved_by == "alice");
}

TEST_CASE("model: judgeApproval: the approval that counts last completes the operation, naming who counted") {
  ApprovalState state = needs(2, "approver", {"requester"});
  state.given = {by("alice")};
  const ApprovalRuling ruling = judgeApproval(caseOf(state), approver("root", "admin"));
  REQUIRE(ruling.allowed.isOk());
  CHECK(ruling.after.given.size() == 2);
  CHECK(ruling.still_needed == 0);
  CHECK(ruling.complete);
  CHECK(ruling.approved_by == "alice,root");

  const ApprovalRuling first = judgeApproval(caseOf(needs(2)), approver("alice"));
  CHECK(first.allowed.isOk());
  CHECK(first.still_needed == 1);
  CHECK_FALSE(first.complete);
  CHECK(first.approved_by.empty());
}

TEST_CASE("model: judgeApproval: the plan's min_approvals raises the policies' count, never lowers it") {
  ApprovalState state = needs(1);
  state.given = {by("alice")};
  const ApprovalRuling raised = judgeApproval(caseOf(state, "bob", false, 3), std::nullopt);
  CHECK(raised.after.requirement.approvals == 3);
  CHECK(raised.still_needed == 2);
  CHECK_FALSE(raised.complete);
  CHECK(judgeApproval(caseOf(needs(2), "bob", false, 1), std::nullopt).after.requirement.approvals == 2);
  // Without an approver the ruling only says whether what was given is enough.
  CHECK(judgeApproval(caseOf(state), std::nullopt).complete);
  CHECK(judgeApproval(caseOf(state), std::nullopt).allowed.isOk());
}

TEST_CASE("model: judgeApproval: a token counts as the party that minted it, up the chain, for four eyes and N of M") {
  // bob minted bob-bot (an approver token), which minted bob-bot2: both approve as bob.
  const std::vector<std::string> bot_minters = {"bob"};
  const std::vector<std::string> bot2_minters = {"bob-bot", "bob"};
  auto minted = [](const std::string& name, const std::vector<std::string>& minters) {
    return Approver{name, "approver", ApprovalAct::kApprove, false, "", minters};
  };
  const ApprovalCase own = caseOf(needs(1), "bob", true);
  CHECK(judgeApproval(own, minted("bob-bot", bot_minters)).allowed.message() ==
        "operation 7 was requested by bob (bob-bot was minted by bob); it must be approved by someone else "
        "(auth.approver_must_differ)");
  CHECK(judgeApproval(own, minted("bob-bot2", bot2_minters)).allowed.code() == Code::kPermissionDenied);
  CHECK(judgeApproval(own, minted("alice", {"root"})).allowed.isOk());
  CHECK(sameParty("bob", {}, "bob-bot2", bot2_minters));
  CHECK_FALSE(sameParty("alice", {"root"}, "bob", {"root"}));  // a common minter is not one party

  // The other way round: a token alice minted requested; alice may not approve it.
  ApprovalCase by_bot = caseOf(needs(1), "alice-bot", true);
  by_bot.requester_minted_by = {"alice"};
  CHECK(judgeApproval(by_bot, minted("alice", {"root"})).allowed.message() ==
        "operation 7 was requested by alice-bot (alice minted alice-bot's token); it must be approved by someone "
        "else (auth.approver_must_differ)");

  // The policy's distinct_from: "requester" and a named person reach their minted tokens.
  CHECK(judgeApproval(caseOf(needs(1, "", {"requester"}), "bob"), minted("bob-bot", bot_minters)).allowed.message() ==
        "this operation was requested by bob (bob-bot was minted by bob) and the policy asks for approvals distinct "
        "from the requester");
  CHECK(judgeApproval(caseOf(needs(1, "", {"bob"}), "carol"), minted("bob-bot2", bot2_minters)).allowed.message() ==
        "bob-bot2 was minted by bob and the policy asks for approvals distinct from bob");

  // Two approvals of one party are one approval: the second is refused, and one recorded
  // before this rule (both in `given`) counts once.
  ApprovalState two = needs(2);
  two.given = {GivenApproval{"bob", "approver", false, "", "", {}}};
  const ApprovalRuling again = judgeApproval(caseOf(two, "carol"), minted("bob-bot", bot_minters));
  CHECK(again.allowed.message() == "bob-bot has already approved this operation as bob (bob-bot was minted by bob)");
  two.given.push_back(GivenApproval{"bob-bot", "approver", false, "", "", bot_minters});
  CHECK(approvalsStillNeeded(two, "carol") == 1);
  CHECK(judgeApproval(caseOf(two, "carol"), minted("alice", {"root"})).complete);

  // The chain survives the decision's JSON.
  CHECK(approvalStateOf(Json{{"approvals", approvalsJson(two)}}).given.back().minted_by == bot_minters);
}

}  // namespace tide::model
