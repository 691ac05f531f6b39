// Notifications (host/engine/notifier.h) against a loopback cpp-httplib receiver: which events
// are posted and in what order, retries with backoff on the host's clock, giving up, and a
// restart going on from the cursor.
#include "host/engine/notifier.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/eventually.h"
#include "tests/support/temp_dir.h"

using namespace tide;
using namespace tide::engine;
using namespace tide::testing;
using Json = nlohmann::json;

namespace {

// A loopback webhook receiver: remembers every body posted, each with the FakeClock's time
// when it arrived, and answers with `status(n)` for the n-th request (from 1).
class Receiver {
 public:
  Receiver(const FakeClock& clock, std::function<int(int)> status) : clock_(clock), status_(std::move(status)) {
    server_.Post(".*", [this](const httplib::Request& req, httplib::Response& res) {
      int n = 0;
      {
        std::lock_guard<std::mutex> lock(mu_);
        bodies_.push_back(Json::parse(req.body));
        times_.push_back(clock_.now());
        path_ = req.path;
        n = static_cast<int>(bodies_.size());
      }
      res.status = status_(n);
      res.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    REQUIRE(port_ > 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    REQUIRE(eventually([this] { return server_.is_running(); }));
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hooks/tide"; }
  std::vector<Json> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  std::vector<TimePoint> times() {
    std::lock_guard<std::mutex> lock(mu_);
    return times_;
  }
  size_t count() { return bodies().size(); }
  std::string path() {
    std::lock_guard<std::mutex> lock(mu_);
    return path_;
  }

 private:
  const FakeClock& clock_;
  std::function<int(int)> status_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Json> bodies_;
  std::vector<TimePoint> times_;
  std::string path_;
};

struct NotifierFixture {
  FakeClock clock{*parseTimestamp("2026-12-07T10:00:00Z")};
  TempDir dir;
  std::unique_ptr<ledger::Ledger> ledger = open(clock);

  static std::unique_ptr<ledger::Ledger> open(const Clock& clock) {
    auto opened = ledger::Ledger::open("sqlite://:memory:", clock);
    REQUIRE(opened.isOk());
    return std::move(*opened);
  }

  model::Webhook webhook(const std::string& url) const {
    model::Webhook w;
    w.name = "chat";
    w.url = url;
    return w;
  }
  void event(const std::string& kind, const std::string& subject, Json data = Json::object()) {
    REQUIRE(ledger->audit().appendEvent(kind, subject, data, "alice").isOk());
  }
  std::string cursorDir() const { return dir.file("notifications"); }
  // Moves the clock in steps until `done`, so backoff waits end without real sleeps.
  bool advanceUntil(const std::function<bool()>& done) {
    return eventually([&] {
      if (done()) return true;
      clock.advance(std::chrono::milliseconds(100));
      return false;
    });
  }
};

std::vector<std::string> kinds(const std::vector<Json>& bodies) {
  std::vector<std::string> out;
  for (const Json& b : bodies) out.push_back(b["kind"].get<std::string>() + " " + b["subject"].get<std::string>());
  return out;
}

}  // namespace

TEST_CASE("notifier: posts the events its patterns match, in order, to the URL's path, and no other") {
  NotifierFixture f;
  Receiver receiver(f.clock, [](int) { return 200; });
  model::Webhook w = f.webhook(receiver.url());
  w.events = {"deployment.*", "operation.state:PENDING_APPROVAL", "operation.approval"};
  Notifier notifier(*f.ledger, f.clock, {w}, f.cursorDir());
  notifier.start();

  f.event("deployment.state", "deployment/web/2", {{"from", "PENDING"}, {"to", "IN_PROGRESS"}});
  f.event("node.created", "node/n1");
  f.event("operation.state", "operation/7", {{"from", "PENDING"}, {"to", "APPROVED"}});
  f.event("operation.state", "operation/8", {{"from", "PENDING"}, {"to", "PENDING_APPROVAL"}});
  f.event("operation.approval", "operation/8", {{"actor", "bob"}});
  f.event("deployment.control", "deployment/web/2", {{"control", "pause"}, {"reason", "looking"}});
  REQUIRE(eventually([&] { return receiver.count() == 4; }));
  notifier.stop();

  const std::vector<Json> bodies = receiver.bodies();
  CHECK(kinds(bodies) == std::vector<std::string>{"deployment.state deployment/web/2", "operation.state operation/8",
                                                  "operation.approval operation/8",
                                                  "deployment.control deployment/web/2"});
  CHECK(receiver.path() == "/hooks/tide");
  CHECK(bodies[0]["webhook"] == "chat");
  CHECK(bodies[0]["actor"] == "alice");
  CHECK(bodies[0]["data"]["to"] == "IN_PROGRESS");
  CHECK(bodies[0]["seq"].get<int64_t>() < bodies[1]["seq"].get<int64_t>());
  CHECK(bodies[0]["text"] == "tide: deployment.state deployment/web/2: PENDING → IN_PROGRESS (by alice)");
  CHECK(bodies[3]["text"] == "tide: deployment.control deployment/web/2: control pause, reason looking (by alice)");
}

TEST_CASE("notifier: a failing receiver is tried again after a backoff that doubles, on the host's clock") {
  NotifierFixture f;
  Receiver receiver(f.clock, [](int n) { return n <= 2 ? 503 : 200; });
  model::Webhook w = f.webhook(receiver.url());
  w.backoff_initial_ms = 1000;
  Notifier notifier(*f.ledger, f.clock, {w}, f.cursorDir());
  notifier.start();
  f.event("deployment.state", "deployment/web/1", {{"from", "PENDING"}, {"to", "IN_PROGRESS"}});
  f.event("deployment.state", "deployment/web/1", {{"from", "IN_PROGRESS"}, {"to", "COMPLETED"}});

  REQUIRE(f.advanceUntil([&] { return receiver.count() == 4; }));
  notifier.stop();
  const std::vector<TimePoint> at = receiver.times();
  // Three tries of the first event (503, 503, 200), then the second at once.
  CHECK(at[1] - at[0] >= std::chrono::milliseconds(1000));
  CHECK(at[2] - at[1] >= std::chrono::milliseconds(2000));
  const std::vector<Json> bodies = receiver.bodies();
  CHECK(bodies[0]["seq"] == bodies[2]["seq"]);
  CHECK(bodies[3]["data"]["to"] == "COMPLETED");
  auto failed = f.ledger->audit().listEvents({100, 0, {{"kind", "notification.failed"}}});
  REQUIRE(failed.isOk());
  CHECK(failed->items.empty());
}

TEST_CASE("notifier: an event is given up after max_attempts, or at once on a 4xx, with a notification.failed event") {
  NotifierFixture f;
  // The first event's three tries answer 500; the second event's one try answers 400.
  Receiver receiver(f.clock, [](int n) { return n <= 3 ? 500 : (n == 4 ? 400 : 200); });
  model::Webhook w = f.webhook(receiver.url());
  w.max_attempts = 3;
  w.backoff_initial_ms = 10;
  Notifier notifier(*f.ledger, f.clock, {w}, f.cursorDir());
  notifier.start();
  f.event("deployment.state", "deployment/web/1", {{"to", "FAILED"}});
  f.event("deployment.state", "deployment/web/2", {{"to", "IN_PROGRESS"}});
  f.event("deployment.state", "deployment/web/3", {{"to", "IN_PROGRESS"}});

  REQUIRE(f.advanceUntil([&] { return receiver.count() == 5; }));
  notifier.stop();
  CHECK(kinds(receiver.bodies()).back() == "deployment.state deployment/web/3");
  auto failed = f.ledger->audit().listEvents({100, 0, {{"kind", "notification.failed"}}});
  REQUIRE(failed.isOk());
  REQUIRE(failed->items.size() == 2);
  CHECK(failed->items[0].subject == "notification/chat");
  CHECK(failed->items[0].data["attempts"] == 3);
  CHECK(failed->items[0].data["subject"] == "deployment/web/1");
  CHECK(failed->items[0].data["error"].get<std::string>().find("answered 500") == 0);
  CHECK(failed->items[1].data["attempts"] == 1);
  CHECK(failed->items[1].data["subject"] == "deployment/web/2");
  CHECK(failed->items[1].data["error"].get<std::string>().find("answered 400") == 0);
}

TEST_CASE("notifier: a restart goes on from the cursor, posting what happened meanwhile and nothing twice") {
  NotifierFixture f;
  Receiver receiver(f.clock, [](int) { return 200; });
  const model::Webhook w = f.webhook(receiver.url());
  f.event("deployment.state", "deployment/web/0", {{"to", "COMPLETED"}});  // before the webhook existed: not posted
  {
    Notifier notifier(*f.ledger, f.clock, {w}, f.cursorDir());
    notifier.start();
    f.event("deployment.state", "deployment/web/1", {{"to", "IN_PROGRESS"}});
    REQUIRE(eventually([&] { return receiver.count() == 1; }));
  }
  f.event("deployment.state", "deployment/web/1", {{"to", "COMPLETED"}});  // while the host is down
  f.event("node.created", "node/n2");
  {
    Notifier notifier(*f.ledger, f.clock, {w}, f.cursorDir());
    notifier.start();
    f.event("deployment.state", "deployment/web/2", {{"to", "IN_PROGRESS"}});
    REQUIRE(eventually([&] { return receiver.count() == 3; }));
  }
  std::vector<Json> bodies = receiver.bodies();
  REQUIRE(bodies.size() == 3);
  CHECK(bodies[0]["subject"] == "deployment/web/1");
  CHECK(bodies[1]["data"]["to"] == "COMPLETED");
  CHECK(bodies[2]["subject"] == "deployment/web/2");
}

TEST_CASE("notifier: patterns match a kind, a prefix, or a state event by the state it moved to") {
  model::Event e;
  e.kind = "operation.state";
  e.data = Json{{"from", "PENDING"}, {"to", "PENDING_APPROVAL"}};
  CHECK(Notifier::matches("operation.state", e));
  CHECK(Notifier::matches("operation.*", e));
  CHECK(Notifier::matches("operation.state:PENDING_APPROVAL", e));
  CHECK_FALSE(Notifier::matches("operation.state:REJECTED", e));
  CHECK_FALSE(Notifier::matches("deployment.*", e));
  CHECK_FALSE(Notifier::matches("operation", e));
  e.kind = "operations.state";
  CHECK_FALSE(Notifier::matches("operation.*", e));
  CHECK(model::Webhook{}.events == model::Webhook::defaultEvents());
}
