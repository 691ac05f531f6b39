#pragma once
// The scripts the host runs, loaded from disk and hot-reloaded (docs/architecture.md#the-lua-host).
//
// Directories and kinds:
//   <policies_dir>/*.lua         policy
//   <scripts_dir>/rollout/*.lua  strategy
//   <scripts_dir>/hooks/*.lua    hook
//   <scripts_dir>/lib/*.lua      lib (tide.lib.<file stem>)
//
// A reload looks at every file. An unchanged file (same sha256 as its active version) is
// left alone. A new or changed file is validated in a scratch state: it must compile as
// text, define no globals, return a table of its kind's shape (script_loader.h), not reuse
// another active file's name, and pass its own tests (a strategy's params declaration
// must also be valid, strategy_params.h). A changed lib must also keep every
// active script loading and passing its tests. A version that passes replaces the old one;
// one that fails leaves the old one active. With no old one in memory (a new file, or the
// first reload after a start) the registry asks the recorder for the file's last good
// version, kept in the ledger, and runs that if it still validates. With none, nothing of
// the file runs: it is published in ScriptSet::failed (so policies fail closed) and an
// `alarm.script` event is raised once per failing content. A deleted file is unloaded.
// Every attempt is reported to the ScriptRecorder and visible in list().
// When anything changed, a new ScriptSet is published atomically (RCU): evaluators see
// either the old or the new set, never a mix.
//
// Thread-safety: all methods are thread-safe. Reloads (explicit or from the watcher
// thread) are serialised. current() is cheap and never blocks on a reload in progress.

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/script_set.h"
#include "host/model/records.h"

namespace tide::lua {

class DirectoryWatcher;

// Where reload attempts go; the ledger implements it (script_versions rows and events).
// Called on the reloading thread (possibly the watcher's), one call at a time. Must not
// throw.
class ScriptRecorder {
 public:
  virtual ~ScriptRecorder() = default;
  // status: active (this version now runs), failed (this version was refused; error set),
  // superseded (a newer version replaced this one), unloaded (the file was deleted).
  virtual void recordScriptVersion(const model::ScriptVersion& version) = 0;
  // kind: script.loaded | script.failed | script.unloaded | alarm.script; subject
  // "script/<path>"; data names the version's "path" and "sha256".
  virtual void recordEvent(const std::string& kind, const std::string& subject, const Json& data) = 0;
  // Keeps the text of `file`, a version becoming active, for lastGoodVersion().
  virtual void keepText(const ScriptFile& file) = 0;
  // The last good version of `path`: the one recorded active most recently, unless the file
  // was unloaded since. nullopt when there is none or its text was not kept. Its name and
  // level are not known until it loads.
  virtual std::optional<ScriptFile> lastGoodVersion(const std::string& path) = 0;
};

class DiscardingScriptRecorder final : public ScriptRecorder {
 public:
  void recordScriptVersion(const model::ScriptVersion&) override {}
  void recordEvent(const std::string&, const std::string&, const Json&) override {}
  void keepText(const ScriptFile&) override {}
  std::optional<ScriptFile> lastGoodVersion(const std::string&) override { return std::nullopt; }
};

// One file as GET /v1/scripts shows it.
struct ScriptStatus {
  // active: the file's content is the version that runs; stale: an older version runs
  // because the file's current content failed (after a restart, the last good version kept
  // in the ledger); failed: nothing runs (a failed policy votes as failing).
  std::string status;
  std::string path;
  std::string kind;
  std::string name;           // of the active version
  std::string active_sha256;  // empty when nothing is active
  std::string loaded_at;      // when the active version was loaded
  std::string last_error;     // of the latest failed attempt at the file's current content
  std::string last_error_class;
  std::string failed_sha256;
  std::string last_attempt_at;
};
void to_json(Json& j, const ScriptStatus& status);

struct ReloadSummary {
  uint64_t version = 0;  // the set published after this reload
  int loaded = 0;        // new or changed versions now active
  int unchanged = 0;
  int failed = 0;  // files whose current content is refused
  int unloaded = 0;
  // Of the failed files, those with nothing in memory whose last good version, kept in the
  // ledger, runs instead (after a restart).
  int restored = 0;
  std::vector<std::string> errors;  // "path: message", one per failed file; a restored one says so
};

struct ScriptRegistryOptions {
  std::filesystem::path policies_dir = "policies";
  std::filesystem::path scripts_dir = "scripts";
  LuaLimits limits;  // for validation and test runs
  // The deadline per call while a candidate loads and its own `tests` run (at least limits.deadline):
  // validation is off the hot path, and a busy host must not refuse a good script because one
  // of its test cases took longer than a production decision may.
  std::chrono::milliseconds validation_deadline{500};
  std::chrono::milliseconds debounce{200};
};

class ScriptRegistry final : public ScriptSetProvider {
 public:
  // `recorder` and `clock` must outlive the registry. Nothing is loaded until reloadAll().
  ScriptRegistry(ScriptRegistryOptions options, ScriptRecorder& recorder, const Clock& clock);
  ~ScriptRegistry() override;  // stops the watcher

