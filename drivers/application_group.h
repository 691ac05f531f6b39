#pragma once
// Instances of plans with several applications, on any driver (docs/architecture.md#applications).
// The host puts this wrapper around every cluster's driver. An instance of a plan with one
// application passes through untouched: one runtime of the inner driver, named by the runtime
// instance id, as before. An instance of several runs each application as a runtime of the
// inner driver of its own, named "<runtime id>.<payload name>"; together they are the
// instance:
// - ensure() starts them in RuntimeSpec::applications order (each after the ones it depends
//   on) and gives each the host ports of the ones started before it, as
//   TIDE_PORT_<PROTO>_<PORT> in its env, so a sidecar finds the application it serves. A start
//   that fails names the application.
// - status() is RUNNING when every application runs; else the state of the first that does
//   not, named in the message (an application that exited makes the instance EXITED, and the
//   plan's restart policy restarts the instance). Its ports are all the applications' ports
//   (a plan's ports are unique across its applications), its handle "apps: web=<handle> |
//   worker=<handle>", from which status() and statusAll() know the applications again.
// - stop() and remove() find the applications in the inner driver's list(), so an instance
//   whose start the host never recorded is still ended whole, and end them in reverse order.
// - list() shows an instance once, by its runtime id.
// - readLogSlice("<runtime id>.<payload name>") is one application's log; the runtime id of an
//   instance of several alone is refused with the applications named.
// Thread-safe when the inner driver is.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "drivers/driver.h"

namespace tide::drivers {

// "<runtime id>.<payload name>": the inner driver's runtime of one application of an
// instance of several.
std::string applicationRuntimeId(const std::string& runtime_id, const std::string& payload_name);

class ApplicationGroupDriver : public Driver {
 public:
  explicit ApplicationGroupDriver(std::unique_ptr<Driver> inner) : inner_(std::move(inner)) {}

  Status ensureVolume(const VolumeSpec& volume) override { return inner_->ensureVolume(volume); }
  Status removeVolume(const VolumeRef& volume) override { return inner_->removeVolume(volume); }
  Result<RuntimeStatus> ensure(const RuntimeSpec& spec) override;
  Status stop(const RuntimeRef& ref) override;
  Status remove(const RuntimeRef& ref) override;
  Result<RuntimeStatus> status(const RuntimeRef& ref) override;
  Result<std::vector<RuntimeRef>> list() override;
  Result<std::vector<RuntimeAnswer>> statusAll(const std::vector<RuntimeRef>& refs) override;
  std::vector<UnreachableNode> unreachableNodes() override { return inner_->unreachableNodes(); }
  Result<LogSlice> readLogSlice(const std::string& runtime_id, const std::optional<LogCursor>& from,
                                size_t max_bytes) override;

  Driver& inner() { return *inner_; }

 private:
  // The runtimes of the inner driver that make up instance `ref`, in start order: from its
  // handle, else (an instance whose handle the host never recorded) from the inner driver's
  // `listed` runtimes; `ref` itself for an instance of one application.
  static std::vector<RuntimeRef> partsOf(const RuntimeRef& ref, const std::vector<RuntimeRef>& listed);
  // The inner driver's list() when one of `refs` has no handle (partsOf needs it), else nothing.
  Result<std::vector<RuntimeRef>> listIfUnrecorded(const std::vector<RuntimeRef>& refs);
  // What list() holds of instance `ref`: its own runtime and "<id>.*" ones.
  Result<std::vector<RuntimeRef>> listedParts(const RuntimeRef& ref);
  Status endAll(const RuntimeRef& ref, bool remove);

  std::unique_ptr<Driver> inner_;
};

}  // namespace tide::drivers
