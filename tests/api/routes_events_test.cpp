// The event log over HTTP: pages, long polls and the server-sent-events stream.

#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

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

TEST_CASE("api: an events long poll returns when an event arrives from another thread") {
  ApiHarness h;
  int64_t last = h.lastEventSeq();
  auto poll = std::async(std::launch::async,
                         [&] { return h.get("/v1/events?wait=30&after=" + std::to_string(last), kViewerToken); });
  // Append once the poll waits (the outcome would be the same if it did not yet).
  REQUIRE(eventually([&] { return h.server->waitingRequests() == 1; }));
  REQUIRE(h.ledger->appendEvent("test.ping", "test/1", Json{{"n", 1}}, "tester").isOk());

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
  REQUIRE(h.ledger->appendEvent("test.other", "test/1", Json::object(), "tester").isOk());
  REQUIRE(h.ledger->appendEvent("test.wanted", "test/2", Json::object(), "tester").isOk());
  Reply reply = poll.get();
  REQUIRE(reply.status == 200);
  REQUIRE(reply.json()["items"].size() == 1);
  CHECK(reply.json()["items"][0]["kind"] == "test.wanted");
}

TEST_CASE("api: the event stream delivers events as server-sent events") {
  ApiHarness h;
  REQUIRE(h.ledger->appendEvent("test.before", "test/0", Json::object(), "tester").isOk());
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
  REQUIRE(h.ledger->appendEvent("test.streamed", "test/1", Json{{"hello", "world"}}, "tester").isOk());

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
  for (int i = 0; i < 20; ++i) REQUIRE(h.ledger->appendEvent("test.ping", "test/1", Json{{"n", i}}, "tester").isOk());
  model::RetentionPolicy policy;
  policy.events_max_count = 10;
  auto pruned = h.ledger->prune(policy, "retention");
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
