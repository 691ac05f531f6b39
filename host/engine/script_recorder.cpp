#include "host/engine/script_recorder.h"

#include <algorithm>
#include <exception>

namespace tide::engine {

void LedgerScriptRecorder::recordScriptVersion(const model::ScriptVersion& version) {
  try {
    const std::string key = version.path + " " + version.sha256;
    auto earlier = ledger_.audit().listScriptVersions(version.path);
    if (earlier.isOk() && !earlier->empty()) {
      auto latest =
          std::max_element(earlier->begin(), earlier->end(), [](const auto& a, const auto& b) { return a.id < b.id; });
      if (latest->sha256 == version.sha256 && latest->status == version.status) {
        std::lock_guard<std::mutex> lock(mu_);
        repeated_.insert(key);
        return;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      repeated_.erase(key);
    }
    // Best effort: the script runs either way; it is recorded again when it next changes.
    (void)ledger_.audit().recordScriptVersion(version);
  } catch (const std::exception&) {}
}

void LedgerScriptRecorder::recordEvent(const std::string& kind, const std::string& subject, const Json& data) {
  try {
    const std::string key = data.value("path", "") + " " + data.value("sha256", "");
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (repeated_.count(key) > 0) return;
    }
    // Best effort: a script's load is reported by the registry too; the event only adds it to the audit.
    (void)ledger_.audit().appendEvent(kind, subject, data, "host");
  } catch (const std::exception&) {}
}

void LedgerScriptRecorder::keepText(const lua::ScriptFile& file) {
  try {
    // Best effort: the file on disk still holds the text; a later load keeps it again.
    (void)ledger_.audit().keepScriptText(file.sha256, file.text);
  } catch (const std::exception&) {}
}

std::optional<lua::ScriptFile> LedgerScriptRecorder::lastGoodVersion(const std::string& path) {
  try {
    auto versions = ledger_.audit().listScriptVersions(path);  // oldest first
    if (!versions.isOk()) return std::nullopt;
    const model::ScriptVersion* last = nullptr;  // the latest row that made a version run or stop
    for (const model::ScriptVersion& v : *versions) {
      if (v.status == "active" || v.status == "unloaded") last = &v;
    }
    if (!last || last->status != "active") return std::nullopt;
    auto text = ledger_.audit().scriptText(last->sha256);
    if (!text.isOk() || !text->has_value()) return std::nullopt;
    lua::ScriptFile file;
    file.path = path;
    file.text = std::move(**text);
    file.sha256 = last->sha256;
    file.loaded_at = last->loaded_at;
    return file;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace tide::engine
