#pragma once
// Operations, the approvals people give them and the policies' decisions (docs/architecture.md#operations).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/core/status.h"
#include "host/ledger/ledger_types.h"

namespace tide::ledger {

// Bookkeeping of the executor; unset fields are left alone; no event (state changes
// carry the story).
struct OperationUpdate {
  Generation generation;  // when set: kConflict if the operation moved since
  std::optional<int64_t> attempts;
  std::optional<std::string> next_attempt_at;
  std::optional<Json> target;
  std::optional<Json> decision;
  std::optional<std::string> message;
};

// The ledger's operations; Ledger::operations(). Every method keeps ledger.h's contracts.
class OperationRecords : public Repository {
 public:
  explicit OperationRecords(LedgerCore& core) : Repository(core) {}
  OperationRecords(const OperationRecords&) = delete;
  OperationRecords& operator=(const OperationRecords&) = delete;

  // --- operations --------------------------------------------------------------------------
  // At most one non-terminal operation per meta instance: a new one cancels an existing
  // PENDING / PENDING_APPROVAL one of strictly lower priority, otherwise kConflict. One that
  // people ask for (intent "user") must fit the instance (model::checkOperationFits), else
  // kConflict naming both and nothing is written; the controller's come from a strategy's
  // judgment and, when they do not fit, fail in the executor where the rollout sees it.
  Result<Operation> createOperation(const Operation& operation, const std::string& actor);
  Result<Operation> getOperation(int64_t id);
  // filters: state (a comma-separated list: any of them), plan, meta_instance, type, actor
  // (requested_by), since and until (a window of created_at: since <= created_at < until,
  // each a timestamp; kInvalidArgument naming the filter otherwise).
  Result<Page<Operation>> listOperations(const ListOptions& options);
  // `approved_by` is recorded when non-empty (APPROVED / REJECTED by a person or policy).
  // REJECTED releases the placement reserved for the operation, and leaves its meta
  // instance STOPPED when that is ACTIVE with nothing running, in the same transaction.
  // REJECTED, CANCELLED and FAILED give back a growth held for an UPDATE
  // (resizeForOperation) that its instance still holds.
  Result<Operation> setOperationState(int64_t id, OperationState state, Generation generation, const std::string& actor,
                                      const std::string& message = "", const std::string& approved_by = "");

  // Cancels operation `id` on behalf of `actor` (the `operation.state` event to CANCELLED
  // names them, with `message`): only one that has not started — PENDING,
  // PENDING_APPROVAL, or APPROVED before its first attempt (the executor counts the attempt
  // in its own write before it touches a driver, so the two cannot both win). The placement
  // it reserved is released in the same transaction. kConflict naming the state otherwise,
  // or when `generation` is given and the operation moved since.
  Result<Operation> cancelOperation(int64_t id, Generation generation, const std::string& actor,
                                    const std::string& message);

  // The unfinished operations (PENDING, PENDING_APPROVAL, APPROVED, RUNNING) of the meta
  // instances with ids `meta_ids`, at most one each, in id order: what a page of the instance
  // list shows as waiting or under way, read in one statement per slice of ids.
  Result<std::vector<Operation>> unfinishedOperations(const std::vector<int64_t>& meta_ids);
  // How many operations there are of each (type, state), for /metrics.
  Result<std::map<std::pair<std::string, std::string>, int64_t>> operationCounts();
  // The newest operation of every meta instance that is not DELETED: the unfinished one
  // when there is one (a new operation is only created when none is, or supersedes it).
  Result<std::vector<Operation>> latestOperations();
  Result<Operation> updateOperation(int64_t id, const OperationUpdate& update, const std::string& actor);

  // --- approvals ---------------------------------------------------------------------------
  // Records a person's approval of operation `id` in one transaction: the operation must be
  // PENDING_APPROVAL (and at `generation` when given; kConflict otherwise) and the approval
  // must count (model::checkApproval's errors). It joins decision.approvals.given and the
  // operation_approvals table, an "operation.approval" event names the actor, and once
  // enough approvals count the operation moves to APPROVED with approved_by the counted
  // actors. `approval.at` is set here.
  Result<Operation> addApproval(int64_t id, Generation generation, model::GivenApproval approval);
  // The approvals people gave operation `id`, oldest first.
  Result<std::vector<model::GivenApproval>> listApprovals(int64_t operation_id);

  // --- operations that create or resize -----------------------------------------------
  // A new meta instance of `deployment_id` and its first operation (`operation.meta_instance`
  // is ignored), in one transaction, so a crash never leaves an instance nobody works on.
  Result<Operation> createInstanceWithOperation(const std::string& plan, const std::string& deployment_id,
                                                const Operation& operation, const std::string& actor);
  // An UPDATE whose deployment's plan asks for other resources than its instance's active
  // runtime instance reserves (docs/architecture.md#changing-a-plan), at approval, in one
  // transaction: the runtime instance's reservation becomes the larger of the two sizes in
  // each resource (a growth is held from now on, so nothing else takes the room before the
  // UPDATE runs; a shrink waits for the UPDATE) and the operation's target records
  // `resize` {runtime_instance, node, from, to, held}. The executor sets the reservation to
  // `to` in the write that installs the new coordinates; an UPDATE that ends otherwise
  // (REJECTED, CANCELLED, FAILED) gives the held growth back in the transaction that ends it.
  // kUnprocessable when the node cannot hold the growth (nothing written), kConflict unless
  // the operation is a PENDING UPDATE of an instance that runs; a second call returns the
  // operation as it is.
  Result<Operation> resizeForOperation(int64_t operation_id, const Resources& to, const std::string& actor);

  // --- policy decisions ---------------------------------------------------------------
  Status recordDecisions(const std::vector<Decision>& decisions);
  Result<std::vector<Decision>> listDecisions(int64_t operation_id);
};

}  // namespace tide::ledger
