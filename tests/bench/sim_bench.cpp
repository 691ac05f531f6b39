// Sim driver benchmark: what a 1,000-100,000 instance rollout costs the driver itself.
// Ensures N instances over 1,000 nodes, asks status() of each, one statusAll() of all, list(),
// stops them all, checks every answer against simFate, and prints calls per second. Exits 1
// when an answer is not the predicted one.
//
//   build-release/sim_bench [instances]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "drivers/sim/sim_driver.h"

using namespace tide;
using namespace tide::drivers;

namespace {

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

void report(const char* what, size_t calls, const Stopwatch& watch) {
  const double wall = watch.wallMs(), cpu = watch.cpuMs();
  std::printf("%-34s %7zu in %8.1f ms wall = %10.0f/s; %8.1f ms CPU = %10.0f/s\n", what, calls, wall,
              calls / (wall / 1000), cpu, calls / (cpu / 1000));
}

}  // namespace

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100000;
  FakeClock clock(std::chrono::system_clock::now());
  SimOptions options;
  options.seed = 11;
  options.start_latency = std::chrono::milliseconds(500);
  options.start_failure_rate = 0.01;
  options.unhealthy_rate = 0.02;
  SimDriver driver(options, clock);

  std::vector<RuntimeSpec> specs(count);
  std::vector<RuntimeRef> refs(count);
  for (size_t i = 0; i < count; ++i) {
    specs[i].id = std::to_string(100000000 + i);
    specs[i].node = "node-" + std::to_string(i % 1000);
    specs[i].meta_instance = "web-" + specs[i].id;
    specs[i].coordinates = {{"image", "web:1"}};
    specs[i].ports = {{"TCP", 80}};
    refs[i] = {specs[i].id, specs[i].node, ""};
  }
  std::printf("sim_bench: %zu instances on 1000 nodes\n", count);

  Stopwatch ensure_watch;
  for (const RuntimeSpec& spec : specs) {
    if (!driver.ensure(spec).isOk()) return 1;
  }
  report("ensure (new)", count, ensure_watch);
  clock.advance(options.start_latency);

  size_t wrong = 0;
  Stopwatch status_watch;
  for (const RuntimeRef& ref : refs) {
    auto status = driver.status(ref);
    const SimFate fate = simFate(options, ref.id, 1);
    if (!status.isOk() || (status->state == model::WorkloadState::kExited) != fate.start_fails) ++wrong;
  }
  report("status (one each)", count, status_watch);

  Stopwatch batch_watch;
  auto answers = driver.statusAll(refs);
  report("statusAll (one call, per entry)", count, batch_watch);
  size_t unhealthy = 0, failed = 0;
  for (size_t i = 0; i < count; ++i) {
    const SimFate fate = simFate(options, refs[i].id, 1);
    const RuntimeAnswer& answer = answers->at(i);
    if (!answer.isOk()) {
      ++wrong;
      continue;
    }
    failed += answer->state == model::WorkloadState::kExited;
    unhealthy += answer->healthy == std::optional<bool>(false);
    if ((answer->state == model::WorkloadState::kExited) != fate.start_fails ||
        (answer->healthy == std::optional<bool>(false)) != (!fate.start_fails && fate.unhealthy))
      ++wrong;
  }

  Stopwatch list_watch;
  const size_t listed = driver.list()->size();
  report("list (per instance listed)", listed, list_watch);

  Stopwatch again_watch;
  for (const RuntimeSpec& spec : specs) (void)driver.ensure(spec);
  report("ensure (again, idempotent)", count, again_watch);

  Stopwatch stop_watch;
  for (const RuntimeRef& ref : refs) (void)driver.stop(ref);
  report("stop", count, stop_watch);
  const auto stopped = driver.statusAll(refs);
  for (const RuntimeAnswer& answer : *stopped) wrong += answer->state != model::WorkloadState::kStopped;

  std::printf("start failures %zu (%.2f%%), unhealthy %zu (%.2f%%), listed %zu\n", failed, 100.0 * failed / count,
              unhealthy, 100.0 * unhealthy / count, listed);
  std::printf("check: %s\n", wrong == 0 && listed == count ? "OK (every answer as simFate predicts)" : "FAILED");
  return wrong == 0 && listed == count ? 0 : 1;
}
