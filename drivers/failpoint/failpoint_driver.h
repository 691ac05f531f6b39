#pragma once
// Failpoints around every call of a driver (docs/architecture.md#failpoints): a wrapper the
// host puts around each cluster's driver when TIDE_FAILPOINTS arms any failpoint, so a crash
// test can kill the host exactly before or after a driver call. The places are
// driver.<call>.before and driver.<call>.after, <call> as driverCallName() names it; a
// batched statusAll() is one "status" call, as the fault driver counts it.
//   before + error  the inner call is not made: kUnavailable, like a refused request;
//   after + error   the inner call is made and its reply dropped: kUnavailable, like a lost
//                   reply (callers cope through idempotency).
// Thread-safe when the inner driver is.

#include <memory>

#include "drivers/driver.h"
#include "drivers/fault/fault_driver.h"

namespace tide::drivers {

class FailpointDriver : public Driver {
 public:
  explicit FailpointDriver(std::unique_ptr<Driver> inner) : inner_(std::move(inner)) {}

  Status ensureVolume(const VolumeSpec& volume) override;
  Status removeVolume(const VolumeRef& volume) override;
  Result<RuntimeStatus> ensure(const RuntimeSpec& spec) override;
  Status stop(const RuntimeRef& ref) override;
  Status remove(const RuntimeRef& ref) override;
  Result<RuntimeStatus> status(const RuntimeRef& ref) override;
  Result<std::vector<RuntimeRef>> list() override;
  Result<std::vector<RuntimeAnswer>> statusAll(const std::vector<RuntimeRef>& refs) override;
  // The inner driver's, untouched: no failure is injected into what the control loop
  // learns of lost nodes.
  std::vector<UnreachableNode> unreachableNodes() override { return inner_->unreachableNodes(); }
  // The inner driver's, untouched: no failpoint guards reading a log.
  Result<LogSlice> readLogSlice(const std::string& runtime_id, const std::optional<LogCursor>& from,
                                size_t max_bytes) override {
    return inner_->readLogSlice(runtime_id, from, max_bytes);
  }

  Driver& inner() { return *inner_; }

 private:
  // The inner call between the two failpoints of `call`.
  template <class Call>
  auto guarded(DriverCall call, Call&& inner_call) -> decltype(inner_call());

  std::unique_ptr<Driver> inner_;
};

}  // namespace tide::drivers
