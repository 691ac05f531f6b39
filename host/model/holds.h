#pragma once
// Why a rollout does not move on (docs/api.md#status). The engine says why it holds an
// operation or a deployment back in the record's message; the builders and predicates here
// are the one place for those words, so that the status view (GET /v1/status) reads back
// what the engine wrote instead of guessing at sentences.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "host/model/records.h"

namespace tide::model {

// The message of an operation an `operation.before` hook holds back: "held by hook gate:
// night" for a veto, "delayed by hook gate: 30 s" for a delay.
std::string hookHoldMessage(bool veto, const std::string& hook, const std::string& reason);
// "veto" or "delay" when `operation` waits APPROVED because an `operation.before` hook
// vetoed or delayed its next attempt (the message hookHoldMessage made); "" otherwise. The
// controller holds the operation's rollout while it does (docs/architecture.md#runtime-hooks).
std::string_view hookHoldKind(const Operation& operation);
// The message of a PENDING operation the scheduler cannot place yet.
std::string placementWaitMessage(const std::string& why);
// The message prefixes of a rollout the deployment controller holds until the traffic
// router applies the split it asked for (docs/architecture.md#traffic-in-the-control-loop).
inline constexpr std::string_view kRouterWaitPrefix = "waiting for the router";
inline constexpr std::string_view kRouterDownPrefix = "router down";
bool isRouterHoldMessage(std::string_view deployment_message);

// One reason a rollout is held.
struct Hold {
  // approval: an operation of the rollout waits for people (PENDING_APPROVAL);
  // hook: an operation is vetoed or delayed by an `operation.before` hook;
  // placement: an operation waits for a node that can hold it;
  // paused: the deployment is PAUSED (by a person or by its strategy);
  // router: the deployment waits for the traffic router;
  // halted: the control loop is halted (see GET /v1/control).
  std::string kind;
  std::string reason;     // a sentence for people, naming the operation when there is one
  int64_t operation = 0;  // the operation held (approval, hook, placement); 0 otherwise
};

// The hold `operation` is under, or nullopt when nothing holds it (it runs, waits its turn
// or has ended).
std::optional<Hold> operationHold(const Operation& operation);

// The holds of an unfinished `deployment` of its own (paused, router); none for one that is
// over.
std::vector<Hold> deploymentHolds(const Deployment& deployment);

}  // namespace tide::model