  ReloadSummary reloadAll();
  std::shared_ptr<const ScriptSet> current() const override;
  // Every file seen in the directories, by path.
  std::vector<ScriptStatus> list() const;
  // For /metrics (docs/api.md#metrics): tide_script_load_errors_total{script}, the versions of
  // each file refused (a reload that meets the same refused content again does not count it
  // again; a changed lib that makes it be tried again does), and tide_script_status{script,status},
  // 1 for each file with its status (active, stale, failed). Costs a walk over the files.
  std::string metricsText() const;

  // Reloads on changes (debounced) from a watcher thread until stopWatching().
  Status startWatching();
  void stopWatching();

 private:
  struct Candidate;
  struct Validation;
  struct ReloadPass;
  Validation validate(const ScriptFile& candidate, const ScriptSet& context, bool check_duplicates) const;
  Validation validateLib(const ScriptFile& candidate, const ScriptSet& context) const;
  std::vector<Candidate> scan(ReloadSummary& summary) const;

  // The steps of reloadAll(), in order. REQUIRES: reload_mu_ is held.
  // Unloads the active files no candidate has any more, and forgets their statuses.
  void unloadMissing(const std::vector<Candidate>& candidates, ReloadPass& pass);
  // Leaves an unchanged file as it is, or validates it and activates or refuses it.
  void reloadFile(const Candidate& candidate, ReloadPass& pass);
  // Shows `active` as the version that runs, with no error.
  void keepActive(const ScriptFile& active);
  // True (and counted as failed) when this content failed before and no lib changed since.
  bool failedBefore(const ScriptFile& file, ReloadPass& pass);
  void activate(const ScriptFile& file, const Validation& v, const std::string& active_sha,
                const std::string& attempted_at, ReloadPass& pass);
  // Puts the recorder's last good version of `failed`'s path back in `pass`, if it still
  // validates; its sha256, or "" when there is none.
  std::string restoreLastGood(const ScriptFile& failed, ReloadPass& pass);
  // Records `file` as refused; `running_sha` is the version of its path that runs instead
  // ("" for none: the file goes to ScriptSet::failed).
  void refuse(const ScriptFile& file, const Validation& v, const std::string& running_sha,
              const std::string& attempted_at, ReloadPass& pass);
  // Publishes `file` in ScriptSet::failed, raising alarm.script when its content is new there.
  void markFailed(const ScriptFile& file, const Validation& v, ReloadPass& pass);
  // Raises alarm.cleared for a script markFailed raised alarm.script for: it loads again
  // (`why`), runs a good version, or is gone.
  void clearAlarm(const std::string& path, ScriptKind kind, const std::string& why);
  void recordVersion(const ScriptFile& file, const std::string& sha256, const char* status, const std::string& error,
                     const std::string& at) const;
  std::vector<std::pair<std::filesystem::path, ScriptKind>> directories() const;

  const ScriptRegistryOptions options_;
  ScriptRecorder& recorder_;
  const Clock& clock_;

  std::mutex reload_mu_;   // serialises reloads
  mutable std::mutex mu_;  // guards current_ and statuses_
  std::shared_ptr<const ScriptSet> current_;
  std::map<std::string, ScriptStatus> statuses_;  // by path
  std::map<std::string, uint64_t> load_errors_;   // by path; never forgotten, as a counter must not go down
  std::unique_ptr<DirectoryWatcher> watcher_;
  std::mutex watcher_mu_;
};

}  // namespace tide::lua
