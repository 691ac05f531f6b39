#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "host/sched/scheduler.h"
#include "tests/sched/sched_test_support.h"
#include "tests/support/vocabulary.h"

using namespace tide;
using sched::ClusterSnapshot;
using sched::InstanceFact;
using sched::Placement;
using sched::PlacementOptions;
using sched::Scheduler;
using tide::testing::makeNode;
using tide::testing::numbered;

namespace {

model::Node withCapabilities(model::Node n, std::vector<std::string> capabilities) {
  n.capabilities = std::move(capabilities);
  return n;
}

model::Node withVolumes(model::Node n, std::vector<model::LocalVolume> volumes) {
  n.local_volumes = std::move(volumes);
  return n;
}

model::Plan makePlan(double cores = 1, double memory = 1) {
  model::Plan p;
  p.name = "web";
  p.service_name = "web";
  model::Application app;
  app.payload_name = "app";
  app.resources = {cores, memory};
  p.applications.push_back(app);
  return p;
}

model::Plan withMatch(model::Plan p, const std::string& type, const std::string& comparator,
                      std::vector<std::string> names) {
  p.matching_capabilities.push_back({type, comparator, std::move(names)});
  return p;
}

std::vector<model::Capability> capabilities() {
  return {
      {{}, "nvidia-a100", "GPU", 90}, {{}, "nvidia-v100", "GPU", 80}, {{}, "nvidia-p100", "GPU", 70},
      {{}, "radeon-70", "GPU", 70},   {{}, "nvidia-t4", "GPU", 50},   {{}, "intel-xeon", "CPU", 10},
  };
}

std::vector<model::Cluster> clusters() {
  model::Cluster active;
  active.name = "main";
  model::Cluster inactive;
  inactive.name = "old";
  inactive.state = model::ClusterState::kInactive;
  return {active, inactive};
}

InstanceFact live(const std::string& meta_instance, const std::string& plan, const std::string& node,
                  const std::string& update_domain = "", std::vector<sched::VolumeUse> volumes = {}) {
  InstanceFact fact;
  fact.meta_instance = meta_instance;
  fact.plan = plan;
  fact.node = node;
  fact.update_domain = update_domain;
  fact.volumes = std::move(volumes);
  return fact;
}

ClusterSnapshot snapshotOf(std::vector<model::Node> nodes, std::vector<InstanceFact> facts = {}) {
  return ClusterSnapshot::build(std::move(nodes), clusters(), capabilities(), std::move(facts));
}

// Every node a plan can go on: with max_per_node 1 (and room for one instance per node),
// the largest batch that fits uses each eligible node exactly once.
std::set<std::string> eligible(const ClusterSnapshot& snapshot, const model::Plan& plan,
                               const PlacementOptions& options = {}) {
  Scheduler scheduler(snapshot);
  std::set<std::string> nodes;
  for (int count = 1; count <= static_cast<int>(snapshot.nodeCount()); ++count) {
    auto placed = scheduler.place(plan, count, options);
    if (!placed.isOk()) break;
    nodes.clear();
    for (const auto& p : *placed) nodes.insert(p.node);
  }
  return nodes;
}

std::vector<std::string> nodesOf(const std::vector<Placement>& placements) {
  std::vector<std::string> out;
  for (const auto& p : placements) out.push_back(p.node);
  return out;
}

std::string failureOf(const ClusterSnapshot& snapshot, const model::Plan& plan, int count,
                      const PlacementOptions& options = {}) {
  auto placed = Scheduler(snapshot).place(plan, count, options);
  REQUIRE_FALSE(placed.isOk());
  CHECK(placed.status().code() == Code::kUnprocessable);
  return placed.status().message();
}

}  // namespace

TEST_CASE("sched: only ALLOCATED nodes take instances") {
  std::vector<model::Node> nodes;
  for (const char* state : {"UNALLOCATED", "ALLOCATED", "CORDONED", "DRAINING", "SANITIZING", "EVICTED"}) {
    model::Node n = makeNode(std::string("n-") + state);
    n.state = testing::parsed<model::NodeState>(state);
    nodes.push_back(n);
  }
  auto snapshot = snapshotOf(nodes);
  CHECK(eligible(snapshot, makePlan()) == std::set<std::string>{"n-ALLOCATED"});
  const std::string message = failureOf(snapshot, makePlan(), 2);
  CHECK(message.find("1 is CORDONED") != std::string::npos);
  CHECK(message.find("1 is EVICTED") != std::string::npos);
}

