#include "drivers/fault/fault_driver.h"

#include <array>
#include <utility>

#include "host/core/json_reader.h"

namespace tide::drivers {
namespace {

constexpr std::array kCalls = {DriverCall::kEnsureVolume, DriverCall::kRemoveVolume, DriverCall::kEnsure,
                               DriverCall::kStop,         DriverCall::kRemove,       DriverCall::kStatus,
                               DriverCall::kList};

// A double in [0, 1) from the top 53 bits: the same on every standard library, unlike
// std::uniform_real_distribution.
double unitInterval(std::mt19937_64& random) { return static_cast<double>(random() >> 11) * 0x1.0p-53; }

// A delay of the fault driver: whole milliseconds in [0, kMaxFaultDelay].
std::optional<std::chrono::milliseconds> delay(const Json& v) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxFaultDelay.count()) return std::nullopt;
  return std::chrono::milliseconds(v.get<int64_t>());
}

}  // namespace

const char* driverCallName(DriverCall call) {
  switch (call) {
    case DriverCall::kEnsureVolume: return "ensure_volume";
    case DriverCall::kRemoveVolume: return "remove_volume";
    case DriverCall::kEnsure: return "ensure";
    case DriverCall::kStop: return "stop";
    case DriverCall::kRemove: return "remove";
    case DriverCall::kStatus: return "status";
    case DriverCall::kList: return "list";
  }
  return "unknown";
}

Result<FaultOptions> parseFaultOptions(const Json& config) {
  FaultOptions options;
  JsonProblems problems;
  JsonReader r(config, "driver_config", problems,
               "must be an object naming the inner driver: {\"inner\": \"process\"}");
  if (!r.isObject()) return problems.toStatus("fault driver: bad driver_config");
  const std::string bounds = "an integer of milliseconds in [0, " + std::to_string(kMaxFaultDelay.count()) + "]";
  r.onlyKeys(
      {"inner", "inner_config", "seed", "error_rate", "lost_reply_rate", "latency_ms", "hang_rate", "hang_ms", "calls"},
      "unknown key");
  const std::string inner_must = "must name the wrapped driver kind, e.g. \"process\"";
  if (const Json* inner = r.find("inner");
      inner != nullptr && inner->is_string() && !inner->get<std::string>().empty()) {
    options.inner = inner->get<std::string>();
  } else {
    r.bad("inner", inner_must);
  }
  if (const Json* inner_config = r.object("inner_config", JsonNeed::kOptional)) options.inner_config = *inner_config;
  options.seed = r.unsignedInteger("seed", JsonNeed::kOptional).value_or(options.seed);
  const std::string rate_must = "must be a number in [0, 1]";
  options.error_rate = r.number("error_rate", JsonNeed::kOptional, {0, 1}, rate_must).value_or(options.error_rate);
  options.lost_reply_rate =
      r.number("lost_reply_rate", JsonNeed::kOptional, {0, 1}, rate_must).value_or(options.lost_reply_rate);
  options.hang_rate = r.number("hang_rate", JsonNeed::kOptional, {0, 1}, rate_must).value_or(options.hang_rate);
  if (const Json* latency = r.find("latency_ms")) {
    if (auto single = delay(*latency)) {
      options.latency_min = options.latency_max = *single;
    } else if (latency->is_array() && latency->size() == 2 && delay((*latency)[0]) && delay((*latency)[1]) &&
               *delay((*latency)[0]) <= *delay((*latency)[1])) {
      options.latency_min = *delay((*latency)[0]);
      options.latency_max = *delay((*latency)[1]);
    } else {
      r.bad("latency_ms", "must be [min, max] (min <= max) or one value, each " + bounds);
    }
  }
  if (const Json* hang = r.find("hang_ms")) {
    if (auto ms = delay(*hang)) {
      options.hang = *ms;
    } else {
      r.bad("hang_ms", "must be " + bounds);
    }
  }
  if (const Json* calls = r.find("calls")) {
    if (!calls->is_array() || calls->empty()) {
      r.bad("calls", "must be a non-empty list of call names (omit it for every call)");
    } else {
      for (size_t i = 0; i < calls->size(); ++i) {
        bool known = false;
        for (DriverCall call : kCalls) {
          if ((*calls)[i].is_string() && (*calls)[i].get<std::string>() == driverCallName(call)) {
            options.calls.insert(call);
            known = true;
          }
        }
        if (!known) {
          r.bad("calls[" + std::to_string(i) + "]",
                "unknown call; known: ensure_volume, remove_volume, ensure, stop, remove, status, list");
        }
      }
    }
  }
  if (!problems.empty()) return problems.toStatus("fault driver: bad driver_config");
  return options;
}

