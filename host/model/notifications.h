#pragma once
// Webhooks the host posts rollout and approval events to (docs/operating.md#notifications),
// as tide.yaml's `notifications.webhooks` declares them.

#include <string>
#include <vector>

namespace tide::model {

struct Webhook {
  std::string name;  // names the delivery cursor and the events about this webhook
  std::string url;   // http:// or https://
  // Which events are posted, each pattern an event kind ("operation.approval"), a prefix
  // ("deployment.*"), or a state event with the state it moved to
  // ("operation.state:PENDING_APPROVAL").
  std::vector<std::string> events = defaultEvents();
  int timeout_ms = 5000;         // per attempt: connect, send, read
  int max_attempts = 8;          // then the event is given up with a `notification.failed` event
  int backoff_initial_ms = 500;  // before the second attempt; doubles after each failure
  int backoff_max_ms = 60'000;

  // The rollouts and the approvals: what a team wants in its chat without the noise of every
  // instance's operations.
  static std::vector<std::string> defaultEvents() {
    return {"deployment.*", "operation.approval", "operation.state:PENDING_APPROVAL", "operation.state:REJECTED",
            "alarm.*"};
  }
  bool operator==(const Webhook&) const = default;
};

}  // namespace tide::model
