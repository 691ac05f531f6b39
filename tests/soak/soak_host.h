#pragma once
// The host a soak runs against (docs/architecture.md#the-soak): what `tide serve` builds —
// a file ledger, the shipped strategies, the control loop with real threads, the HTTP API on
// a loopback port with auth — assembled in the soak's own process, so that the referee can
// also read the drivers underneath the fault driver, which no API shows.
//
// Thread-safety: construct and destroy on one thread; ledger(), drivers() and the API are
// thread-safe.

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "host/api/server.h"
#include "host/core/clock.h"
#include "host/engine/driver_set.h"
#include "host/engine/engine.h"
#include "host/engine/script_recorder.h"
#include "host/ledger/ledger.h"
#include "host/lua/registry/script_registry.h"
#include "tests/soak/soak_checker.h"

namespace tide::soak {

// The token names the soak's actors use; deployments are added by the operator and decided
// by the approver (the four-eyes rule holds).
inline constexpr const char* kOperatorToken = "soak-operator-token-0123456789abcdef";
inline constexpr const char* kApproverToken = "soak-approver-token-0123456789abcdef";

struct SoakHostOptions {
  std::filesystem::path data_dir;  // must exist and be empty
  engine::EngineOptions engine;
};

class SoakHost {
 public:
  static Result<std::unique_ptr<SoakHost>> start(SoakHostOptions options);
  ~SoakHost();  // stop()s

  // Ends injected hangs, stops the control loop and the API. Idempotent.
  void stop();

  std::string url() const;
  ledger::Ledger& ledger() { return *ledger_; }
  engine::DriverSet& drivers() { return *drivers_; }

  // Every object of every built cluster's driver, read beneath the fault driver.
  Result<std::vector<InventoryObject>> inventory();
  // Removes every object the drivers underneath still hold: workload processes outlive a
  // host by design, and a soak leaves none behind.
  void removeEverything();

 private:
  SoakHost() = default;

  SystemClock clock_;
  std::unique_ptr<ledger::Ledger> ledger_;
  std::unique_ptr<engine::LedgerScriptRecorder> recorder_;
  std::unique_ptr<lua::ScriptRegistry> scripts_;
  std::unique_ptr<engine::DriverSet> drivers_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<api::ApiServer> server_;
};

// The driver beneath a fault driver (or `driver` itself when it is not one).
drivers::Driver& underneathFaults(drivers::Driver& driver);

}  // namespace tide::soak
