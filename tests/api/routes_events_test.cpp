// The event log over HTTP: pages, long polls and the server-sent-events stream.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/api/api_test_support.h"
#include "tests/support/eventually.h"

using namespace tide;
using namespace tide::testing;

TEST_CASE("api: events page with after, limit, kind and subject") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);

  Json all = h.get("/v1/events?limit=1000").json();
  REQUIRE(all["items"].size() == static_cast<size_t>(h.lastEventSeq()));
  Json first = all["items"][0];
  CHECK(first["seq"] == 1);
  CHECK(first.contains("hash"));

  Json page = h.get("/v1/events?after=2&limit=2").json();
  REQUIRE(page["items"].size() == 2);
  CHECK(page["items"][0]["seq"] == 3);
  CHECK(page["next_after"] == 4);

  Json nodes = h.get("/v1/events?kind=node.*").json();
  REQUIRE(nodes["items"].size() == 2);
  CHECK(nodes["items"][0]["kind"] == "node.created");
  Json one = h.get("/v1/events?subject=node/kind-worker2").json();
  REQUIRE(one["items"].size() == 1);

  CHECK(h.get("/v1/events?wait=61").status == 400);
  CHECK(h.get("/v1/events?wait=soon").detailNames("wait"));
  CHECK(h.get("/v1/events?after=x").detailNames("after"));
  CHECK(h.get("/v1/events?level=debug").status == 400);
}

namespace {

// The events a GET /v1/events with `query` returns, every page of `limit` followed; each page
// must hold `limit` events but the last.
std::vector<Json> eventPages(const ApiHarness& h, const std::string& query, int64_t limit) {
  std::vector<Json> events;
  int64_t after = 0;
  while (true) {
    Reply reply = h.get("/v1/events?" + query + "&limit=" + std::to_string(limit) + "&after=" + std::to_string(after),
                        kViewerToken);
    REQUIRE_MESSAGE(reply.status == 200, reply.body);
    Json page = reply.json();
    for (const Json& event : page["items"]) events.push_back(event);
    if (!page.contains("next_after")) return events;
    CHECK(page["items"].size() == static_cast<size_t>(limit));
    after = page["next_after"];
  }
}

std::vector<Json> eventsOf(const ApiHarness& h, const std::string& query) {
  Reply reply = h.get("/v1/events?limit=1000&" + query, kViewerToken);
  REQUIRE_MESSAGE(reply.status == 200, reply.body);
  const Json list = reply.json();
  return list["items"].get<std::vector<Json>>();
}

// A history over two hours of the harness's clock, from 12:00:00.000 on the dot:
// 12:00 the inventory (by root); 12:30 the MRDS plan, its deployment (by otto) and another
// plan (by root); 13:00 a meta instance and its CREATE (by the controller), moved to
// PENDING_APPROVAL (by approval); 14:00 the CREATE REJECTED (by alice, which leaves its
// instance STOPPED) and an event of the other plan. Returns the CREATE's id.
int64_t recordHistory(ApiHarness& h) {
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  h.clock.advance(std::chrono::minutes(30));
  REQUIRE(h.post("/v1/plans", kMrdsPlan, "application/yaml", kOperatorToken).status == 201);
  REQUIRE(h.post(kMrdsDeployments, kMrdsDeployment, "application/yaml", kOperatorToken).status == 201);
  REQUIRE(h.post("/v1/plans", mrdsPlanNamed("other-plan"), "application/yaml").status == 201);
  h.clock.advance(std::chrono::minutes(30));
  auto meta = h.ledger->instances().createMetaInstance(kMrdsPlanName, "deployment-1", "controller");
  REQUIRE(meta.isOk());
  model::Operation create;
  create.meta_instance = meta->name;
  create.type = model::OperationType::kCreate;
  create.intent = "deployment-1";
  create.requested_by = kOperatorName;
  auto op = h.ledger->operations().createOperation(create, "controller");
  REQUIRE(op.isOk());
  REQUIRE(h.ledger->operations().setOperationState(op->meta.id, model::OperationState::kPendingApproval, std::nullopt, "approval")
              .isOk());
  h.clock.advance(std::chrono::hours(1));
  REQUIRE(
      h.ledger->operations().setOperationState(op->meta.id, model::OperationState::kRejected, std::nullopt, kApproverName).isOk());
  REQUIRE(h.ledger->audit().appendEvent("traffic.applied", "plan/other-plan", Json::object(), "traffic").isOk());
  return op->meta.id;
}

}  // namespace

