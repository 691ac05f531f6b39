#include "host/cli/event_waker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace tide::cli {
namespace {

// The events long poll lasts whole seconds, at most this many (the server's limit).
constexpr double kMaxEventWaitSeconds = 60;

}  // namespace

EventWaker::EventWaker(Client& client, std::string subject, double interval_seconds)
    : client_(client), subject_(std::move(subject)), interval_seconds_(interval_seconds) {
  if (Result<Json> whoami = client_.get("/v1/whoami"); whoami.isOk()) {
    after_ = whoami->value("last_event_seq", int64_t{0});
  }
}

void EventWaker::wait() {
  const double wait_seconds = std::clamp(std::ceil(interval_seconds_), 1.0, kMaxEventWaitSeconds);
  Query query = {{"after", std::to_string(after_)}, {"wait", std::to_string(static_cast<int>(wait_seconds))}};
  if (!subject_.empty()) query.emplace_back("subject", subject_);
  Result<Json> page = client_.get("/v1/events", query);
  if (!page.isOk()) {
    std::this_thread::sleep_for(std::chrono::duration<double>(interval_seconds_));
    return;
  }
  const Json& events = (*page)["items"];
  if (events.is_array() && !events.empty()) after_ = events.back().value("seq", after_);
}

}  // namespace tide::cli
