// The incremental path of Scheduler::place() (host/sched/placement_index.h): after commits,
// a placement from the snapshot's index is the one a full scan of the same snapshot makes.

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <tuple>
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

// splitmix64: the same sequence on every machine and standard library.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

model::Plan makePlan(const std::string& name, double cores, double memory) {
  model::Plan p;
  p.name = name;
  p.service_name = name;
  model::Application app;
  app.payload_name = name;
  app.resources = {cores, memory};
  p.applications.push_back(app);
  return p;
}

ClusterSnapshot mixedSnapshotOf(std::vector<model::Node> nodes, std::vector<InstanceFact> facts = {}) {
  model::Cluster main;
  main.name = "main";
  model::Cluster old;
  old.name = "old";
  old.state = model::ClusterState::kInactive;
  std::vector<model::Capability> capabilities = {
      {{}, "gpu-big", "GPU", 90}, {{}, "gpu-mid", "GPU", 70}, {{}, "gpu-small", "GPU", 50}, {{}, "xeon", "CPU", 10}};
  return ClusterSnapshot::build(std::move(nodes), {main, old}, capabilities, std::move(facts));
}

// A random inventory: mostly ALLOCATED nodes of the active cluster with random room,
// capabilities and volumes, some instances already placed (old-<i> of plan "old").
ClusterSnapshot randomSnapshot(Random& random, int nodes, int domains) {
  static const char* kStates[] = {"ALLOCATED", "ALLOCATED", "ALLOCATED", "ALLOCATED", "CORDONED", "UNALLOCATED"};
  static const char* kGpus[] = {"", "gpu-big", "gpu-mid", "gpu-small"};
  std::vector<model::Node> inventory;
  std::vector<InstanceFact> facts;
  for (int i = 0; i < nodes; ++i) {
    const double cores = 8 + 8 * random.below(4);
    model::Node n = makeNode(numbered("n", i), numbered("ud-", random.below(domains)), cores, cores * 4);
    n.state = testing::parsed<model::NodeState>(kStates[random.below(6)]);
    if (random.below(10) == 0) n.cluster = "old";
    const double used = random.below(60) / 100.0;
    n.remaining = {cores * (1 - used), cores * 4 * (1 - used)};
    if (const char* gpu = kGpus[random.below(4)]; *gpu) n.capabilities.push_back(gpu);
    if (random.below(2)) n.capabilities.push_back("xeon");
    for (int v = random.below(3); v > 0; --v) {
      n.local_volumes.push_back({numbered("/ssd", v), "SSD", 20.0 + 20 * random.below(5)});
    }
    if (random.below(3) == 0) n.local_volumes.push_back({"/hdd", "HDD", 100});
    if (random.below(4) == 0) {
      InstanceFact fact;
      fact.meta_instance = numbered("old-", i);
      fact.plan = "old";
      fact.node = n.name;
      facts.push_back(fact);
    }
    inventory.push_back(std::move(n));
  }
  return mixedSnapshotOf(std::move(inventory), std::move(facts));
}

struct Job {
  model::Plan plan;
  PlacementOptions options;
};

std::vector<Job> jobs() {
  std::vector<Job> out;
  out.push_back({makePlan("web", 1, 2), {}});

  Job canary{makePlan("web", 1, 2), {}};  // the same plan, placed away from the old instances
  canary.options.avoid_nodes_of = {"old-0", "old-1", "old-2", "old-3", "old-5", "old-8", "old-13", "web-2"};
  out.push_back(canary);

  Job gpu{makePlan("gpu", 2, 4), {}};
  gpu.plan.matching_capabilities = {{"GPU", "GTE", {"gpu-mid"}}};
  gpu.plan.applications[0].persistent_volumes = {{"SSD", 20, "/models"}};
  gpu.options.max_per_node = 2;
  gpu.options.bin_pack = true;
  out.push_back(gpu);

  Job db{makePlan("db", 1, 4), {}};
  db.plan.matching_capabilities = {{"GPU", "NOT_IN", {"gpu-small"}}, {"CPU", "IN", {"xeon"}}};
  db.plan.applications[0].persistent_volumes = {{"SSD", 15, "/wal"}, {"HDD", 30, "/data"}, {"SSD", 15, "/log"}};
  db.options.max_per_node = 3;
  out.push_back(db);

  Job big{makePlan("big", 10, 40), {}};  // fits few nodes, and soon none
  big.options.bin_pack = true;
  out.push_back(big);
  return out;
}

void checkSame(const Result<std::vector<Placement>>& incremental, const Result<std::vector<Placement>>& fresh) {
  REQUIRE(incremental.isOk() == fresh.isOk());
  if (!fresh.isOk()) {
    CHECK(incremental.status().code() == fresh.status().code());
    CHECK(incremental.status().message() == fresh.status().message());
    return;
  }
  REQUIRE(incremental->size() == 1);
  REQUIRE(fresh->size() == 1);
  const Placement& a = incremental->front();
  const Placement& b = fresh->front();
  CHECK(a.node == b.node);
  CHECK(a.update_domain == b.update_domain);
  CHECK(a.reservation.cores == b.reservation.cores);
  CHECK(a.reservation.memory_gib == b.reservation.memory_gib);
  REQUIRE(a.volumes.size() == b.volumes.size());
  for (size_t i = 0; i < a.volumes.size(); ++i) {
    CHECK(a.volumes[i].payload_name == b.volumes[i].payload_name);
    CHECK(a.volumes[i].mount_path == b.volumes[i].mount_path);
    CHECK(a.volumes[i].local_volume == b.volumes[i].local_volume);
  }
}

}  // namespace

