// /v1/events: the ledger's event log, as pages (optionally long-polled) and as a
// server-sent-events stream.

#include <algorithm>
#include <chrono>

#include "host/api/handlers.h"
#include "host/api/request_inputs.h"
#include "host/model/transitions.h"

namespace tide::api::events {
namespace {

using std::chrono::steady_clock;

constexpr int64_t kMaxWaitSeconds = 60;
// How long one blocking step lasts before the server's stop flag is looked at again.
constexpr std::chrono::milliseconds kWaitSlice{200};
// An idle stream sends a comment this often, which is how a gone client is noticed.
constexpr std::chrono::seconds kHeartbeat{15};
constexpr int64_t kStreamBatch = 100;

// Waits until an event with seq > `seen` exists; false once `deadline` passes or the
// server begins to stop.
bool waitForNewer(ApiContext& context, int64_t seen, steady_clock::time_point deadline) {
  while (!context.stopping) {
    steady_clock::time_point now = steady_clock::now();
    if (now >= deadline) return false;
    auto slice = std::min(kWaitSlice, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    if (context.ledger.audit().waitForEvents(seen, slice)) return true;
  }
  return false;
}

Status tooManyWaiting() {
  return Status::resourceExhausted("too many clients are waiting for events right now; retry shortly");
}

std::string sseMessage(const model::Event& event) {
  return "id: " + std::to_string(event.seq) + "\nevent: " + event.kind + "\ndata: " + dumpJson(Json(event)) + "\n\n";
}

// The filters of the event list and stream (AuditRecords::listEvents); `since` and `until` come
// through readTimeWindow.
const std::vector<QueryFilter>& eventFilters() {
  static const std::vector<QueryFilter> kFilters = {
      {"kind"}, {"subject"}, {"actor"}, {"plan"}, {"state", model::everyState(), true}};
  return kFilters;
}

struct StreamState {
  ledger::ListOptions options;  // options.after is the stream's cursor
  std::shared_ptr<void> slot;
  steady_clock::time_point last_write = steady_clock::now();
};

}  // namespace

Result<ApiResponse> list(ApiContext& context, const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(ledger::ListOptions options,
                        readListOptions(request, eventFilters(), {"since", "until", "wait"}));
  TIDE_RETURN_IF_ERROR(readTimeWindow(request, context.clock.now(), options));
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> wait, readIntegerParam(request, "wait", 0, kMaxWaitSeconds));
  // An event appended from now on is no earlier than now: past an `until` that has gone by.
  auto until = options.filters.find("until");
  const bool can_arrive = until == options.filters.end() || until->second > formatTimestamp(context.clock.now());

  // `seen` is read before listing, so an event appended in between is either in the page
  // or wakes the wait below.
  int64_t seen = context.ledger.audit().lastEventSeq();
  TIDE_ASSIGN_OR_RETURN(ledger::Page<model::Event> page, context.ledger.audit().listEvents(options));
  if (page.items.empty() && wait.value_or(0) > 0 && can_arrive) {
    std::shared_ptr<void> slot = context.wait_slots.tryAcquire();
    if (!slot) return tooManyWaiting();
    steady_clock::time_point deadline = steady_clock::now() + std::chrono::seconds(*wait);
    while (page.items.empty() && waitForNewer(context, std::max(seen, options.after), deadline)) {
      seen = context.ledger.audit().lastEventSeq();
      TIDE_ASSIGN_OR_RETURN(page, context.ledger.audit().listEvents(options));
    }
  }
  return pageReply(page);
}

Result<ApiResponse> stream(ApiContext& context, const ApiRequest& request) {
  auto state = std::make_shared<StreamState>();
  TIDE_ASSIGN_OR_RETURN(state->options, readListOptions(request, eventFilters(), {"since", "until"}));
  TIDE_RETURN_IF_ERROR(readTimeWindow(request, context.clock.now(), state->options));
  state->options.limit = kStreamBatch;
  // A reconnecting EventSource resumes from the last id it saw.
  if (!request.query.contains("after")) {
    TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> resume,
                          readIntegerHeader("Last-Event-ID", request.last_event_id, 0, INT64_MAX));
    state->options.after = resume.value_or(0);
  }
  state->slot = context.wait_slots.tryAcquire();
  if (!state->slot) return tooManyWaiting();

  ApiResponse response;
  response.content_type = "text/event-stream";
  response.headers.emplace_back("Cache-Control", "no-cache");
  response.stream = [&context, state](const StreamWriter& write) -> bool {
    if (context.stopping) return false;
    int64_t seen = context.ledger.audit().lastEventSeq();
    Result<ledger::Page<model::Event>> page = context.ledger.audit().listEvents(state->options);
    if (!page.isOk()) {
      write(": " + page.status().toString() + "\n\n");
      return false;
    }
    for (const model::Event& event : page->items) {
      if (!write(sseMessage(event))) return false;
      state->options.after = event.seq;
      state->last_write = steady_clock::now();
    }
    if (page->next_after != 0) return true;
    // Everything up to `seen` has been looked at, matching the filters or not.
    state->options.after = std::max(state->options.after, seen);
    if (steady_clock::now() - state->last_write >= kHeartbeat) {
      if (!write(": keep-alive\n\n")) return false;
      state->last_write = steady_clock::now();
    }
    waitForNewer(context, state->options.after, steady_clock::now() + kWaitSlice);
    return true;
  };
  return response;
}

}  // namespace tide::api::events