TEST_CASE("sched: nodes of an INACTIVE or unknown cluster are rejected") {
  model::Node inactive = makeNode("in-old");
  inactive.cluster = "old";
  model::Node unknown = makeNode("in-nowhere");
  unknown.cluster = "nowhere";
  auto snapshot = snapshotOf({makeNode("in-main"), inactive, unknown});
  CHECK(eligible(snapshot, makePlan()) == std::set<std::string>{"in-main"});
  const std::string message = failureOf(snapshot, makePlan(), 2);
  CHECK(message.find("1 is in INACTIVE cluster 'old'") != std::string::npos);
  CHECK(message.find("1 is in unknown cluster 'nowhere'") != std::string::npos);
}

TEST_CASE("sched: IN and EQ admit nodes that have one of the names") {
  auto snapshot = snapshotOf({withCapabilities(makeNode("a100"), {"nvidia-a100", "intel-xeon"}),
                              withCapabilities(makeNode("v100"), {"nvidia-v100"}),
                              withCapabilities(makeNode("t4"), {"nvidia-t4"}), makeNode("bare")});
  CHECK(eligible(snapshot, withMatch(makePlan(), "GPU", "IN", {"nvidia-a100", "nvidia-v100"})) ==
        std::set<std::string>{"a100", "v100"});
  CHECK(eligible(snapshot, withMatch(makePlan(), "GPU", "EQ", {"nvidia-t4"})) == std::set<std::string>{"t4"});
  CHECK(eligible(snapshot, withMatch(makePlan(), "GPU", "IN", {"unheard-of"})).empty());
}

TEST_CASE("sched: NOT_IN admits nodes that have none of the names") {
  auto snapshot = snapshotOf({withCapabilities(makeNode("a100"), {"nvidia-a100", "intel-xeon"}),
                              withCapabilities(makeNode("t4"), {"nvidia-t4"}), makeNode("bare")});
  CHECK(eligible(snapshot, withMatch(makePlan(), "GPU", "NOT_IN", {"nvidia-t4"})) ==
        std::set<std::string>{"a100", "bare"});
  CHECK(eligible(snapshot, withMatch(makePlan(), "GPU", "NOT_IN", {"unheard-of"})).size() == 3);
  CHECK(failureOf(snapshot, withMatch(makePlan(), "GPU", "NOT_IN", {"nvidia-t4"}), 3)
            .find("1 has capability type GPU in [nvidia-t4] (NOT_IN)") != std::string::npos);
}

TEST_CASE("sched: GTE bound is the lowest score among the names, equal scores included") {
  auto snapshot = snapshotOf({withCapabilities(makeNode("a100"), {"nvidia-a100"}),
                              withCapabilities(makeNode("v100"), {"nvidia-v100"}),
                              withCapabilities(makeNode("p100"), {"nvidia-p100"}),
                              withCapabilities(makeNode("radeon"), {"radeon-70"}),  // same score as p100
                              withCapabilities(makeNode("t4"), {"nvidia-t4", "intel-xeon"}),
                              withCapabilities(makeNode("cpu"), {"intel-xeon"}),  // wrong type, score irrelevant
                              withCapabilities(makeNode("mystery"), {"not-a-capability"})});
  auto gte = withMatch(makePlan(), "GPU", "GTE", {"nvidia-v100", "nvidia-p100"});
  CHECK(eligible(snapshot, gte) == std::set<std::string>{"a100", "v100", "p100", "radeon"});
  CHECK(failureOf(snapshot, gte, 5).find("3 lack capability type GPU ≥ nvidia-p100") != std::string::npos);

  SUBCASE("unknown names set no bound") {
    CHECK(eligible(snapshot, withMatch(makePlan(), "GPU", "GTE", {"unheard-of", "nvidia-v100"})) ==
          std::set<std::string>{"a100", "v100"});
  }
  SUBCASE("a rule with no known name of its type matches no node") {
    auto hopeless = withMatch(makePlan(), "GPU", "GTE", {"unheard-of", "intel-xeon"});
    CHECK(eligible(snapshot, hopeless).empty());
    CHECK(failureOf(snapshot, hopeless, 1)
              .find("7 lack capability type GPU ≥ [unheard-of, intel-xeon] (none of "
                    "them is a known GPU capability)") != std::string::npos);
  }
}

