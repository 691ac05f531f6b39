#pragma once
// Notifications (docs/operating.md#notifications): a thread per webhook of tide.yaml's
// `notifications.webhooks` that follows the ledger's events in order and posts each one its
// patterns match, as JSON, to the webhook's URL, so a team can wire its chat or paging
// (Slack's incoming webhooks read the `text` field).
//
// Delivery is at least once, in event order, per webhook: an event is posted until the
// receiver answers 2xx, with backoff (backoff_initial_ms, doubling, at most backoff_max_ms)
// on connection errors, timeouts, 5xx, 408 and 429, up to max_attempts; an event given up (a
// 4xx, or the attempts spent) becomes a `notification.failed` event and the next one is
// posted. Where each webhook is, the seq of the last event it was done with, is kept in
// `<cursor_dir>/<name>.seq`, so a restarted host goes on where it stopped, posting what
// happened while it was down; a webhook with no cursor yet starts at the newest event.
// A slow or dead receiver delays only its own webhook. Backoff waits on the injected Clock.
//
// Thread-safety: start()/stop() from one thread.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "host/model/notifications.h"

namespace tide::engine {

class Notifier {
 public:
  static constexpr const char* kActor = "notifier";

  // `ledger` and `clock` must outlive the Notifier.
  Notifier(ledger::Ledger& ledger, const Clock& clock, std::vector<model::Webhook> webhooks, std::string cursor_dir);
  ~Notifier();  // stop()s

  void start();
  void stop();

  // Whether `pattern` (an events entry of a Webhook) matches `event`.
  static bool matches(const std::string& pattern, const model::Event& event);
  // The JSON body posted for `event` to webhook `webhook`: {webhook, seq, at, kind, subject,
  // actor, data, text}, `text` a one-line summary.
  static model::Json body(const std::string& webhook, const model::Event& event);

 private:
  void follow(const model::Webhook& webhook, int64_t cursor);  // from the event after `cursor`
  // Posts `event` until it is delivered or given up; false when stop() came first.
  bool deliver(const model::Webhook& webhook, const model::Event& event);
  int64_t readCursor(const model::Webhook& webhook) const;
  void writeCursor(const model::Webhook& webhook, int64_t seq);

  ledger::Ledger& ledger_;
  const Clock& clock_;
  const std::vector<model::Webhook> webhooks_;
  const std::string cursor_dir_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
};

}  // namespace tide::engine