TEST_CASE("api: events filter by actor, plan, state and time, alone and combined") {
  ApiHarness h;
  const int64_t create = recordHistory(h);
  const std::string operation = "operation/" + std::to_string(create);

  const std::vector<Json> by_otto = eventsOf(h, "actor=" + kOperatorName);
  REQUIRE(by_otto.size() == 2);
  CHECK(by_otto[0]["kind"] == "plan.created");
  CHECK(by_otto[1]["kind"] == "deployment.created");

  // The plan's own events and those of its deployment, instance and operation; not the other
  // plan's, nor the inventory's.
  std::set<std::string> subjects;
  for (const Json& event : eventsOf(h, "plan=" + kMrdsPlanName)) subjects.insert(event["subject"]);
  CHECK(subjects.count("plan/" + kMrdsPlanName) == 1);
  CHECK(subjects.count("deployment/" + kMrdsPlanName + "/deployment-1") == 1);
  CHECK(subjects.count(operation) == 1);
  CHECK(std::count_if(subjects.begin(), subjects.end(),
                      [](const std::string& s) { return s.starts_with("instance/"); }) == 1);
  CHECK(subjects.size() == 4);
  const std::vector<Json> other = eventsOf(h, "plan=other-plan");
  REQUIRE(other.size() == 2);
  CHECK(other[1]["kind"] == "traffic.applied");
  CHECK(eventsOf(h, "plan=no-such-plan").empty());

  // State changes into a state, of any record kind.
  const std::vector<Json> rejected = eventsOf(h, "state=REJECTED");
  REQUIRE(rejected.size() == 1);
  CHECK(rejected[0]["kind"] == "operation.state");
  CHECK(rejected[0]["data"]["to"] == "REJECTED");
  CHECK(eventsOf(h, "state=PENDING_APPROVAL,REJECTED").size() == 2);
  CHECK(eventsOf(h, "state=RUNNING").empty());

  // The window: since is inclusive (the inventory's events are at 12:00:00.000 on the dot),
  // until exclusive; a span counts back from the host's clock, now 14:00.
  const size_t all = eventsOf(h, "").size();
  const std::vector<Json> from_noon = eventsOf(h, "since=2026-11-21T12:00:00Z");
  CHECK(from_noon.size() == all);
  const std::vector<Json> morning = eventsOf(h, "until=2026-11-21T12:30:00Z");
  REQUIRE_FALSE(morning.empty());
  for (const Json& event : morning) CHECK(event["at"] == "2026-11-21T12:00:00.000Z");
  const std::vector<Json> last_hour = eventsOf(h, "since=59m");  // the rejection (its instance STOPPED too), the route
  REQUIRE(last_hour.size() == 3);
  CHECK(last_hour[0]["subject"] == operation);
  for (const Json& event : last_hour) CHECK(event["at"] == "2026-11-21T14:00:00.000Z");
  CHECK(eventsOf(h, "since=1h&until=2026-11-21T14:00:00.000Z").size() == 3);  // 13:00's three
  CHECK(eventsOf(h, "since=2026-11-21T14:00:00.001Z").empty());

  // Combined: every filter must hold.
  const std::vector<Json> combined =
      eventsOf(h, "plan=" + kMrdsPlanName + "&state=PENDING_APPROVAL,REJECTED&actor=" + kApproverName + "&since=2h");
  REQUIRE(combined.size() == 1);
  CHECK(combined[0]["data"]["to"] == "REJECTED");
  CHECK(eventsOf(h, "plan=" + kMrdsPlanName + "&kind=operation.*&until=13h").empty());  // before 01:00
  CHECK(eventsOf(h, "plan=" + kMrdsPlanName + "&kind=operation.*&since=59m").size() == 1);
  CHECK(eventsOf(h, "subject=" + operation + "&actor=approval").size() == 1);

  // A runtime instance's events belong to its plan too.
  const std::string seen = std::to_string(h.lastEventSeq());
  auto meta = h.ledger->instances().createMetaInstance(kMrdsPlanName, "deployment-1", "controller");
  REQUIRE(meta.isOk());
  auto runtime = h.ledger->instances().createRuntimeInstance(runtimeOn(meta->name, "kind-worker"), "approval");
  REQUIRE(runtime.isOk());
  const std::vector<Json> placed = eventsOf(h, "plan=" + kMrdsPlanName + "&after=" + seen);
  REQUIRE(placed.size() == 2);
  CHECK(placed[0]["subject"] == "instance/" + meta->name);
  CHECK(placed[1]["subject"] == "runtime/" + std::to_string(runtime->meta.id));
  CHECK(eventsOf(h, "plan=other-plan&after=" + seen).empty());
}

