#pragma once
// Where the Lua host's script reloads are recorded: script_versions rows, the texts of active
// versions and script.* events in the ledger (docs/architecture.md#hot-reload).
//
// Thread-safety: as thread-safe as the Ledger it wraps (fully). The caller owns the ledger,
// which must outlive the recorder.

#include <mutex>
#include <set>
#include <string>

#include "host/ledger/ledger.h"
#include "host/lua/registry/script_registry.h"

namespace tide::engine {

using Json = nlohmann::json;

// script_versions rows, script_texts and script.* / alarm.script events. A ledger error is
// dropped (the reload itself already happened; the registry's list() still shows it); never
// throws.
// A restart reloads every file; a version whose path's latest row already says the same
// (same sha256, same status) is not recorded again, nor are its events, so the ledger holds
// changes only and a restart leaves the event log as it was.
class LedgerScriptRecorder final : public lua::ScriptRecorder {
 public:
  explicit LedgerScriptRecorder(ledger::Ledger& ledger) : ledger_(ledger) {}
  void recordScriptVersion(const model::ScriptVersion& version) override;
  void recordEvent(const std::string& kind, const std::string& subject, const Json& data) override;
  void keepText(const lua::ScriptFile& file) override;
  std::optional<lua::ScriptFile> lastGoodVersion(const std::string& path) override;

 private:
  ledger::Ledger& ledger_;
  std::mutex mu_;
  // "path sha256" of versions skipped as already recorded: their events are skipped too,
  // until a version of that sha256 is recorded anew.
  std::set<std::string> repeated_;
};

}  // namespace tide::engine
