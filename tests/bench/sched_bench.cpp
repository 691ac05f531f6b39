// Scheduler benchmark: 5,000 nodes in 20 update domains with a mix of capabilities and
// volumes. Places instances of three plans one at a time (as the engine does: place one,
// reserve it, commit it; `rounds` times over a fresh snapshot) and then one batch of
// 10,000, checks the result, and prints one JSON line of figures on stdout (docs/performance.md);
// the details go to stderr. Rates are per second of CPU time, the steadier
// figure on a shared machine; *_wall_per_s are per second of wall-clock time. Exits 1 when
// the check fails.
//
//   build-release/sched_bench [nodes] [batch] [rounds]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/sched/scheduler.h"

using namespace tide;

namespace {

// splitmix64: the same inventory on every machine and standard library.
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

constexpr int kDomains = 20;

std::string numbered(const char* prefix, int i, int width) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%s%0*d", prefix, width, i);
  return buffer;
}

std::vector<model::Capability> capabilities() {
  return {{{}, "nvidia-a100", "GPU", 90}, {{}, "nvidia-v100", "GPU", 80}, {{}, "nvidia-p100", "GPU", 70},
          {{}, "nvidia-t4", "GPU", 50},   {{}, "intel-xeon", "CPU", 10},  {{}, "amd-epyc", "CPU", 10}};
}

std::vector<model::Cluster> clusters() {
  std::vector<model::Cluster> out(3);
  out[0].name = "east";
  out[1].name = "west";
  out[2].name = "retired";
  out[2].state = model::ClusterState::kInactive;
  return out;
}

std::vector<model::Node> inventory(int count, Random& random) {
  static const char* kGpus[] = {"", "nvidia-a100", "nvidia-v100", "nvidia-p100", "nvidia-t4"};
  static const double kCores[] = {32, 64, 96, 128};
  static const double kSsd[] = {500, 1000, 2000};
  std::vector<model::Node> nodes;
  nodes.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    model::Node n;
    n.name = numbered("node-", i, 5);
    n.update_domain = numbered("ud-", i % kDomains, 2);
    const int roll = random.below(100);
    n.cluster = roll < 3 ? "retired" : (roll % 2 ? "east" : "west");
    n.state = random.below(100) < 2 ? model::NodeState::kCordoned : model::NodeState::kAllocated;
    const double cores = kCores[random.below(4)];
    n.total = {cores, cores * (random.below(2) ? 4 : 8)};
    n.system_reserved = {2, 8};
    const double used = random.below(25) / 100.0;  // reservations of instances already there
    n.remaining = {(n.total.cores - 2) * (1 - used), (n.total.memory_gib - 8) * (1 - used)};
    if (const char* gpu = kGpus[random.below(5)]; *gpu) n.capabilities.push_back(gpu);
    n.capabilities.push_back(random.below(2) ? "intel-xeon" : "amd-epyc");
    const int ssds = 1 + random.below(2);
    for (int v = 0; v < ssds; ++v) {
      n.local_volumes.push_back({numbered("/mnt/ssd", v, 1), "SSD", kSsd[random.below(3)]});
    }
    if (random.below(2)) n.local_volumes.push_back({"/mnt/hdd0", "HDD", 4000});
    nodes.push_back(std::move(n));
  }
  return nodes;
}

model::Plan plan(const std::string& name, double cores, double memory) {
  model::Plan p;
  p.name = name;
  p.service_name = name;
  model::Application app;
  app.payload_name = name;
  app.resources = {cores, memory};
  p.applications.push_back(app);
  return p;
}

struct Job {
  model::Plan plan;
  int instances = 0;
  sched::PlacementOptions options;
};

struct Placed {
  std::string plan;
  int max_per_node = 1;
  sched::Placement placement;
};

// Wall and CPU time of one phase: CPU time is what the scheduler costs when other work
// shares the machine.
class Stopwatch {
 public:
  Stopwatch() : wall_(std::chrono::steady_clock::now()), cpu_(std::clock()) {}
  double wallMs() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_).count();
  }
  double cpuMs() const { return 1000.0 * static_cast<double>(std::clock() - cpu_) / CLOCKS_PER_SEC; }

 private:
  std::chrono::steady_clock::time_point wall_;
  std::clock_t cpu_;
};

struct Timing {
  double wall_ms = 0;
  double cpu_ms = 0;
};

Timing stop(const Stopwatch& watch) { return {watch.wallMs(), watch.cpuMs()}; }

double perSecond(int placements, double ms) { return ms > 0 ? placements / (ms / 1000) : 0; }