FaultDriver::FaultDriver(std::unique_ptr<Driver> inner, FaultOptions options)
    : inner_(std::move(inner)), options_(std::move(options)), random_(options_.seed) {}

FaultDriver::Draw FaultDriver::draw(DriverCall call) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!options_.calls.empty() && options_.calls.count(call) == 0) return {};
  // Every affected call consumes the same four numbers, whatever its fate, so the fate of
  // the n-th call depends only on the seed and n.
  double hang = unitInterval(random_);
  double error = unitInterval(random_);
  double lost = unitInterval(random_);
  uint64_t spread = static_cast<uint64_t>((options_.latency_max - options_.latency_min).count()) + 1;
  Draw d;
  d.latency = options_.latency_min + std::chrono::milliseconds(random_() % spread);
  d.fate = hang < options_.hang_rate         ? Fate::kHang
           : error < options_.error_rate     ? Fate::kError
           : lost < options_.lost_reply_rate ? Fate::kLostReply
                                             : Fate::kPass;
  ++counts_.calls;
  if (d.fate == Fate::kHang) ++counts_.hangs;
  if (d.fate == Fate::kError) ++counts_.errors;
  if (d.fate == Fate::kLostReply) ++counts_.lost_replies;
  return d;
}

void FaultDriver::sleepFor(std::chrono::milliseconds duration) {
  if (duration.count() <= 0) return;
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t seen = interrupts_;
  wake_.wait_for(lock, duration, [&] { return interrupts_ != seen; });
}

void FaultDriver::interrupt() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++interrupts_;
  }
  wake_.notify_all();
}

FaultCounts FaultDriver::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counts_;
}

template <class R, class Call>
R FaultDriver::inject(DriverCall call, Call&& inner_call) {
  Draw d = draw(call);
  sleepFor(d.latency);
  std::string name = driverCallName(call);
  switch (d.fate) {
    case Fate::kPass: return inner_call();
    case Fate::kError: return Status::unavailable("fault: injected error in " + name);
    case Fate::kLostReply:
      (void)inner_call();  // the call happens; only its reply is lost
      return Status::unavailable("fault: reply of " + name + " lost");
    case Fate::kHang:
      sleepFor(options_.hang);
      return Status::deadlineExceeded("fault: " + name + " hung for " + std::to_string(options_.hang.count()) + " ms");
  }
  return inner_call();
}

Status FaultDriver::ensureVolume(const VolumeSpec& volume) {
  return inject<Status>(DriverCall::kEnsureVolume, [&] { return inner_->ensureVolume(volume); });
}

Status FaultDriver::removeVolume(const VolumeRef& volume) {
  return inject<Status>(DriverCall::kRemoveVolume, [&] { return inner_->removeVolume(volume); });
}

Result<RuntimeStatus> FaultDriver::ensure(const RuntimeSpec& spec) {
  return inject<Result<RuntimeStatus>>(DriverCall::kEnsure, [&] { return inner_->ensure(spec); });
}

Status FaultDriver::stop(const RuntimeRef& ref) {
  return inject<Status>(DriverCall::kStop, [&] { return inner_->stop(ref); });
}

Status FaultDriver::remove(const RuntimeRef& ref) {
  return inject<Status>(DriverCall::kRemove, [&] { return inner_->remove(ref); });
}

Result<RuntimeStatus> FaultDriver::status(const RuntimeRef& ref) {
  return inject<Result<RuntimeStatus>>(DriverCall::kStatus, [&] { return inner_->status(ref); });
}

Result<std::vector<RuntimeAnswer>> FaultDriver::statusAll(const std::vector<RuntimeRef>& refs) {
  return inject<Result<std::vector<RuntimeAnswer>>>(DriverCall::kStatus, [&] { return inner_->statusAll(refs); });
}

Result<std::vector<RuntimeRef>> FaultDriver::list() {
  return inject<Result<std::vector<RuntimeRef>>>(DriverCall::kList, [&] { return inner_->list(); });
}

}  // namespace tide::drivers
