#pragma once
// Plays a node's agent against an AgentHub in-process (docs/agents.md): applies every
// document of its node as it comes (instances RUNNING or STOPPED as wanted, gone when
// dropped) and reports it, at least every 50 ms, until destroyed. An instance the test made
// exit() is reported EXITED for as long as the document lists it, as `tide agent` does with a
// workload that exited on its own.

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "drivers/agent/agent_hub.h"

namespace tide::testing {

class FakeAgent {
 public:
  FakeAgent(drivers::AgentHub& hub, std::string node)
      : hub_(hub), node_(std::move(node)), thread_([this] { run(); }) {}
  ~FakeAgent() {
    stopping_ = true;
    thread_.join();
  }
  FakeAgent(const FakeAgent&) = delete;
  FakeAgent& operator=(const FakeAgent&) = delete;

  // The workload of instance `id` exits with code 1 (from the next report on).
  void exit(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    exited_.insert(id);
  }

 private:
  void run() {
    std::optional<drivers::DocumentVersion> known;
    while (!stopping_) {
      drivers::DesiredDocument document =
          hub_.waitForDocument(node_, known, std::chrono::milliseconds(50), [this] { return stopping_.load(); });
      known = document.version;
      drivers::AgentReport report;
      report.agent_version = "test";
      report.epoch = document.version.epoch;
      report.applied_revision = document.version.revision;
      for (const drivers::DesiredInstance& instance : document.instances) {
        drivers::RuntimeStatus status;
        status.state =
            instance.want == drivers::kWantRunning ? model::WorkloadState::kRunning : model::WorkloadState::kStopped;
        if (exited(instance.spec.id)) {
          status.state = model::WorkloadState::kExited;
          status.exit_code = 1;
        }
        status.handle = "fake:" + instance.spec.id;
        status.ports = model::Json{{"tcp/80", 31080}};
        report.instances.push_back({instance.spec.id, status});
      }
      for (const drivers::VolumeSpec& volume : document.volumes) report.volumes.push_back({volume.id, true, ""});
      hub_.report(node_, report);
    }
  }

  bool exited(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return exited_.count(id) != 0;
  }

  drivers::AgentHub& hub_;
  std::string node_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::set<std::string> exited_;  // GUARDED_BY(mu_)
  std::thread thread_;            // last: it runs once the members above exist
};

}  // namespace tide::testing
