#pragma once
// How the CLI shows each kind of record in table mode, as pure functions of the server's
// JSON (the wire shapes of host/model/records.cpp and the API's views). Missing keys print
// as empty cells rather than failing, so an older or newer server still gets a readable
// table; `-o json` is the exact answer.

#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "host/cli/table.h"
#include "host/core/clock.h"

namespace tide::cli {

using Json = nlohmann::json;

// Lists take the array of items.
void printNodeTable(std::ostream& out, const Json& nodes);
void printCapabilityTable(std::ostream& out, const Json& capabilities);
void printClusterTable(std::ostream& out, const Json& clusters);
// `deployment_counts` maps a plan name to its number of deployments.
void printPlanTable(std::ostream& out, const Json& plans, const std::map<std::string, int64_t>& deployment_counts);
// Items are {meta_instance, runtime_instances, operations?} as in the plan show view.
void printInstanceTable(std::ostream& out, const Json& instances);
void printOperationTable(std::ostream& out, const Json& operations);
void printEventTable(std::ostream& out, const Json& events, TableStyle style = {});

// `tide node show`: one node record.
void printNodeInfo(std::ostream& out, const Json& node);
// `tide deployment show`: the GET /v1/plans/{name} view
// {plan, deployments, instance_summary, operations_summary, instances}, with the Rollout
// section (host/cli/rollout_view.h) of the newest deployment, its times measured to `now`.
void printPlanShow(std::ostream& out, const Json& view, TimePoint now);

// `tide operations show`: the GET /v1/operations/{id} view, an operation with its
// "decisions" (each policy's verdict) and, when it counts approvals, "approvals"
// {required, counted, still_needed, summary}.
void printOperationInfo(std::ostream& out, const Json& view);
// `tide instances show`: the GET /v1/instances/{name} view {meta_instance,
// runtime_instances, operations}, with at most `operations_shown` operations, the newest.
void printInstanceInfo(std::ostream& out, const Json& view, size_t operations_shown = 10);
// `tide status`: the object host/cli/status_commands.cpp assembles (and `-o json` prints):
// {control_loop, plans {total, by_state}, plan_instances [...], rollouts [...],
// held_rollouts [...], waiting_for_approval [...], nodes {total, by_state,
// unreachable_agents}, failed_scripts [...]} (the three from GET /v1/status as it has them).
void printStatus(std::ostream& out, const Json& status);

}  // namespace tide::cli