TEST_CASE("sched: LTE bound is the highest score among the names, equal scores included") {
  auto snapshot = snapshotOf(
      {withCapabilities(makeNode("a100"), {"nvidia-a100"}), withCapabilities(makeNode("v100"), {"nvidia-v100"}),
       withCapabilities(makeNode("p100"), {"nvidia-p100"}), withCapabilities(makeNode("radeon"), {"radeon-70"}),
       withCapabilities(makeNode("t4"), {"nvidia-t4"}), withCapabilities(makeNode("cpu"), {"intel-xeon"}),
       makeNode("bare")});
  CHECK(eligible(snapshot, withMatch(makePlan(), "GPU", "LTE", {"nvidia-t4", "nvidia-p100"})) ==
        std::set<std::string>{"p100", "radeon", "t4"});
  CHECK(eligible(snapshot, withMatch(makePlan(), "GPU", "LTE", {"radeon-70"})) ==
        std::set<std::string>{"p100", "radeon", "t4"});
  CHECK(eligible(snapshot, withMatch(makePlan(), "GPU", "LTE", {"unheard-of"})).empty());
}

TEST_CASE("sched: remaining cores and memory must hold the plan's summed applications") {
  model::Node busy = makeNode("busy", "ud-1", 16, 64);
  busy.remaining = {2.5, 64};
  auto plan = makePlan(2, 8);
  model::Application sidecar;
  sidecar.payload_name = "sidecar";
  sidecar.resources = {1, 8};
  plan.applications.push_back(sidecar);  // 3 cores, 16 GiB in all
  auto snapshot =
      snapshotOf({busy, makeNode("small-memory", "ud-1", 16, 12), makeNode("exact", "ud-1", 3, 16), makeNode("roomy")});
  CHECK(eligible(snapshot, plan) == std::set<std::string>{"exact", "roomy"});
  const std::string message = failureOf(snapshot, plan, 3);
  CHECK(message.find("1 lacks 3 free cores") != std::string::npos);
  CHECK(message.find("1 lacks 16 GiB free memory") != std::string::npos);
  auto placed = Scheduler(snapshot).place(plan, 1);
  REQUIRE(placed.isOk());
  CHECK(placed->front().reservation.cores == doctest::Approx(3));
  CHECK(placed->front().reservation.memory_gib == doctest::Approx(16));
}

TEST_CASE("sched: every persistent volume needs room on a local volume of its class") {
  auto plan = makePlan();
  plan.applications[0].persistent_volumes = {{"SSD", 60, "/data"}, {"SSD", 60, "/logs"}};
  auto snapshot = snapshotOf({withVolumes(makeNode("one-ssd"), {{"/mnt/a", "SSD", 100}}),
                              withVolumes(makeNode("two-ssd"), {{"/mnt/a", "SSD", 100}, {"/mnt/b", "SSD", 100}}),
                              withVolumes(makeNode("big-ssd"), {{"/mnt/a", "SSD", 120}}),
                              withVolumes(makeNode("hdd"), {{"/mnt/a", "HDD", 4096}}),
                              withVolumes(makeNode("used-ssd"), {{"/mnt/a", "SSD", 200}}), makeNode("none")},
                             {live("db-1", "db", "used-ssd", "", {{"SSD", 100, "/mnt/a"}})});
  CHECK(eligible(snapshot, plan) == std::set<std::string>{"two-ssd", "big-ssd"});
  CHECK(snapshot.volumeFree("used-ssd", "/mnt/a") == doctest::Approx(100));
  CHECK(failureOf(snapshot, plan, 3).find("4 lack a SSD volume with 60 GiB free") != std::string::npos);

  auto placed = Scheduler(snapshot).place(plan, 2);
  REQUIRE(placed.isOk());
  for (const auto& p : *placed) {
    REQUIRE(p.volumes.size() == 2);
    CHECK(p.volumes[0].payload_name == "app");
    CHECK(p.volumes[0].mount_path == "/data");
    CHECK(p.volumes[1].mount_path == "/logs");
    if (p.node == "two-ssd") CHECK(p.volumes[0].local_volume != p.volumes[1].local_volume);
    if (p.node == "big-ssd") CHECK(p.volumes[1].local_volume == "/mnt/a");
  }
}