TEST_CASE("api: filtered events page in the query: every page full, none repeated, and the same events") {
  ApiHarness h;
  recordHistory(h);
  for (const std::string& query :
       std::vector<std::string>{"plan=" + kMrdsPlanName, "since=2026-11-21T12:30:00Z&until=1h",
                                "actor=root&kind=node.*", "state=PENDING_APPROVAL,REJECTED"}) {
    const auto& asked = query;  // clang captures no structured binding
    CAPTURE(asked);
    const std::vector<Json> whole = eventsOf(h, query);
    REQUIRE(whole.size() >= 2);
    CHECK(eventPages(h, query, 1) == whole);
  }
  // A page of a filter that matches sparsely still holds `limit` events when they exist.
  Reply first = h.get("/v1/events?plan=other-plan&limit=1", kViewerToken);
  REQUIRE(first.status == 200);
  REQUIRE(first.json()["items"].size() == 1);
  CHECK(first.json()["items"][0]["kind"] == "plan.created");
  Reply second = h.get("/v1/events?plan=other-plan&limit=1&after=" + first.json()["next_after"].dump(), kViewerToken);
  REQUIRE(second.json()["items"].size() == 1);
  CHECK(second.json()["items"][0]["kind"] == "traffic.applied");
  CHECK_FALSE(second.json().contains("next_after"));
}

TEST_CASE("api: bad event filters are 400 naming the parameter, on the list and the stream") {
  ApiHarness h;
  recordHistory(h);
  checkRefusedNaming(h, "/v1/events",
                     {{"since=yesterday", "since"},
                      {"until=2026-11-21T12:00:00+01:00", "until"},
                      {"since=0h", "since"},
                      {"since=-2h", "since"},
                      {"since=2h&until=3h", "until"},
                      {"since=2026-11-21T13:00:00Z&until=2026-11-21T13:00:00.000Z", "until"},
                      {"state=BOGUS", "state"},
                      {"state=FAILED,", "state"},
                      {"limit=0", "limit"},
                      {"limit=1001", "limit"},
                      {"actors=root", "actors"}},
                     kViewerToken);

  CHECK(h.get("/v1/events/stream?since=soon", kViewerToken).detailNames("since"));
  CHECK(h.get("/v1/events/stream?state=NOPE", kViewerToken).detailNames("state"));
}

TEST_CASE("api: an events long poll with a plan filter waits past another plan's event") {
  ApiHarness h;
  recordHistory(h);
  const int64_t last = h.lastEventSeq();
  auto poll = std::async(std::launch::async, [&] {
    return h.get("/v1/events?wait=30&plan=" + kMrdsPlanName + "&since=1m&after=" + std::to_string(last), kViewerToken);
  });
  REQUIRE(eventually([&] { return h.server->waitingRequests() == 1; }));
  REQUIRE(h.ledger->audit().appendEvent("traffic.applied", "plan/other-plan", Json::object(), "traffic").isOk());
  REQUIRE(h.ledger->audit().appendEvent("traffic.applied", "plan/" + kMrdsPlanName, Json::object(), "traffic").isOk());
  Reply reply = poll.get();
  REQUIRE(reply.status == 200);
  REQUIRE(reply.json()["items"].size() == 1);
  CHECK(reply.json()["items"][0]["seq"] == last + 2);
}

TEST_CASE("api: an events long poll whose until has passed answers at once, empty") {
  ApiHarness h;
  recordHistory(h);
  const auto asked = std::chrono::steady_clock::now();
  Reply reply =
      h.get("/v1/events?wait=60&until=2026-11-21T13:00:00Z&after=" + std::to_string(h.lastEventSeq()), kViewerToken);
  REQUIRE(reply.status == 200);
  CHECK(reply.json()["items"].empty());
  // Waiting would have taken the whole minute.
  CHECK(std::chrono::steady_clock::now() - asked < std::chrono::seconds(30));
}

TEST_CASE("api: an events long poll returns when an event arrives from another thread") {
  ApiHarness h;
  int64_t last = h.lastEventSeq();
  auto poll = std::async(std::launch::async,
                         [&] { return h.get("/v1/events?wait=30&after=" + std::to_string(last), kViewerToken); });
  // Append once the poll waits (the outcome would be the same if it did not yet).
  REQUIRE(eventually([&] { return h.server->waitingRequests() == 1; }));
  REQUIRE(h.ledger->audit().appendEvent("test.ping", "test/1", Json{{"n", 1}}, "tester").isOk());

  Reply reply = poll.get();
  REQUIRE(reply.status == 200);
  Json items = reply.json()["items"];
  REQUIRE(items.size() == 1);
  CHECK(items[0]["kind"] == "test.ping");
  CHECK(items[0]["seq"] == last + 1);
  CHECK(items[0]["data"] == Json{{"n", 1}});
}