void report(const char* what, int placements, Timing t) {
  std::fprintf(stderr, "%-44s %6d placements in %8.1f ms wall = %9.0f/s; %8.1f ms CPU = %9.0f/s\n", what, placements,
               t.wall_ms, perSecond(placements, t.wall_ms), t.cpu_ms, perSecond(placements, t.cpu_ms));
}

// Re-derives every node's usage from the placements alone and compares it with the
// inventory the scheduler started from. Returns the problems found.
std::vector<std::string> check(const std::vector<model::Node>& nodes, const std::vector<Placed>& placed,
                               std::map<std::string, std::map<std::string, int>>& per_domain) {
  std::map<std::string, const model::Node*> by_name;
  for (const auto& n : nodes) by_name[n.name] = &n;
  std::map<std::string, model::Resources> reserved;
  std::map<std::string, double> volume_used;                    // node + local volume
  std::map<std::pair<std::string, std::string>, int> per_node;  // (plan, node)
  std::vector<std::string> problems;
  for (const auto& p : placed) {
    const model::Node* node = by_name.at(p.placement.node);
    if (node->state != model::NodeState::kAllocated || node->cluster == "retired") {
      problems.push_back(node->name + " is not schedulable");
    }
    reserved[node->name].cores += p.placement.reservation.cores;
    reserved[node->name].memory_gib += p.placement.reservation.memory_gib;
    for (const auto& v : p.placement.volumes) volume_used[node->name + v.local_volume] += v.capacity_gib;
    if (++per_node[{p.plan, node->name}] > p.max_per_node) {
      problems.push_back(node->name + " runs more than " + std::to_string(p.max_per_node) + " of " + p.plan);
    }
    ++per_domain[p.plan][node->update_domain];
  }
  for (const auto& n : nodes) {
    const model::Resources& r = reserved[n.name];
    if (r.cores > n.remaining.cores + 1e-9 || r.memory_gib > n.remaining.memory_gib + 1e-9) {
      problems.push_back(n.name + " is over-committed");
    }
    for (const auto& v : n.local_volumes) {
      if (volume_used[n.name + v.mount_path] > v.capacity_gib + 1e-9) {
        problems.push_back(n.name + ":" + v.mount_path + " is over-committed");
      }
    }
  }
  return problems;
}

}  // namespace

