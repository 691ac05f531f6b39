#pragma once
// A transport that plays the host for agent tests: it serves one document (long poll
// included), records every report and log the agent posts, and answers reports with the
// document's version.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/agent/agent.h"

namespace tide::testing {

class FakeHost final : public agent::AgentTransport {
 public:
  using Json = model::Json;

  // Every call fails kUnavailable "cannot reach the host" while unreachable.
  void setReachable(bool reachable) {
    std::lock_guard<std::mutex> lock(mu_);
    reachable_ = reachable;
  }

  void serve(Json document) {
    std::lock_guard<std::mutex> lock(mu_);
    document_ = std::move(document);
    changed_.notify_all();
  }

  Result<Json> fetchDesired(const std::optional<agent::DocumentVersion>& known,
                            std::chrono::seconds wait) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++polls_;
    if (!reachable_) return Status::unavailable("cannot reach the host");
    const auto differs = [&] {
      return !document_.is_null() && (!known || document_["epoch"].get<int64_t>() != known->epoch ||
                                       document_["revision"].get<int64_t>() != known->revision);
    };
    changed_.wait_for(lock, wait, [&] { return interrupted_ || differs(); });
    if (interrupted_) return Status::unavailable("interrupted");
    if (document_.is_null()) return Status::unavailable("no document yet");
    return document_;
  }

  Result<Json> report(const Json& report) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!reachable_) return Status::unavailable("cannot reach the host");
    reports_.push_back(report);
    if (document_.is_null()) return Json{{"epoch", 0}, {"revision", 0}};
    return Json{{"epoch", document_["epoch"]}, {"revision", document_["revision"]}};
  }

  Status postLog(const std::string& id, const std::string& text) override {
    std::lock_guard<std::mutex> lock(mu_);
    logs_.emplace_back(id, text);
    return Status::ok();
  }

  void interrupt() override {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
    changed_.notify_all();
  }

  std::vector<Json> reports() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reports_;
  }
  std::vector<std::pair<std::string, std::string>> logs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return logs_;
  }
  int polls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return polls_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable changed_;
  Json document_;
  bool interrupted_ = false;
  bool reachable_ = true;
  int polls_ = 0;
  std::vector<Json> reports_;
  std::vector<std::pair<std::string, std::string>> logs_;
};

}  // namespace tide::testing
