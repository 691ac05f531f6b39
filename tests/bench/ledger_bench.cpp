// Ledger bench: durable operation transitions per second against what the disk allows.
// Measures the machine's fdatasync/s in the scratch dir first, then opens a file ledger
// there, creates N instances with a CREATE operation each, and moves every operation
// PENDING → APPROVED → RUNNING → SUCCEEDED from 32 threads at once (as the executor's
// workers do). Every transition is one write call that returns only once it is durable;
// group commit lets the writes that queue up together share a commit. Prints one JSON line:
//   {"bench":"ledger", "fdatasync_per_s", "transitions_per_s", "commits", "mean_batch",
//    "efficiency"}  where efficiency = transitions/s ÷ (fdatasync/s × mean batch); target ≥ 0.5.
//
//   ledger_bench [instances] [threads]

#include <fcntl.h>
#include <unistd.h>

#include <atomic>

#include "host/config/manifest.h"
#include "host/core/clock.h"
#include "host/ledger/ledger.h"
#include "tests/bench/bench_support.h"

using namespace tide;
using namespace tide::bench;

namespace {

double fdatasyncPerSecond(const std::filesystem::path& dir) {
  const std::string path = (dir / "fsync.probe").string();
  const int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0600);
  if (fd < 0) fail("cannot create " + path);
  char block[4096] = {};
  int n = 0;
  const auto started = Steady::now();
  while (secondsSince(started) < 2.0) {
    if (::pwrite(fd, block, sizeof block, (n % 16) * 4096) < 0 || ::fdatasync(fd) != 0) fail("fdatasync");
    ++n;
  }
  const double rate = n / secondsSince(started);
  ::close(fd);
  ::unlink(path.c_str());
  return rate;
}

template <class T>
T must(Result<T> result, const std::string& what) {
  if (!result.isOk()) fail(what + ": " + result.status().toString());
  return std::move(result.value());
}

}  // namespace

int main(int argc, char** argv) {
  const int instances = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 32;
  ScratchDir dir;
  const double fsyncs = fdatasyncPerSecond(dir.path);
  std::fprintf(stderr, "ledger: this disk does %.0f fdatasync/s\n", fsyncs);

  SystemClock clock;
  auto ledger = must(ledger::Ledger::open("sqlite://" + (dir.path / "tide.db").string(), clock), "open");
  Fleet fleet;
  fleet.nodes = 10;
  fleet.max_per_node = 1;
  const std::string manifest = inventoryManifest(fleet) + planManifest(fleet) + deploymentManifest(fleet, "d1", "1");
  must(ledger->applyManifest(must(config::parseManifest(manifest, "bench"), "manifest"), "bench"), "apply");
  std::vector<int64_t> operations;
  {
    ledger::Ledger::Batch batch(*ledger);
    model::Operation op;
    op.type = model::OperationType::kCreate;
    op.intent = "d1";
    op.requested_by = "bench";
    for (int i = 0; i < instances; ++i) {
      operations.push_back(must(ledger->operations().createInstanceWithOperation(fleet.plan, "d1", op, "bench"), "create").meta.id);
    }
  }
  const ledger::WriteStats before = ledger->writeStats();

  std::atomic<size_t> next{0};
  std::atomic<int64_t> transitions{0};
  const auto started = Steady::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < operations.size(); i = next++) {
        for (model::OperationState state :
             {model::OperationState::kApproved, model::OperationState::kRunning, model::OperationState::kSucceeded}) {
          must(ledger->operations().setOperationState(operations[i], state, std::nullopt, "bench"), std::string("to ") + model::toString(state));
          ++transitions;
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  const double seconds = secondsSince(started);
  const ledger::WriteStats after = ledger->writeStats();
  const int64_t commits = after.commits - before.commits;
  const int64_t writes = after.writes - before.writes;
  const double rate = static_cast<double>(transitions) / seconds;
  const double batch = commits > 0 ? static_cast<double>(writes) / static_cast<double>(commits) : 0;
  std::fprintf(stderr, "  %lld transitions in %.2f s by %d threads: %lld commits, %.1f writes each\n",
               static_cast<long long>(transitions.load()), seconds, threads, static_cast<long long>(commits), batch);
  Json line = {{"bench", "ledger"},
               {"threads", threads},
               {"fdatasync_per_s", fsyncs},
               {"transitions", transitions.load()},
               {"transitions_per_s", rate},
               {"commits", commits},
               {"commits_per_s", static_cast<double>(commits) / seconds},
               {"mean_batch", batch},
               {"efficiency", batch > 0 ? rate / (fsyncs * batch) : 0.0}};
  std::printf("%s\n", line.dump().c_str());
  return 0;
}