int main(int argc, char** argv) {
  const int node_count = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int batch_count = argc > 2 ? std::atoi(argv[2]) : 10000;
  const int rounds = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  Random random(42);
  const std::vector<model::Node> nodes = inventory(node_count, random);

  model::Plan gpu = plan("inference", 8, 32);
  gpu.matching_capabilities = {{"GPU", "GTE", {"nvidia-p100"}}, {"CPU", "IN", {"intel-xeon"}}};
  gpu.applications[0].persistent_volumes = {{"SSD", 200, "/models"}};
  model::Plan db = plan("db", 4, 16);
  db.matching_capabilities = {{"GPU", "NOT_IN", {"nvidia-t4"}}};
  db.applications[0].persistent_volumes = {{"SSD", 100, "/wal"}, {"HDD", 500, "/data"}};
  std::vector<Job> singles = {{plan("web", 2, 4), 1000, {}}, {gpu, 500, {}}, {db, 500, {}}};
  Job batch{plan("batch", 1, 2), batch_count, {}};
  batch.options.max_per_node = 3;
  int single_total = 0;
  for (const auto& job : singles) single_total += job.instances;

  // One at a time, interleaved across plans, as the engine places CREATE operations; each
  // round starts from a fresh snapshot, and the last one goes on to the batch.
  Timing build, single;
  std::vector<Placed> placed;
  std::optional<sched::ClusterSnapshot> snapshot;
  int meta = 0;
  auto record = [&](const Job& job, const sched::Placement& p) {
    if (auto s = snapshot->commit(job.plan.name, numbered("m-", meta++, 6), p); !s.isOk()) {
      std::fprintf(stderr, "commit: %s\n", s.toString().c_str());
      std::exit(1);
    }
    placed.push_back({job.plan.name, job.options.max_per_node, p});
  };
  for (int r = 0; r < rounds; ++r) {
    Stopwatch watch;
    snapshot.emplace(sched::ClusterSnapshot::build(nodes, clusters(), capabilities(), {}));
    build = stop(watch);
    placed.clear();
    meta = 0;
    sched::Scheduler scheduler(*snapshot);
    watch = Stopwatch();
    for (int round = 0, done = 0; done < single_total; ++round) {
      for (const auto& job : singles) {
        if (round >= job.instances) continue;
        auto result = scheduler.place(job.plan, 1, job.options);
        if (!result.isOk()) {
          std::fprintf(stderr, "place %s: %s\n", job.plan.name.c_str(), result.status().toString().c_str());
          return 1;
        }
        record(job, result->front());
        ++done;
      }
    }
    const Timing t = stop(watch);
    single.wall_ms += t.wall_ms;
    single.cpu_ms += t.cpu_ms;
  }
  sched::Scheduler scheduler(*snapshot);

  Stopwatch watch;
  auto result = scheduler.place(batch.plan, batch.instances, batch.options);
  const Timing batched = stop(watch);
  if (!result.isOk()) {
    std::fprintf(stderr, "place %s: %s\n", batch.plan.name.c_str(), result.status().toString().c_str());
    return 1;
  }
  for (const auto& p : *result) record(batch, p);

  std::vector<sched::InstanceFact> batch_instances;
  for (size_t i = static_cast<size_t>(single_total); i < placed.size(); ++i) {
    sched::InstanceFact fact;
    fact.meta_instance = numbered("m-", static_cast<int>(i), 6);
    fact.plan = "batch";
    fact.node = placed[i].placement.node;
    fact.healthy = i % 97 != 0;
    batch_instances.push_back(std::move(fact));
  }
  watch = Stopwatch();
  const auto victims = scheduler.chooseScaleDown(batch_instances, batch_count / 10);
  const Timing scale_down = stop(watch);

  // A domain may hold fewer than its share only if it has no room left for the plan.
  std::map<std::string, std::map<std::string, int>> per_domain;
  std::vector<std::string> problems = check(nodes, placed, per_domain);
  std::map<std::string, const Job*> jobs = {{batch.plan.name, &batch}};
  for (const auto& job : singles) jobs[job.plan.name] = &job;
  std::string spread;
  for (const auto& [plan_name, domains] : per_domain) {
    int low = 1 << 30, high = 0;
    for (int d = 0; d < kDomains; ++d) {
      auto it = domains.find(numbered("ud-", d, 2));
      const int n = it == domains.end() ? 0 : it->second;
      low = std::min(low, n);
      high = std::max(high, n);
    }
    for (int d = 0; d < kDomains; ++d) {
      const std::string name = numbered("ud-", d, 2);
      auto it = domains.find(name);
      if ((it == domains.end() ? 0 : it->second) >= high - 1) continue;
      sched::PlacementOptions only = jobs.at(plan_name)->options;
      for (const auto& n : nodes) {
        if (n.update_domain != name) only.exclude_nodes.push_back(n.name);
      }
      if (scheduler.place(jobs.at(plan_name)->plan, 1, only).isOk()) {
        problems.push_back(plan_name + ": " + name + " is short of its share yet has room");
      }
    }
    spread += " " + plan_name + " " + std::to_string(low) + ".." + std::to_string(high);
  }

  const int singles_placed = single_total * rounds;
  std::fprintf(stderr, "sched_bench: %d nodes in %d update domains; snapshot built in %.1f ms (%.1f ms CPU)\n",
               node_count, kDomains, build.wall_ms, build.cpu_ms);
  report("one at a time (place 1 + commit, 3 plans):", singles_placed, single);
  report("one batch (max_per_node 3):", batch_count, batched);
  std::fprintf(stderr, "scale-down: chose %zu of %zu in %.2f ms wall\n", victims.size(), batch_instances.size(),
               scale_down.wall_ms);
  std::fprintf(stderr, "instances per update domain (min..max):%s\n", spread.c_str());
  if (!problems.empty()) {
    std::fprintf(stderr, "check: FAILED (%zu problems)\n", problems.size());
    for (size_t i = 0; i < problems.size() && i < 20; ++i) std::fprintf(stderr, "  %s\n", problems[i].c_str());
  } else {
    std::fprintf(stderr,
                 "check: OK (no node or volume over-committed, per-node counts within max_per_node, "
                 "update domains within 1 of even or full)\n");
  }

  const nlohmann::ordered_json figures = {
      {"bench", "sched"},
      {"nodes", node_count},
      {"update_domains", kDomains},
      {"one_at_a_time_per_s", std::lround(perSecond(singles_placed, single.cpu_ms))},
      {"one_at_a_time_wall_per_s", std::lround(perSecond(singles_placed, single.wall_ms))},
      {"one_at_a_time_placements", singles_placed},
      {"batch_per_s", std::lround(perSecond(batch_count, batched.cpu_ms))},
      {"batch_wall_per_s", std::lround(perSecond(batch_count, batched.wall_ms))},
      {"batch_placements", batch_count},
      {"snapshot_build_ms", std::round(build.cpu_ms * 10) / 10},
      {"scale_down_ms", std::round(scale_down.wall_ms * 100) / 100},
      {"target_one_at_a_time_per_s", 50000},
      {"check", problems.empty() ? "ok" : "failed"}};
  std::printf("%s\n", figures.dump().c_str());
  return problems.empty() ? 0 : 1;
}
