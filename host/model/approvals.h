#pragma once
// N-of-M human approval (docs/architecture.md#human-approval): what an operation waiting in
// PENDING_APPROVAL needs, the approvals people gave it, and whether they are enough. Pure
// functions over the `approvals` object of an operation's decision, so the ledger (which
// records an approval and moves the operation in one transaction), the approval stage
// (which re-evaluates what waits) and the views all apply one rule.
//
//   decision.approvals = {"required": 2, "role": "approver", "distinct_from": ["requester"],
//                         "given": [{"actor": "alice", "role": "approver", "override": false,
//                                    "reason": "", "at": "..."}]}
//
// An approval counts when its actor holds at least `role` (viewer < operator < approver <
// admin), is not named by `distinct_from` ("requester" names the operation's requested_by),
// and no approval of the same party (sameParty: a token and the tokens it minted) counted
// before it. The operation is approved when `required` approvals count
// and, while it is soft-denied (decision.overridable), at least one of them overrides.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "host/core/status.h"
#include "host/model/records.h"

namespace tide::model {

// What a `manual{...}` verdict, or a plan's approval.min_approvals, asks for.
struct ApprovalRequirement {
  int approvals = 1;
  std::string role;                        // "" any approver the API lets in
  std::vector<std::string> distinct_from;  // token names, or "requester"
};

// The strictest of both: the larger count, the higher role, every distinct_from name.
ApprovalRequirement strictest(const ApprovalRequirement& a, const ApprovalRequirement& b);

// "" when `role` is one the requirement may name, else why not.
std::string checkRequirementRole(const std::string& role);

struct GivenApproval {
  std::string actor;
  std::string role;
  bool override = false;
  std::string reason;
  std::string at;
  // The tokens that minted the actor's token, nearest first ("minted_by" in the decision;
  // empty for a config token, and for approvals recorded before minters were).
  std::vector<std::string> minted_by;
};

// Four eyes across minted tokens (docs/architecture.md#four-eyes): whoever mints a token
// sees its secret, so a token acts for everyone up its chain of minters. Two actors are one
// party when they are the same token or one is among the other's minters: an approver token
// alice minted approves as alice, and a token minted by the approver requests as the
// approver. `*_minted_by` is each actor's chain, as TokenRecords::mintersOf answers it.
bool sameParty(const std::string& a, const std::vector<std::string>& a_minted_by, const std::string& b,
               const std::vector<std::string>& b_minted_by);

struct ApprovalState {
  ApprovalRequirement requirement;
  bool overridable = false;  // soft-denied: an approval must override
  std::vector<GivenApproval> given;
};

// decision.approvals (and decision.overridable) of an operation; one approval from anyone
// when the decision has none (operations decided before approvals were counted).
ApprovalState approvalStateOf(const Json& decision);
// The JSON decision.approvals holds (without overridable, which the decision keeps itself).
Json approvalsJson(const ApprovalState& state);

// The approvals that count, in the order they were given.
std::vector<const GivenApproval*> countedApprovals(const ApprovalState& state, const std::string& requested_by);
// The counted approvals' actors, comma-separated: an approved operation's approved_by.
std::string countedActors(const ApprovalState& state, const std::string& requested_by);
// How many more approvals must count before the operation is approved (0 when complete).
int approvalsStillNeeded(const ApprovalState& state, const std::string& requested_by);

// --- The one rule of who may approve what ------------------------------------------------
// The API (before it writes anything), the ledger (in the transaction that records an
// approval) and the approval stage (when it re-decides what waits) all ask judgeApproval;
// none of them has a rule of its own.

// The operation being decided, as far as the rule needs it.
struct ApprovalCase {
  int64_t operation_id = 0;  // only names the operation in refusals
  std::string requested_by;
  ApprovalState state;  // what the policies' manual{...} asked for, soft deny, approvals given
  // The plan's approval.min_approvals; the stricter of it and the policies' count applies.
  int plan_min_approvals = 1;
  // auth.approver_must_differ (the host's four-eyes rule). It is checked against the person
  // deciding now; approvals already given passed it when they were given.
  bool approver_must_differ = false;
  // The requester's chain of minters (sameParty): the person deciding must not be among them.
  std::vector<std::string> requester_minted_by;
};

enum class ApprovalAct { kApprove, kReject };

// Who decides now: a token's name and role; override and reason only when approving.
struct Approver {
  std::string name;
  std::string role;
  ApprovalAct act = ApprovalAct::kApprove;
  bool override = false;
  std::string reason;
  std::vector<std::string> minted_by;  // the token's chain of minters (sameParty)
};

struct ApprovalRuling {
  // OK when the approver may decide now; else why not: kPermissionDenied (four eyes, role,
  // distinct_from), kConflict (already approved; a plain approval of a soft deny),
  // kInvalidArgument (an override without a reason).
  Status allowed;
  // The state with the approval counted in when it is allowed (the given one otherwise),
  // with the plan's minimum folded into its requirement.
  ApprovalState after;
  int still_needed = 0;      // of `after`; 0 when complete
  bool complete = false;     // `after` has enough approvals: the operation is APPROVED
  std::string approved_by;   // the counted actors, comma-separated, when complete
};

// May `approver` approve (or reject) the operation now, and is it then fully approved? With
// no approver, only whether the approvals already given are enough. A rejection needs only
// the four-eyes rule: any one person who may decide rejects.
ApprovalRuling judgeApproval(const ApprovalCase& operation, const std::optional<Approver>& approver);

// Shorthands over judgeApproval without the host's four-eyes rule or a plan minimum.
bool approvalComplete(const ApprovalState& state, const std::string& requested_by);
Status checkApproval(const ApprovalState& state, const std::string& requested_by, const GivenApproval& approval);
// "1 of 2 approvals (alice)"; "" for an operation without approvals to count.
std::string describeApprovals(const Json& decision, const std::string& requested_by);

// --- Approving a whole rollout (docs/architecture.md#approving-a-rollout) ---------------
// `tide deployment approve` keeps the approver's approval in the deployment's signals
// ("approvals": [{actor, role, reason, at, minted_by}]). It is given again, by its actor, to
// every operation of that rollout that comes to wait in PENDING_APPROVAL: one approval (and
// one audit record) per operation, judged there by judgeApproval like any other.
inline constexpr const char* kRolloutApprovalsSignal = "approvals";
std::vector<GivenApproval> rolloutApprovals(const Json& signals);
Json givenApprovalJson(const GivenApproval& approval);
// Whether `operation` is one of `deployment`'s rollout, which its rollout approvals cover:
// asked for by the controller for it (its intent), on behalf of the one who added it.
bool inRolloutOf(const Operation& operation, const Deployment& deployment);
// The approval a rollout approval gives one operation: its actor, role and minters, with the
// reason saying where it came from.
GivenApproval fromRolloutApproval(const GivenApproval& rollout_approval);

}  // namespace tide::model