TEST_CASE("sched: anti-affinity keeps one instance of a plan per node unless allowed more") {
  auto snapshot = snapshotOf({makeNode("a"), makeNode("b")}, {live("web-1", "web", "a"), live("api-1", "api", "b")});
  CHECK(eligible(snapshot, makePlan()) == std::set<std::string>{"b"});
  CHECK(failureOf(snapshot, makePlan(), 2).find("2 already run 1 instance of the plan (max_per_node)") !=
        std::string::npos);
  PlacementOptions two;
  two.max_per_node = 2;
  auto placed = Scheduler(snapshot).place(makePlan(), 3, two);
  REQUIRE(placed.isOk());
  std::map<std::string, int> per_node;
  for (const auto& p : *placed) ++per_node[p.node];
  CHECK(per_node == std::map<std::string, int>{{"a", 1}, {"b", 2}});
  CHECK_FALSE(Scheduler(snapshot).place(makePlan(), 4, two).isOk());
}

TEST_CASE("sched: exclude_nodes never receive an instance") {
  auto snapshot = snapshotOf({makeNode("a"), makeNode("b"), makeNode("c")});
  PlacementOptions options;
  options.exclude_nodes = {"b", "not-a-node"};
  CHECK(eligible(snapshot, makePlan(), options) == std::set<std::string>{"a", "c"});
  CHECK(failureOf(snapshot, makePlan(), 3, options).find("1 is excluded by the request") != std::string::npos);
}

TEST_CASE("sched: instances spread across update domains before anything else") {
  // ud-1's nodes are far bigger, so least-allocated alone would put all three there.
  auto snapshot = snapshotOf({makeNode("big-1", "ud-1", 128, 512), makeNode("big-2", "ud-1", 128, 512),
                              makeNode("big-3", "ud-1", 128, 512), makeNode("small-1", "ud-2", 8, 16),
                              makeNode("small-2", "ud-2", 8, 16)});
  auto placed = Scheduler(snapshot).place(makePlan(), 3);
  REQUIRE(placed.isOk());
  std::map<std::string, int> per_domain;
  for (const auto& p : *placed) ++per_domain[p.update_domain];
  CHECK(per_domain == std::map<std::string, int>{{"ud-1", 2}, {"ud-2", 1}});

  SUBCASE("existing instances count toward their domain") {
    auto crowded = snapshotOf({makeNode("big-1", "ud-1", 128, 512), makeNode("big-2", "ud-1", 128, 512),
                               makeNode("small-1", "ud-2", 8, 16), makeNode("small-2", "ud-2", 8, 16)},
                              {live("web-1", "web", "big-1"), live("web-2", "web", "gone-node", "ud-1")});
    auto next = Scheduler(crowded).place(makePlan(), 2);
    REQUIRE(next.isOk());
    CHECK(nodesOf(*next) == std::vector<std::string>{"small-1", "small-2"});
  }
}

TEST_CASE("sched: least-allocated picks the emptiest node, bin_pack the fullest") {
  model::Node full = makeNode("full", "ud-1", 16, 64);
  full.remaining = {4, 16};
  model::Node half = makeNode("half", "ud-1", 16, 64);
  half.remaining = {8, 32};
  auto snapshot = snapshotOf({half, full, makeNode("empty", "ud-1", 16, 64)});
  Scheduler scheduler(snapshot);
  CHECK(nodesOf(*scheduler.place(makePlan(), 1)) == std::vector<std::string>{"empty"});
  PlacementOptions pack;
  pack.bin_pack = true;
  CHECK(nodesOf(*scheduler.place(makePlan(), 1, pack)) == std::vector<std::string>{"full"});
  CHECK(nodesOf(*scheduler.place(makePlan(), 3, pack)) == std::vector<std::string>{"full", "half", "empty"});

  SUBCASE("allocation is a fraction of each node's allocatable resources") {
    model::Node large = makeNode("large", "ud-1", 64, 256);  // more left in absolute terms, less as a fraction
    large.system_reserved = {0, 0};
    large.remaining = {32, 128};
    auto mixed = snapshotOf({large, makeNode("tiny", "ud-1", 4, 16)});
    CHECK(nodesOf(*Scheduler(mixed).place(makePlan(), 1)) == std::vector<std::string>{"tiny"});
  }
}

TEST_CASE("sched: equal nodes are chosen in name order") {
  auto snapshot = snapshotOf({makeNode("c"), makeNode("a"), makeNode("b")});
  CHECK(nodesOf(*Scheduler(snapshot).place(makePlan(), 3)) == std::vector<std::string>{"a", "b", "c"});
  CHECK(nodesOf(*Scheduler(snapshot).place(makePlan(), 1)) == std::vector<std::string>{"a"});
}

