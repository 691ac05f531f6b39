#include "host/engine/script_recorder.h"

#include <algorithm>
#include <exception>

namespace tide::engine {

void LedgerScriptRecorder::recordScriptVersion(const model::ScriptVersion& version) {
  try {
    auto earlier = ledger_.listScriptVersions(version.path);
    if (earlier.isOk() && !earlier->empty()) {
      auto latest =
          std::max_element(earlier->begin(), earlier->end(), [](const auto& a, const auto& b) { return a.id < b.id; });
      if (latest->sha256 == version.sha256 && latest->status == version.status) {
        std::lock_guard<std::mutex> lock(mu_);
        repeated_.insert(version.path + " " + version.sha256);
        return;
      }
    }
    (void)ledger_.recordScriptVersion(version);
  } catch (const std::exception&) {}
}

void LedgerScriptRecorder::recordEvent(const std::string& kind, const std::string& subject, const Json& data) {
  try {
    const std::string key = data.value("path", "") + " " + data.value("sha256", "");
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (repeated_.erase(key) > 0) return;
    }
    (void)ledger_.appendEvent(kind, subject, data, "host");
  } catch (const std::exception&) {}
}

}  // namespace tide::engine
