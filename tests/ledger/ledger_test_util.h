#pragma once
// Shared fixtures for ledger tests: an in-memory ledger with a fake clock and a small
// inventory (capabilities, a cluster, nodes, a plan, a deployment).

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "tests/support/vocabulary.h"

namespace tide::testing {

struct LedgerFixture {
  FakeClock clock{*parseTimestamp("2026-01-01T00:00:00Z")};
  std::unique_ptr<ledger::Ledger> ledger;

  explicit LedgerFixture(const std::string& url = "sqlite://:memory:") {
    auto opened = ledger::Ledger::open(url, clock);
    REQUIRE_MESSAGE(opened.isOk(), opened.status().toString());
    ledger = std::move(opened).value();
  }

  int64_t eventCount() {
    ledger::ListOptions all;
    all.limit = ledger::kMaxPageSize;
    auto page = ledger->audit().listEvents(all);
    REQUIRE(page.isOk());
    return static_cast<int64_t>(page->items.size());
  }

  void addInventory() {
    REQUIRE(ledger->inventory().createCapability({{}, "nvidia-v100", "GPU", 80}, "test").isOk());
    REQUIRE(ledger->inventory().createCapability({{}, "nvidia-p100", "GPU", 70}, "test").isOk());
    REQUIRE(ledger->inventory().createCapability({{}, "intel-xeon", "CPU", 10}, "test").isOk());
    model::Cluster cluster;
    cluster.name = "local";
    REQUIRE(ledger->inventory().createCluster(cluster, "test").isOk());
    for (const char* name : {"node-a", "node-b"}) {
      REQUIRE(ledger->inventory().createNode(node(name), "test").isOk());
    }
  }

  static model::Node node(const std::string& name, const std::string& cluster = "local") {
    model::Node n;
    n.name = name;
    n.cluster = cluster;
    n.update_domain = "ud-1";
    n.total = {64, 512};
    n.system_reserved = {4, 32};
    n.capabilities = {"nvidia-v100", "intel-xeon"};
    n.local_volumes = {{"/mnt/u001", "SSD", 1024}};
    return n;
  }

  static model::Plan plan(const std::string& name = "web") {
    model::Plan p;
    p.name = name;
    p.ns = "web-ns";
    p.service_name = "web-svc";
    p.matching_capabilities = {{"GPU", "GTE", {"nvidia-p100"}}};
    model::Application app;
    app.payload_name = "web-payload";
    app.resources = {4, 64};
    app.ports = {{"TCP", 80}};
    p.applications = {app};
    return p;
  }

  static model::Deployment deployment(const std::string& id, int64_t count, const std::string& plan = "web") {
    model::Deployment d;
    d.plan = plan;
    d.deployment_id = id;
    d.instance_count = count;
    d.payload_coordinates = {{"web-payload", {{"image", "nginx:latest"}}}};
    return d;
  }

  // An operation of `type` on meta instance `meta` for deployment "d1", requested by `actor`.
  model::Operation addOperation(const std::string& meta, const std::string& type = "CREATE",
                                const std::string& actor = "controller") {
    model::Operation op;
    op.meta_instance = meta;
    op.type = testing::parsed<model::OperationType>(type);
    op.intent = "d1";
    auto created = ledger->operations().createOperation(op, actor);
    REQUIRE_MESSAGE(created.isOk(), created.status().toString());
    return *created;
  }

  // Inventory + plan "web" + deployment "d1" + one meta instance; returns its name.
  std::string addInstance() {
    addInventory();
    REQUIRE(ledger->plans().createPlan(plan(), "test").isOk());
    REQUIRE(ledger->plans().addDeployment(deployment("d1", 1), "test").isOk());
    auto meta = ledger->instances().createMetaInstance("web", "d1", "test");
    REQUIRE(meta.isOk());
    return meta->name;
  }
};

// Appends `n` test.happened events on subject test/<tag>, each with its index.
inline void appendEvents(ledger::Ledger& ledger, int n, const std::string& tag = "e") {
  for (int i = 0; i < n; ++i) {
    REQUIRE(ledger.audit().appendEvent("test.happened", "test/" + tag, nlohmann::json{{"i", i}}, "test").isOk());
  }
}

}  // namespace tide::testing
