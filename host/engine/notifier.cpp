#include "host/engine/notifier.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <httplib.h>

#include "host/core/durable_file.h"
#include "host/core/thread_guard.h"
#include "host/engine/loop_errors.h"
#include "host/engine/outbound_http.h"

namespace tide::engine {
namespace {

constexpr int64_t kPage = 100;
// How long a follower waits for new events before it looks at stop() again.
constexpr std::chrono::milliseconds kPoll{200};

// One attempt: the receiver's status, or 0 with `error` saying why there was none.
int post(const model::Webhook& webhook, const std::string& text, std::string& error) {
  std::string origin, path;
  if (!splitUrl(webhook.url, origin, path)) {
    error = "bad url";
    return 0;
  }
  httplib::Client client(origin);
  const time_t seconds = webhook.timeout_ms / 1000;
  const time_t micros = static_cast<time_t>(webhook.timeout_ms % 1000) * 1000;
  client.set_connection_timeout(seconds, micros);
  client.set_read_timeout(seconds, micros);
  client.set_write_timeout(seconds, micros);
  httplib::Result result = client.Post(path.empty() ? "/" : path, httplib::Headers{{"User-Agent", "tide-notifier"}},
                                       text, "application/json");
  if (!result) {
    error = transportError(result.error(), webhook.timeout_ms);
    return 0;
  }
  if (result->status < 200 || result->status >= 300) {
    error = "answered " + std::to_string(result->status);
    if (!result->body.empty()) error += ": " + result->body.substr(0, 200);
  }
  return result->status;
}

// A status worth trying again: none (a transport error), 5xx, 408 Request Timeout and 429 Too
// Many Requests. Any other 4xx says the request itself is wrong; sending it again changes nothing.
bool retryable(int status) { return status == 0 || status >= 500 || status == 408 || status == 429; }

std::string summary(const model::Event& event) {
  const model::Json& d = event.data;
  std::string what;
  if (d.is_object()) {
    if (d.contains("from") && d.contains("to") && d["to"].is_string()) {
      what = d["from"].is_string() ? d["from"].get<std::string>() + " → " + d["to"].get<std::string>()
                                   : d["to"].get<std::string>();
    }
    for (const char* key : {"control", "actor", "message", "reason", "error"}) {
      if (d.contains(key) && d[key].is_string() && !d[key].get<std::string>().empty()) {
        what += std::string(what.empty() ? "" : ", ") + (std::string(key) == "message" ? "" : std::string(key) + " ") +
                d[key].get<std::string>();
      }
    }
  }
  std::string text = "tide: " + event.kind + " " + event.subject;
  if (!what.empty()) text += ": " + what;
  if (!event.actor.empty()) text += " (by " + event.actor + ")";
  return text;
}

}  // namespace

Notifier::Notifier(ledger::Ledger& ledger, const Clock& clock, std::vector<model::Webhook> webhooks,
                   std::string cursor_dir)
    : ledger_(ledger), clock_(clock), webhooks_(std::move(webhooks)), cursor_dir_(std::move(cursor_dir)) {}

Notifier::~Notifier() { stop(); }

void Notifier::start() {
  if (!threads_.empty()) return;
  stopping_ = false;
  for (const model::Webhook& webhook : webhooks_) {
    // Read here, not on the thread: an event appended once start() returned is never missed.
    const int64_t cursor = readCursor(webhook);
    threads_.emplace_back([this, &webhook, cursor] { follow(webhook, cursor); });
  }
}

void Notifier::stop() {
  stopping_ = true;
  clock_.wake();
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

bool Notifier::matches(const std::string& pattern, const model::Event& event) {
  const size_t colon = pattern.find(':');
  const std::string kind = pattern.substr(0, colon);
  const bool kind_matches = kind.size() >= 2 && kind.ends_with(".*")
                                ? event.kind.starts_with(kind.substr(0, kind.size() - 1))
                                : event.kind == kind;
  if (!kind_matches) return false;
  if (colon == std::string::npos) return true;
  const model::Json& d = event.data;
  return d.is_object() && d.contains("to") && d["to"].is_string() &&
         d["to"].get<std::string>() == pattern.substr(colon + 1);
}

model::Json Notifier::body(const std::string& webhook, const model::Event& event) {
  return model::Json{{"webhook", webhook}, {"seq", event.seq},         {"at", event.at},
                     {"kind", event.kind}, {"subject", event.subject}, {"actor", event.actor},
                     {"data", event.data}, {"text", summary(event)}};
}

void Notifier::follow(const model::Webhook& webhook, int64_t cursor) {
  while (!stopping_) {
    const bool ran = runGuarded(
        [&] {
          ledger::ListOptions page_options{kPage, cursor, {}};
          auto page = ledger_.audit().listEvents(page_options);
          if (!page.isOk() || page->items.empty()) {
            // Nothing new, or the ledger failed this read: wait, then read again.
            ledger_.audit().waitForEvents(cursor, kPoll);
            return;
          }
          int64_t done = cursor;
          int64_t written = cursor;  // what the cursor file says now
          for (const model::Event& event : page->items) {
            // Its own events are never posted: a dead receiver would feed itself.
            const bool wanted = !event.kind.starts_with("notification.") &&
                                std::any_of(webhook.events.begin(), webhook.events.end(),
                                            [&](const std::string& p) { return matches(p, event); });
            if (wanted && !deliver(webhook, event)) break;  // stop() came first: this one is posted next time
            done = event.seq;
            // A delivered event is written at once, so a crash repeats at most the one in flight.
            if (wanted) writeCursor(webhook, written = done);
          }
          if (done != written) writeCursor(webhook, done);  // events none of the patterns matched
          cursor = done;
        },
        [&](const std::string& what) { reportLoopException(ledger_, "notifier " + webhook.name, what); });
    if (!ran) clock_.sleepFor(std::chrono::seconds(1), [this] { return stopping_.load(); });  // no busy loop on a bug
  }
}

bool Notifier::deliver(const model::Webhook& webhook, const model::Event& event) {
  const std::string text = body(webhook.name, event).dump();
  std::chrono::milliseconds delay(webhook.backoff_initial_ms);
  std::string error;
  int attempts = 0;
  while (!stopping_) {
    ++attempts;
    const int status = post(webhook, text, error);
    if (status >= 200 && status < 300) return true;
    if (!retryable(status) || attempts >= webhook.max_attempts) {
      // Best effort: the event is given up whether or not this is written; stderr keeps it too.
      (void)ledger_.audit().appendEvent("notification.failed", "notification/" + webhook.name,
                                        model::Json{{"seq", event.seq},
                                                    {"kind", event.kind},
                                                    {"subject", event.subject},
                                                    {"attempts", attempts},
                                                    {"error", error}},
                                        kActor);
      return true;
    }
    if (clock_.sleepFor(delay, [this] { return stopping_.load(); })) break;
    delay = std::min(delay * 2, std::chrono::milliseconds(webhook.backoff_max_ms));
  }
  return false;
}

int64_t Notifier::readCursor(const model::Webhook& webhook) const {
  std::ifstream in(std::filesystem::path(cursor_dir_) / (webhook.name + ".seq"));
  std::string text;
  int64_t seq = 0;
  if (in >> text) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seq);
    if (ec == std::errc() && end == text.data() + text.size() && seq >= 0) return seq;
  }
  // No cursor (a new webhook) or one that cannot be read: from the newest event on, so a new
  // webhook is not flooded with the ledger's whole history.
  return ledger_.audit().lastEventSeq();
}

void Notifier::writeCursor(const model::Webhook& webhook, int64_t seq) {
  std::error_code ec;
  std::filesystem::create_directories(cursor_dir_, ec);
  // Best effort: a cursor not written repeats posts after a restart, at least once as promised.
  (void)writeFileDurably(std::filesystem::path(cursor_dir_) / (webhook.name + ".seq"), std::to_string(seq) + "\n");
}

}  // namespace tide::engine