TEST_CASE("api: a filtered long poll keeps waiting past events that do not match") {
  ApiHarness h;
  int64_t last = h.lastEventSeq();
  auto poll = std::async(std::launch::async,
                         [&] { return h.get("/v1/events?wait=30&kind=test.wanted&after=" + std::to_string(last)); });
  REQUIRE(eventually([&] { return h.server->waitingRequests() == 1; }));
  REQUIRE(h.ledger->audit().appendEvent("test.other", "test/1", Json::object(), "tester").isOk());
  REQUIRE(h.ledger->audit().appendEvent("test.wanted", "test/2", Json::object(), "tester").isOk());
  Reply reply = poll.get();
  REQUIRE(reply.status == 200);
  REQUIRE(reply.json()["items"].size() == 1);
  CHECK(reply.json()["items"][0]["kind"] == "test.wanted");
}

TEST_CASE("api: the event stream delivers events as server-sent events") {
  ApiHarness h;
  REQUIRE(h.ledger->audit().appendEvent("test.before", "test/0", Json::object(), "tester").isOk());
  int64_t last = h.lastEventSeq();

  auto stream = std::async(std::launch::async, [&] {
    httplib::Client c = h.client(kViewerToken);
    c.set_read_timeout(20, 0);
    std::string received;
    std::string content_type;
    auto result = c.Get(("/v1/events/stream?after=" + std::to_string(last)).c_str(),
                        [&](const httplib::Response& response) {
                          content_type = response.get_header_value("Content-Type");
                          return response.status == 200;
                        },
                        [&](const char* data, size_t size) {
                          received.append(data, size);
                          return received.find("\n\n") == std::string::npos;  // stop after the first event
                        });
    return std::make_pair(content_type, received);
  });
  REQUIRE(eventually([&] { return h.server->waitingRequests() == 1; }));
  REQUIRE(h.ledger->audit().appendEvent("test.streamed", "test/1", Json{{"hello", "world"}}, "tester").isOk());

  auto [content_type, received] = stream.get();
  CHECK(content_type == "text/event-stream");
  CHECK(received.find("id: " + std::to_string(last + 1) + "\n") == 0);
  CHECK(received.find("event: test.streamed\n") != std::string::npos);
  size_t data = received.find("data: ");
  REQUIRE(data != std::string::npos);
  Json event = Json::parse(received.substr(data + 6, received.find('\n', data) - data - 6));
  CHECK(event["data"] == Json{{"hello", "world"}});
  CHECK(event["actor"] == "tester");
}

TEST_CASE("api: stopping the server ends an open event stream") {
  ApiHarness h;
  auto stream = std::async(std::launch::async, [&] {
    httplib::Client c = h.client(kViewerToken);
    c.set_read_timeout(20, 0);
    return c.Get("/v1/events/stream", [](const char*, size_t) { return true; });
  });
  REQUIRE(eventually([&] { return h.server->waitingRequests() == 1; }));
  h.server->stop();
  stream.get();  // returns (instead of hanging until the read timeout)
  CHECK(h.server->port() == 0);
}

TEST_CASE("api: audit verify proves the chain after a prune, to a viewer") {
  ApiHarness h;
  REQUIRE(h.post("/v1/manifests", kInventoryManifest, "application/yaml").status == 201);
  for (int i = 0; i < 20; ++i) REQUIRE(h.ledger->audit().appendEvent("test.ping", "test/1", Json{{"n", i}}, "tester").isOk());
  model::RetentionPolicy policy;
  policy.events_max_count = 10;
  auto pruned = h.ledger->audit().prune(policy, "retention");
  REQUIRE_MESSAGE(pruned.isOk(), pruned.status().toString());

  Reply reply = h.get("/v1/audit/verify", kViewerToken);
  REQUIRE(reply.status == 200);
  Json report = reply.json();
  CHECK(report["ok"] == true);
  CHECK(report["events"] == 10);
  CHECK(report["last_seq"] == h.lastEventSeq());
  CHECK(report["first_seq"] == h.lastEventSeq() - 9);
  CHECK(report["checkpoint"]["through_seq"] == pruned->checkpoint->through_seq);
  CHECK(report["checkpoint"]["actor"] == "retention");
  CHECK(report["head_hash"].get<std::string>().size() == 64);
  CHECK_FALSE(report.contains("broken"));
  CHECK(h.get("/v1/audit/verify", "").status == 401);
}
