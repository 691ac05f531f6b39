#pragma once
// The `fault` driver (docs/architecture.md#drivers): wraps another driver and, for reliability tests, makes
// its calls fail the ways remote runtimes fail. Each affected call draws its fate from a
// seeded std::mt19937_64, so a seed and a sequence of calls give the same faults every run:
//   error       kUnavailable, the inner call is not made
//   lost reply  the inner call is made, its reply dropped: kUnavailable (callers cope
//               through idempotency)
//   hang        sleeps `hang` (bounded, interruptible), then kDeadlineExceeded without
//               making the inner call: the caller's own deadline should fire first
//   latency     a uniform delay in [latency_min, latency_max] before the call
// A batched statusAll() is one call: it draws one fate, under "status", for the whole batch
// (a remote runtime answers a batch in one round trip, and loses or refuses it as one).
//
// Cluster driver_config:
//   {"inner": "process", "inner_config": {...}, "seed": 42, "error_rate": 0.1,
//    "lost_reply_rate": 0.05, "latency_ms": [0, 50], "hang_rate": 0.0, "hang_ms": 2000,
//    "calls": ["ensure", "stop"]}
// Thread-safe; with concurrent callers the faults follow the order calls reach the driver.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>

#include "drivers/driver.h"

namespace tide::drivers {

enum class DriverCall { kEnsureVolume, kRemoveVolume, kEnsure, kStop, kRemove, kStatus, kList };

// "ensure_volume", "remove_volume", "ensure", "stop", "remove", "status", "list".
const char* driverCallName(DriverCall call);

struct FaultOptions {
  std::string inner = "process";       // driver kind wrapped (built by the registry)
  Json inner_config = Json::object();  // its driver_config
  uint64_t seed = 0;
  double error_rate = 0;
  double lost_reply_rate = 0;
  double hang_rate = 0;
  std::chrono::milliseconds latency_min{0};
  std::chrono::milliseconds latency_max{0};
  std::chrono::milliseconds hang{2000};
  std::set<DriverCall> calls;  // the calls faults apply to; empty: all of them
};

constexpr std::chrono::milliseconds kMaxFaultDelay{600000};

// Validates a fault cluster's driver_config. kInvalidArgument with one detail per bad
// field ("driver_config.error_rate", ...); unknown keys are errors too.
Result<FaultOptions> parseFaultOptions(const Json& driver_config);

struct FaultCounts {
  int64_t calls = 0;  // calls that drew a fate
  int64_t errors = 0;
  int64_t lost_replies = 0;
  int64_t hangs = 0;
};

class FaultDriver final : public Driver {
 public:
  FaultDriver(std::unique_ptr<Driver> inner, FaultOptions options);

  Status ensureVolume(const VolumeSpec& volume) override;
  Status removeVolume(const VolumeRef& volume) override;
  Result<RuntimeStatus> ensure(const RuntimeSpec& spec) override;
  Status stop(const RuntimeRef& ref) override;
  Status remove(const RuntimeRef& ref) override;
  Result<RuntimeStatus> status(const RuntimeRef& ref) override;
  Result<std::vector<RuntimeAnswer>> statusAll(const std::vector<RuntimeRef>& refs) override;
  // The inner driver's, untouched: no failure is injected into what the control loop
  // learns of lost nodes.
  std::vector<UnreachableNode> unreachableNodes() override { return inner_->unreachableNodes(); }
  Result<std::vector<RuntimeRef>> list() override;
  // The inner driver's, untouched: logs are not a call faults are injected into.
  Result<LogSlice> readLogSlice(const std::string& runtime_id, const std::optional<LogCursor>& from,
                                size_t max_bytes) override {
    return inner_->readLogSlice(runtime_id, from, max_bytes);
  }

  // Ends every injected hang or latency sleeping right now; those calls return at once.
  void interrupt();
  FaultCounts counts() const;
  Driver& inner() { return *inner_; }

 private:
  enum class Fate { kPass, kError, kLostReply, kHang };
  struct Draw {
    Fate fate = Fate::kPass;
    std::chrono::milliseconds latency{0};
  };

  Draw draw(DriverCall call);
  void sleepFor(std::chrono::milliseconds duration);
  template <class R, class Call>
  R inject(DriverCall call, Call&& inner_call);

  const std::unique_ptr<Driver> inner_;
  const FaultOptions options_;
  mutable std::mutex mu_;
  std::mt19937_64 random_;   // GUARDED_BY(mu_)
  FaultCounts counts_;       // GUARDED_BY(mu_)
  uint64_t interrupts_ = 0;  // GUARDED_BY(mu_); bumped by interrupt()
  std::condition_variable wake_;
};

}  // namespace tide::drivers