TEST_CASE("sched: a batch never over-commits a node and respects max_per_node") {
  auto plan = makePlan(1.5, 10);
  plan.applications[0].persistent_volumes = {{"SSD", 40, "/data"}};
  // a: cores for 2; b: memory for 3; c: SSD for 2; d: room for 4 but max_per_node 3.
  auto snapshot = snapshotOf({withVolumes(makeNode("a", "ud-1", 3, 100), {{"/v", "SSD", 1000}}),
                              withVolumes(makeNode("b", "ud-2", 100, 30), {{"/v", "SSD", 1000}}),
                              withVolumes(makeNode("c", "ud-1", 100, 100), {{"/v", "SSD", 80}, {"/w", "HDD", 999}}),
                              withVolumes(makeNode("d", "ud-2", 6, 40), {{"/v", "SSD", 160}})});
  PlacementOptions options;
  options.max_per_node = 3;
  auto placed = Scheduler(snapshot).place(plan, 10, options);
  REQUIRE(placed.isOk());
  std::map<std::string, int> per_node;
  std::map<std::string, double> volume_used;
  for (const auto& p : *placed) {
    ++per_node[p.node];
    volume_used[p.node + p.volumes.at(0).local_volume] += p.volumes[0].capacity_gib;
  }
  CHECK(per_node == std::map<std::string, int>{{"a", 2}, {"b", 3}, {"c", 2}, {"d", 3}});
  CHECK(volume_used["c/v"] == doctest::Approx(80));
  const std::string message = failureOf(snapshot, plan, 11, options);
  CHECK(message.find("10 of 11 instances") == 0);
}

TEST_CASE("sched: a batch places exactly as one-at-a-time placements with commits would") {
  auto plan = makePlan(2, 6);
  plan.applications[0].persistent_volumes = {{"SSD", 30, "/data"}};
  std::vector<model::Node> nodes;
  for (int i = 0; i < 9; ++i) {
    const double size = 4 + 2 * (i % 4);
    nodes.push_back(withVolumes(makeNode(numbered("n", i), numbered("ud-", i % 3), size, size * 4),
                                {{"/v", "SSD", 20 + 15.0 * i}}));
  }
  PlacementOptions options;
  options.max_per_node = 2;
  auto batch_snapshot = snapshotOf(nodes);
  auto batch = Scheduler(batch_snapshot).place(plan, 12, options);
  REQUIRE(batch.isOk());

  auto snapshot = snapshotOf(nodes);
  std::vector<std::string> one_by_one;
  for (int i = 0; i < 12; ++i) {
    auto placed = Scheduler(snapshot).place(plan, 1, options);
    REQUIRE(placed.isOk());
    one_by_one.push_back(placed->front().node);
    REQUIRE(snapshot.commit("web", numbered("web-", i), placed->front()).isOk());
  }
  CHECK(nodesOf(*batch) == one_by_one);
}

TEST_CASE("sched: the failure message counts rejected nodes per reason, most first") {
  auto gpu = [](const std::string& name, const std::string& capability) {
    return withCapabilities(makeNode(name, "ud-1", 16, 64), {capability});
  };
  model::Node cordoned = gpu("g-cordoned", "nvidia-a100");
  cordoned.state = model::NodeState::kCordoned;
  model::Node busy1 = gpu("g-busy-1", "nvidia-v100");
  busy1.remaining = {2, 64};
  model::Node busy2 = gpu("g-busy-2", "nvidia-v100");
  busy2.remaining = {3, 64};
  auto snapshot = snapshotOf({gpu("t4-1", "nvidia-t4"), gpu("t4-2", "nvidia-t4"), makeNode("cpu-only"), cordoned, busy1,
                              busy2, gpu("g-free", "nvidia-a100")});
  auto plan = withMatch(makePlan(4, 8), "GPU", "GTE", {"nvidia-p100"});
  CHECK(failureOf(snapshot, plan, 3) ==
        "1 of 3 instances of plan 'web' fit; of 7 nodes, 3 lack capability type GPU ≥ nvidia-p100; "
        "2 lack 4 free cores; 1 is CORDONED; 1 already runs 1 instance of the plan (max_per_node)");
  CHECK(failureOf(snapshotOf({}), plan, 1) == "0 of 1 instances of plan 'web' fit; there are no nodes");
}

