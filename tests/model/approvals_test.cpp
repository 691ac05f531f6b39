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
  return {actor, role, override, reason, ""};
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

}  // namespace tide::model
