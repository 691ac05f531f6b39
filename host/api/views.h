#pragma once
// Composite read views the API serves beyond single records: the plan "show" view and a
// meta instance with its runtime instances (and operations). Each is assembled from a
// few list calls, not one query per row; reads are not one snapshot, so a view taken
// while the engine works may mix moments a few milliseconds apart.

#include <map>
#include <string>
#include <vector>

#include "host/api/handler.h"
#include "host/ledger/ledger.h"

namespace tide::api {

// CREATE, UPDATE, RELOCATE, STOP, RESTART, DELETE (docs/architecture.md#records-and-states).

using ledger::listAll;

// {"plan", "deployments" (oldest first), "instance_summary" {total, running, pending,
// failed, ready, "by_deployment" {ID: {total, running, pending, failed, ready}}},
// "operations_summary" {TYPE: {STATE: n}} with every type and state present, "instances"
// [{"meta_instance", "runtime_instances", "operations"}], "next_after"}. The summaries
// count the whole plan (in the database); "instances" is one page of `page` (limit, after:
// a meta instance id) with each instance's current runtime instances and its newest
// operation; "next_after" is there when more follow. Meta instances in state DELETED are
// left out; "by_deployment" leaves out those MARKED_FOR_DELETION too.
// "waiting_for_approval": the plan's operations in PENDING_APPROVAL, oldest first, at most
// kWaitingForApprovalShown: {id, type, meta_instance, deployment (its intent),
// requested_by, approvals ("1 of 2 approvals (alice)"), still_needed}.
inline constexpr int kWaitingForApprovalShown = 20;
Result<Json> planShowView(ledger::Ledger& ledger, const model::Plan& plan, const ledger::ListOptions& page);

// GET /v1/status's "plans" and "held_rollouts" (docs/api.md#status), read as one snapshot.
// "plans": every plan, in name order, {name, namespace, state, deployment_id: its current
// deployment (model::currentDeployment; "" for none), desired: that deployment's
// instance_count (0 without one), instances: {total, running, pending, failed, ready} of its
// instances not DELETED (as GET /v1/plans/{name}'s instance_summary counts them),
// under_replicated: running < desired}. "held_rollouts": every deployment whose rollout is
// not over and is held (model::Hold), {plan, deployment_id, state, message, holds: [{kind,
// reason, operation (approval, hook and placement holds)}]}; a halted control loop holds
// every one. Costs a query per plan plus three.
Result<Json> fleetStatusView(ledger::Ledger& ledger);

// {"halted": bool, "halt": {kind, reason, details, since, by} or null, "partition": {since,
// nodes, message} or null}: whether the control loop is halted (docs/architecture.md#observer),
// and the partition alarm in force (docs/architecture.md#losing-a-node).
Result<Json> controlLoopView(ledger::Ledger& ledger);

// A DRAINING node's progress: {"instances_left": n, "instances": [{"instance", "state",
// "operation": {id, type, state, message} or null}]}, over the runtime instances on the node
// that hold resources (not TERMINATED or FAILED).
Result<Json> drainProgressView(ledger::Ledger& ledger, const model::Node& node);

// The operation under way or waiting on each of `metas` that has one (at most one each:
// docs/architecture.md#records-and-states), by meta instance name; what the instance list shows
// as "unfinished_operation", e.g. a CREATE "waiting for placement: ...". One query per
// page of instances.
Result<std::map<std::string, model::Operation>> unfinishedOperations(ledger::Ledger& ledger,
                                                                     const std::vector<model::MetaInstance>& metas);

// {"meta_instance", "runtime_instances"} plus "operations" when `with_operations`.
Result<Json> instanceView(ledger::Ledger& ledger, const model::MetaInstance& meta_instance, bool with_operations);

}  // namespace tide::api