TEST_CASE("sched: avoid_nodes_of prefers other nodes but does not forbid them") {
  auto snapshot = snapshotOf({makeNode("a"), makeNode("b"), makeNode("c", "ud-2")},
                             {live("web-old", "web-v1", "a"), live("web-older", "web-v1", "c")});
  PlacementOptions options;
  options.avoid_nodes_of = {"web-old"};
  CHECK(nodesOf(*Scheduler(snapshot).place(makePlan(), 1, options)) == std::vector<std::string>{"b"});
  options.max_per_node = 1;
  options.avoid_nodes_of = {"web-old", "web-older"};
  CHECK(nodesOf(*Scheduler(snapshot).place(makePlan(), 3, options)) == std::vector<std::string>{"b", "c", "a"});
}

TEST_CASE("sched: commit makes the next place() see earlier placements") {
  auto plan = makePlan(6, 8);
  plan.applications[0].persistent_volumes = {{"SSD", 50, "/data"}};
  auto snapshot = snapshotOf({withVolumes(makeNode("a", "ud-1", 10, 64), {{"/v", "SSD", 100}})});
  PlacementOptions options;
  options.max_per_node = 5;
  auto first = Scheduler(snapshot).place(plan, 1, options);
  REQUIRE(first.isOk());
  REQUIRE(snapshot.commit("web", "web-1", first->front()).isOk());
  CHECK(snapshot.findNode("a")->remaining.cores == doctest::Approx(4));
  CHECK(snapshot.volumeFree("a", "/v") == doctest::Approx(50));
  CHECK(snapshot.instancesOn("web", "a") == 1);
  CHECK(failureOf(snapshot, plan, 1, options).find("1 lacks 6 free cores") != std::string::npos);
  Placement elsewhere = first->front();
  elsewhere.node = "zz";
  CHECK(snapshot.commit("web", "web-2", elsewhere).code() == Code::kNotFound);
}

TEST_CASE("sched: bad requests are invalid arguments, zero instances is an empty answer") {
  auto snapshot = snapshotOf({makeNode("a")});
  Scheduler scheduler(snapshot);
  CHECK(scheduler.place(makePlan(), -1).status().code() == Code::kInvalidArgument);
  PlacementOptions none;
  none.max_per_node = 0;
  CHECK(scheduler.place(makePlan(), 1, none).status().code() == Code::kInvalidArgument);
  CHECK(scheduler.place(withMatch(makePlan(), "GPU", "ABOUT", {"x"}), 1).status().code() == Code::kInvalidArgument);
  auto zero = scheduler.place(makePlan(), 0);
  REQUIRE(zero.isOk());
  CHECK(zero->empty());
}

TEST_CASE("sched: scale-down removes unhealthy instances first, then from the most crowded domain") {
  auto snapshot = snapshotOf({makeNode("a1", "ud-1"), makeNode("a2", "ud-1"), makeNode("a3", "ud-1"),
                              makeNode("b1", "ud-2"), makeNode("b2", "ud-2")});
  Scheduler scheduler(snapshot);
  auto fact = [](const std::string& name, const std::string& node, bool healthy, const std::string& created) {
    InstanceFact f;
    f.meta_instance = name;
    f.plan = "web";
    f.node = node;
    f.healthy = healthy;
    f.created_at = created;
    return f;
  };
  std::vector<InstanceFact> instances = {
      fact("web-a1", "a1", true, "2026-01-01T00:00:01.000Z"), fact("web-a2", "a2", true, "2026-01-01T00:00:03.000Z"),
      fact("web-a3", "a3", true, "2026-01-01T00:00:02.000Z"), fact("web-b1", "b1", false, "2026-01-01T00:00:01.000Z"),
      fact("web-b2", "b2", true, "2026-01-01T00:00:05.000Z")};
  // web-b1 is unhealthy; then ud-1 holds 3 vs 1: its newest (a2), then a3; then 1 vs 1:
  // the newest of the two heads (b2).
  CHECK(scheduler.chooseScaleDown(instances, 4) == std::vector<std::string>{"web-b1", "web-a2", "web-a3", "web-b2"});
  CHECK(scheduler.chooseScaleDown(instances, 99).size() == 5);
  CHECK(scheduler.chooseScaleDown(instances, 0).empty());

  SUBCASE("a fact's own update domain wins over its node's") {
    instances[4].update_domain = "ud-1";  // now ud-1 holds 4
    instances[3].healthy = true;
    CHECK(scheduler.chooseScaleDown(instances, 1) == std::vector<std::string>{"web-b2"});
  }
  SUBCASE("ties break by name") {
    for (auto& f : instances) f.created_at = "2026-01-01T00:00:00.000Z";
    instances[3].healthy = true;
    CHECK(scheduler.chooseScaleDown(instances, 2) == std::vector<std::string>{"web-a1", "web-a2"});
  }
}
