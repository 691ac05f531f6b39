#pragma once
// Waiting for the ledger to record something, for verbs that follow a change until it ends
// (`tide deployment watch`, `tide deployment delete --scale-to-zero`): the events long poll
// (GET /v1/events?wait=S) returns as soon as a new event exists, and after `interval` at
// the latest, so what no event announces (an instance turning ready) is seen too.

#include <string>

#include "host/cli/client.h"

namespace tide::cli {

class EventWaker {
 public:
  // Wakes on events of `subject` ("" for any event) recorded from now on: the position is
  // the newest event's seq (GET /v1/whoami), or the start of the log when that cannot be read.
  EventWaker(Client& client, std::string subject, double interval_seconds);

  // Returns once an event past the last one seen exists, or after `interval` (whole seconds,
  // at least 1, at most the server's 60); sleeps `interval` when the events cannot be read.
  void wait();

 private:
  Client& client_;
  const std::string subject_;
  const double interval_seconds_;
  int64_t after_ = 0;
};

}  // namespace tide::cli
