#include "drivers/failpoint/failpoint_driver.h"

#include <string>

#include "host/core/failpoint.h"

namespace tide::drivers {

template <class Call>
auto FailpointDriver::guarded(DriverCall call, Call&& inner_call) -> decltype(inner_call()) {
  const std::string place = std::string("driver.") + driverCallName(call);
  TIDE_RETURN_IF_ERROR(failpoint::check(place + ".before"));
  auto reply = inner_call();
  TIDE_RETURN_IF_ERROR(failpoint::check(place + ".after"));
  return reply;
}

Status FailpointDriver::ensureVolume(const VolumeSpec& volume) {
  return guarded(DriverCall::kEnsureVolume, [&] { return inner_->ensureVolume(volume); });
}

Status FailpointDriver::removeVolume(const VolumeRef& volume) {
  return guarded(DriverCall::kRemoveVolume, [&] { return inner_->removeVolume(volume); });
}

Result<RuntimeStatus> FailpointDriver::ensure(const RuntimeSpec& spec) {
  return guarded(DriverCall::kEnsure, [&] { return inner_->ensure(spec); });
}

Status FailpointDriver::stop(const RuntimeRef& ref) {
  return guarded(DriverCall::kStop, [&] { return inner_->stop(ref); });
}

Status FailpointDriver::remove(const RuntimeRef& ref) {
  return guarded(DriverCall::kRemove, [&] { return inner_->remove(ref); });
}

Result<RuntimeStatus> FailpointDriver::status(const RuntimeRef& ref) {
  return guarded(DriverCall::kStatus, [&] { return inner_->status(ref); });
}

Result<std::vector<RuntimeRef>> FailpointDriver::list() {
  return guarded(DriverCall::kList, [&] { return inner_->list(); });
}

Result<std::vector<RuntimeAnswer>> FailpointDriver::statusAll(const std::vector<RuntimeRef>& refs) {
  return guarded(DriverCall::kStatus, [&] { return inner_->statusAll(refs); });
}

}  // namespace tide::drivers
