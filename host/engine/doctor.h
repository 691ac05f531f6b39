#pragma once
// `tide doctor` and the check `tide serve` runs at start (docs/architecture.md#tide-doctor): the
// ledger's invariants, and each driver's inventory against the ledger. Reads only: it never
// repairs, so what it finds is what was there.
//
// Thread-safety: examine() is as thread-safe as the Ledger and DriverSet it is given.

#include <string>
#include <vector>

#include "host/core/status.h"
#include "host/engine/driver_set.h"
#include "host/ledger/ledger.h"
#include "host/model/records.h"

namespace tide::engine {

// One thing the doctor found. `kind` is a ledger rule (InvariantViolation::rule) or
// one of the inventory's: "duplicate" (two live runtimes of one meta instance with no
// operation under way), "leak" (a live runtime the ledger has no live record of),
// "missing" (a RUNNING runtime instance its driver does not run), "driver" (a driver that
// could not be asked), "unchecked" (a node whose runtimes its driver cannot answer about now,
// such as a node agent that has not reported since the host started).
struct Finding {
  std::string kind;
  // A violation is unsafe and makes `tide doctor` exit non-zero; a warning is a disagreement
  // the control loop repairs itself (the observer marks a missing instance FAILED) or one the
  // doctor could not judge.
  bool violation = true;
  std::string subject;  // "ledger", "meta_instance/<name>", "runtime/<id>", "cluster/<name>", "node/<name>"
  std::string message;
};

struct DoctorReport {
  std::vector<Finding> findings;
  int clusters = 0;                // whose drivers were asked
  int driver_runtimes = 0;         // runtimes the drivers listed
  int live_runtime_instances = 0;  // ledger runtime instances that hold resources

  int violations() const;
  bool sound() const { return violations() == 0; }
};

// Runs every check. An error only when the ledger cannot be read; a driver that cannot be
// built or asked is a "driver" warning, and its cluster's inventory is not judged.
Result<DoctorReport> examine(ledger::Ledger& ledger, DriverSet& drivers);

// {"sound", "violations", "warnings", "checked": {...}, "findings": [{"kind", "severity",
// "subject", "message"}]}: what `tide doctor -o json` and GET /v1/doctor print.
model::Json doctorReportJson(const DoctorReport& report);

}  // namespace tide::engine