TEST_CASE("sched: place 1 + commit from the index equals a fresh full scan, over many random placements") {
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    CAPTURE(seed);
    Random random(seed);
    const int domains = 1 + random.below(8);
    ClusterSnapshot snapshot = randomSnapshot(random, 60 + random.below(80), domains);
    const std::vector<Job> all = jobs();
    int placed = 0, refused = 0;
    for (int step = 0; step < 400; ++step) {
      CAPTURE(step);
      Job job = all[random.below(static_cast<int>(all.size()))];
      if (random.below(4) == 0) {
        for (int k = random.below(4); k > 0; --k) {
          job.options.exclude_nodes.push_back(numbered("n", random.below(static_cast<int>(snapshot.nodeCount()))));
        }
      }
      auto incremental = Scheduler(snapshot).place(job.plan, 1, job.options);
      const ClusterSnapshot copy = snapshot;  // a copy has no index: its first place() scans every node
      checkSame(incremental, Scheduler(copy).place(job.plan, 1, job.options));
      if (incremental.isOk()) {
        ++placed;
        REQUIRE(snapshot.commit(job.plan.name, numbered(job.plan.name + "-", step), incremental->front()).isOk());
      } else {
        ++refused;
      }
      // Now and then an old instance moves (a relocation): nodes to avoid change under the index.
      if (random.below(10) == 0) {
        const std::string node = numbered("n", random.below(static_cast<int>(snapshot.nodeCount())));
        Placement moved{node, "", {0.5, 1}, {}};
        REQUIRE(snapshot.commit("old", numbered("old-", random.below(16)), moved).isOk());
      }
    }
    CHECK(placed > 100);
    CHECK(refused > 0);
  }
}

TEST_CASE("sched: an index answers the same before and after a query that excludes nodes") {
  std::vector<model::Node> nodes;
  for (int i = 0; i < 6; ++i) nodes.push_back(makeNode(numbered("n", i), numbered("ud-", i % 2), 8, 32));
  ClusterSnapshot snapshot = mixedSnapshotOf(nodes);
  const model::Plan plan = makePlan("web", 1, 1);
  Scheduler scheduler(snapshot);
  REQUIRE(scheduler.place(plan, 1).isOk());  // the first call only remembers the plan
  CHECK(scheduler.place(plan, 1)->front().node == "n0");
  PlacementOptions away;
  away.exclude_nodes = {"n0", "n1", "n0", "unknown"};
  CHECK(scheduler.place(plan, 1, away)->front().node == "n2");
  CHECK(scheduler.place(plan, 1)->front().node == "n0");
  away.exclude_nodes = {"n0", "n1", "n2", "n3", "n4", "n5"};
  auto none = scheduler.place(plan, 1, away);
  REQUIRE_FALSE(none.isOk());
  CHECK(none.status().message() == "0 of 1 instances of plan 'web' fit; of 6 nodes, 6 are excluded by the request");
  CHECK(scheduler.place(plan, 1)->front().node == "n0");
}

TEST_CASE("sched: with max_per_node above 1, avoid_nodes_of still prefers other nodes until they are full") {
  // a holds the old version; b and c are free. Three per node: the new version fills b and
  // c (least-allocated alternates) before it shares a with the old one.
  auto snapshot =
      mixedSnapshotOf({makeNode("a", "ud-1", 16, 64), makeNode("b", "ud-1", 16, 64), makeNode("c", "ud-1", 16, 64)}, {[] {
                   InstanceFact old;
                   old.meta_instance = "web-old";
                   old.plan = "web-v1";
                   old.node = "a";
                   return old;
                 }()});
  PlacementOptions options;
  options.max_per_node = 3;
  options.avoid_nodes_of = {"web-old"};
  std::vector<std::string> order;
  for (int i = 0; i < 9; ++i) {
    auto placed = Scheduler(snapshot).place(makePlan("web", 1, 1), 1, options);
    REQUIRE(placed.isOk());
    order.push_back(placed->front().node);
    REQUIRE(snapshot.commit("web", numbered("web-", i), placed->front()).isOk());
  }
  CHECK(order == std::vector<std::string>{"b", "c", "b", "c", "b", "c", "a", "a", "a"});
  CHECK(snapshot.instancesOn("web", "a") == 3);
  auto full = Scheduler(snapshot).place(makePlan("web", 1, 1), 1, options);
  REQUIRE_FALSE(full.isOk());
  CHECK(full.status().message().find("3 already run 3 instances of the plan (max_per_node)") != std::string::npos);
}

TEST_CASE("sched: with several instances per node, scale-down still empties the most crowded update domain first") {
  auto snapshot = mixedSnapshotOf({makeNode("a", "ud-1", 16, 64), makeNode("b", "ud-2", 16, 64)});
  std::vector<InstanceFact> instances;
  // Three on a (ud-1), two on b (ud-2).
  for (const auto& [name, node, created] :
       std::vector<std::tuple<std::string, std::string, std::string>>{{"web-1", "a", "2026-01-01T00:00:01.000Z"},
                                                                      {"web-2", "a", "2026-01-01T00:00:02.000Z"},
                                                                      {"web-3", "a", "2026-01-01T00:00:03.000Z"},
                                                                      {"web-4", "b", "2026-01-01T00:00:04.000Z"},
                                                                      {"web-5", "b", "2026-01-01T00:00:05.000Z"}}) {
    InstanceFact fact;
    fact.meta_instance = name;
    fact.plan = "web";
    fact.node = node;
    fact.created_at = created;
    instances.push_back(fact);
  }
  // ud-1 holds 3 against 2: its newest (web-3); then 2 against 2, the newer head (web-5).
  CHECK(Scheduler(snapshot).chooseScaleDown(instances, 2) == std::vector<std::string>{"web-3", "web-5"});
  CHECK(Scheduler(snapshot).chooseScaleDown(instances, 5).size() == 5);
}
