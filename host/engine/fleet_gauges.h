#pragma once
// The state of the fleet that /metrics shows (docs/api.md#metrics): each plan's rollout,
// its desired and running instances, and its operations waiting for a person. The control
// loop takes it from its world at the end of every pass (EngineMetrics::observeFleet), so
// a scrape reads memory and never the ledger, and shows the fleet as of the last pass.
//
// What taking it costs a pass: a lookup per plan (the world counts running instances as
// they change), the plan's deployments, and one look at each instance with an unfinished
// operation (World::operating, which dispatch walks anyway); never a walk over the fleet.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "host/core/clock.h"
#include "host/model/records.h"

namespace tide::engine {

struct World;

struct PlanGauges {
  bool active = false;  // an ACTIVE plan: its rollout and instances are shown
  // Of the plan's newest deployment: "in_progress" (PENDING, IN_PROGRESS), "held" (PAUSED,
  // by its strategy or a person), "failed" (FAILED, aborts included), "rolled_back"; "" when
  // it completed or was cancelled, or the plan has none.
  std::string rollout;
  std::optional<TimePoint> held_since;            // when "held": since when (the deployment's paused_since)
  int64_t desired_instances = 0;                  // the instance_count of World::currentDeployment, 0 without one
  int64_t running_instances = 0;                  // with their active runtime instance RUNNING
  int64_t waiting_approval = 0;                   // operations in PENDING_APPROVAL, of any plan state
  std::optional<TimePoint> oldest_waiting_since;  // when the longest-waiting of them began to wait
};

struct FleetGauges {
  std::map<std::string, PlanGauges> plans;  // by plan name
};

FleetGauges fleetGauges(const World& world);

// When `op`, in PENDING_APPROVAL, began to wait: the decision's `waiting_since` (written by
// the approval stage), else its updated_at (an operation decided before that was written).
std::optional<TimePoint> waitingSince(const model::Operation& op);

}  // namespace tide::engine
