#include "host/lua/registry/script_registry.h"

#include <algorithm>
#include <set>

#include "host/core/prometheus_text.h"
#include "host/core/sha256.h"
#include "host/lua/policy/bindings_policy.h"
#include "host/lua/registry/script_tests.h"
#include "host/lua/runtime/directory_watcher.h"
#include "host/lua/runtime/script_loader.h"
#include "host/lua/strategy/bindings_strategy.h"

namespace tide::lua {

struct ScriptRegistry::Candidate {
  ScriptFile file;
  std::filesystem::file_time_type mtime;
};

struct ScriptRegistry::Validation {
  LuaError error;  // ok: the candidate may become active
  std::string name;
  std::string level;
};

// One reloadAll(): the set it builds and what happened on the way.
struct ScriptRegistry::ReloadPass {
  std::string now;  // loaded_at of what this pass activates, at of what it records
  ScriptSet next;   // to publish; starts as the current set
  ReloadSummary summary;
  bool changed = false;       // next differs from the current set
  bool libs_changed = false;  // a lib was activated: content that failed before may pass now
};

void to_json(Json& j, const ScriptStatus& s) {
  j = Json{{"path", s.path},
           {"kind", s.kind},
           {"name", s.name},
           {"status", s.status},
           {"active_sha256", s.active_sha256},
           {"loaded_at", s.loaded_at},
           {"last_error", s.last_error},
           {"last_error_class", s.last_error_class},
           {"failed_sha256", s.failed_sha256},
           {"last_attempt_at", s.last_attempt_at}};
}

ScriptRegistry::ScriptRegistry(ScriptRegistryOptions options, ScriptRecorder& recorder, const Clock& clock)
    : options_(std::move(options)), recorder_(recorder), clock_(clock), current_(std::make_shared<const ScriptSet>()) {}

ScriptRegistry::~ScriptRegistry() { stopWatching(); }

std::shared_ptr<const ScriptSet> ScriptRegistry::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

std::vector<ScriptStatus> ScriptRegistry::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ScriptStatus> out;
  for (const auto& [path, status] : statuses_) out.push_back(status);
  return out;
}

std::string ScriptRegistry::metricsText() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out =
      "# HELP tide_script_load_errors_total Versions of a script file that failed to load (compile, shape, params or "
      "its own tests), by file.\n"
      "# TYPE tide_script_load_errors_total counter\n";
  for (const auto& [path, n] : load_errors_) {
    out += "tide_script_load_errors_total{script=\"" + prometheusLabelValue(path) + "\"} " + std::to_string(n) + "\n";
  }
  out +=
      "# HELP tide_script_status 1 for each script file, labelled with its status: active, stale (its current "
      "content failed; an older version runs) or failed (nothing of it runs).\n"
      "# TYPE tide_script_status gauge\n";
  for (const auto& [path, status] : statuses_) {
    if (status.status.empty()) continue;
    out += "tide_script_status{script=\"" + prometheusLabelValue(path) + "\",status=\"" + status.status + "\"} 1\n";
  }
  return out;
}

std::vector<std::pair<std::filesystem::path, ScriptKind>> ScriptRegistry::directories() const {
  return {{options_.policies_dir, ScriptKind::kPolicy},
          {options_.scripts_dir / "rollout", ScriptKind::kStrategy},
          {options_.scripts_dir / "hooks", ScriptKind::kHook},
          {options_.scripts_dir / "lib", ScriptKind::kLib}};
}

std::vector<ScriptRegistry::Candidate> ScriptRegistry::scan(ReloadSummary& summary) const {
  std::vector<Candidate> out;
  for (const auto& [dir, kind] : directories()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) continue;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      std::error_code entry_ec;
      if (!entry.is_regular_file(entry_ec) || entry.path().extension() != ".lua") continue;
      const std::string display = (dir / entry.path().filename()).lexically_normal().string();
      auto file = readScriptFile(entry.path(), display, kind);
      if (!file.isOk()) {
        summary.errors.push_back(display + ": " + file.status().message());
        continue;
      }
      out.push_back({std::move(file).value(), entry.last_write_time(entry_ec)});
    }
  }
  // Libs first, so scripts validate against the libs of this reload; then oldest first,
  // so of two files declaring one name the newer is the one refused.
  std::sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) {
    const bool a_lib = a.file.kind == ScriptKind::kLib;
    const bool b_lib = b.file.kind == ScriptKind::kLib;
    if (a_lib != b_lib) return a_lib;
    if (a.mtime != b.mtime) return a.mtime < b.mtime;
    return a.file.path < b.file.path;
  });
  return out;
}

namespace {

// The error for a script whose tests did not load or did not all pass, or none.
LuaError testFailures(const std::string& path, const Result<std::vector<CaseResult>>& results) {
  if (!results.isOk()) return {LuaErrorClass::kLoad, results.status().message()};
  std::string failures;
  for (const CaseResult& r : *results) {
    if (r.passed) continue;
    failures += failures.empty() ? "" : "; ";
    failures += "test '" + r.name + "' expected " + r.expected + ", got " + r.actual;
  }
  if (failures.empty()) return {};
  return {LuaErrorClass::kRuntime, path + ": " + failures};
}

}  // namespace

ScriptRegistry::Validation ScriptRegistry::validate(const ScriptFile& candidate, const ScriptSet& context,
                                                    bool check_duplicates) const {
  Validation v;
  auto trial = std::make_shared<ScriptSet>(context);
  trial->files[candidate.path] = candidate;
  const ScriptFile& file = trial->files[candidate.path];

  LuaLimits limits = options_.limits;
  limits.deadline = std::max(limits.deadline, options_.validation_deadline);
  LuaStateOptions state_options;
  state_options.limits = limits;
  auto state = LuaState::create(state_options);
  if (!state.isOk()) {
    v.error = {LuaErrorClass::kMemory, state.status().message()};
    return v;
  }
  if (LuaError e = prepareScriptState(**state, trial.get(), {policyVerbs(), strategyVerbs()}); !e.ok()) {
    v.error = e;
    return v;
  }
  LoadedScript loaded;
  if (LuaError e = loadScript(**state, file, &loaded); !e.ok()) {
    v.error = e;
    return v;
  }
  v.name = loaded.name;
  v.level = loaded.level;
  if (check_duplicates && file.kind != ScriptKind::kLib) {
    for (const auto& [path, other] : context.files) {
      if (path != file.path && other.kind == file.kind && other.name == loaded.name) {
        v.error = {LuaErrorClass::kLoad, file.path + ": duplicate " + scriptKindName(file.kind) + " name '" +
                                             loaded.name + "' (already defined by " + path + ")"};
        return v;
      }
    }
  }
  ScriptFile named = file;
  named.name = loaded.name;
  named.level = loaded.level;
  // A strategy also when it has no tests: loading it this way checks its params declaration.
  if ((file.kind == ScriptKind::kPolicy && loaded.has_tests) || file.kind == ScriptKind::kStrategy) {
    v.error = testFailures(file.path, runScriptTests(named, *trial, limits));
  }
  return v;
}

ScriptRegistry::Validation ScriptRegistry::validateLib(const ScriptFile& candidate, const ScriptSet& context) const {
  Validation v = validate(candidate, context, false);
  if (!v.error.ok()) return v;
  ScriptSet trial = context;
  trial.files[candidate.path] = candidate;
  for (const auto& [path, file] : trial.files) {
    if (file.kind == ScriptKind::kLib) continue;
    Validation dependent = validate(file, trial, false);
    if (!dependent.error.ok()) {
      v.error = {dependent.error.error_class, candidate.path + " would break " + path + ": " + dependent.error.message};
      return v;
    }
  }
  return v;
}

void ScriptRegistry::recordVersion(const ScriptFile& file, const std::string& sha256, const char* status,
                                   const std::string& error, const std::string& at) const {
  model::ScriptVersion version;
  version.path = file.path;
  version.kind = scriptKindName(file.kind);
  version.sha256 = sha256;
  version.loaded_at = at;
  version.status = status;
  version.error = error;
  recorder_.recordScriptVersion(version);
}

void ScriptRegistry::unloadMissing(const std::vector<Candidate>& candidates, ReloadPass& pass) {
  std::set<std::string> present;
  for (const Candidate& c : candidates) present.insert(c.file.path);
  for (auto it = pass.next.files.begin(); it != pass.next.files.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    const ScriptFile& gone = it->second;
    recordVersion(gone, gone.sha256, "unloaded", "", pass.now);
    recorder_.recordEvent("script.unloaded", "script/" + gone.path,
                          {{"path", gone.path}, {"kind", scriptKindName(gone.kind)}, {"sha256", gone.sha256}});
    ++pass.summary.unloaded;
    pass.changed = true;
    it = pass.next.files.erase(it);
  }
  for (auto it = pass.next.failed.begin(); it != pass.next.failed.end();) {
    if (present.count(it->first)) {
      ++it;
      continue;
    }
    clearAlarm(it->second.path, it->second.kind, "is gone");
    it = pass.next.failed.erase(it);
    pass.changed = true;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = statuses_.begin(); it != statuses_.end();) {
    it = present.count(it->first) ? std::next(it) : statuses_.erase(it);
  }
}

void ScriptRegistry::reloadFile(const Candidate& candidate, ReloadPass& pass) {
  const ScriptFile& file = candidate.file;
  auto active = pass.next.files.find(file.path);
  const std::string active_sha = active == pass.next.files.end() ? "" : active->second.sha256;
  if (active_sha == file.sha256) {
    ++pass.summary.unchanged;
    keepActive(active->second);
    return;
  }
  if (failedBefore(file, pass)) return;
  const Validation v = file.kind == ScriptKind::kLib ? validateLib(file, pass.next) : validate(file, pass.next, true);
  const std::string attempted_at = formatTimestamp(clock_.now());
  if (v.error.ok()) {
    activate(file, v, active_sha, attempted_at, pass);
    return;
  }
  const std::string running_sha = active_sha.empty() ? restoreLastGood(file, pass) : active_sha;
  refuse(file, v, running_sha, attempted_at, pass);
  if (active_sha.empty() && !running_sha.empty()) {
    ++pass.summary.restored;
    pass.summary.errors.back() +=
        " (its last good version " + running_sha.substr(0, 12) + ", kept in the ledger, runs instead)";
  }
}

void ScriptRegistry::keepActive(const ScriptFile& active) {
  std::lock_guard<std::mutex> lock(mu_);
  ScriptStatus& s = statuses_[active.path];
  s.path = active.path;
  s.kind = scriptKindName(active.kind);
  s.name = active.name;
  s.status = "active";
  s.active_sha256 = active.sha256;
  s.loaded_at = active.loaded_at;
  s.last_error.clear();
  s.last_error_class.clear();
  s.failed_sha256.clear();
}

bool ScriptRegistry::failedBefore(const ScriptFile& file, ReloadPass& pass) {
  if (pass.libs_changed) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto st = statuses_.find(file.path);
  if (st == statuses_.end() || st->second.failed_sha256 != file.sha256) return false;
  ++pass.summary.failed;  // the same content failed before; don't report it again
  pass.summary.errors.push_back(st->second.last_error);
  return true;
}

void ScriptRegistry::activate(const ScriptFile& file, const Validation& v, const std::string& active_sha,
                              const std::string& attempted_at, ReloadPass& pass) {
  ScriptFile accepted = file;
  accepted.name = v.name;
  accepted.level = v.level;
  accepted.loaded_at = pass.now;
  recordVersion(accepted, accepted.sha256, "active", "", pass.now);
  recorder_.keepText(accepted);
  if (!active_sha.empty()) recordVersion(accepted, active_sha, "superseded", "", pass.now);
  recorder_.recordEvent("script.loaded", "script/" + file.path,
                        {{"path", file.path},
                         {"kind", scriptKindName(accepted.kind)},
                         {"name", accepted.name},
                         {"sha256", accepted.sha256},
                         {"previous_sha256", active_sha}});
  {
    std::lock_guard<std::mutex> lock(mu_);
    ScriptStatus& s = statuses_[file.path];
    s = ScriptStatus{};
    s.path = file.path;
    s.kind = scriptKindName(accepted.kind);
    s.name = accepted.name;
    s.status = "active";
    s.active_sha256 = accepted.sha256;
    s.loaded_at = pass.now;
    s.last_attempt_at = attempted_at;
  }
  pass.libs_changed = pass.libs_changed || accepted.kind == ScriptKind::kLib;
  if (pass.next.failed.erase(file.path) > 0) clearAlarm(file.path, file.kind, "loads again");
  pass.next.files[file.path] = std::move(accepted);
  ++pass.summary.loaded;
  pass.changed = true;
}

std::string ScriptRegistry::restoreLastGood(const ScriptFile& failed, ReloadPass& pass) {
  std::optional<ScriptFile> kept = recorder_.lastGoodVersion(failed.path);
  // The same content failing now (a lib changed under it), or a text that is not what its
  // sha256 says, is nothing to go back to.
  if (!kept || kept->sha256 == failed.sha256 || sha256Hex(kept->text) != kept->sha256) return "";
  ScriptFile good = failed;  // the path and kind (and a lib's name) are the file's
  good.text = std::move(kept->text);
  good.sha256 = kept->sha256;
  const Validation v = good.kind == ScriptKind::kLib ? validateLib(good, pass.next) : validate(good, pass.next, true);
  if (!v.error.ok()) return "";
  good.name = v.name;
  good.level = v.level;
  good.loaded_at = kept->loaded_at;
  keepActive(good);
  pass.libs_changed = pass.libs_changed || good.kind == ScriptKind::kLib;
  if (pass.next.failed.erase(good.path) > 0) clearAlarm(good.path, good.kind, "runs its last good version");
  pass.next.files[good.path] = good;
  pass.changed = true;
  return good.sha256;
}

void ScriptRegistry::refuse(const ScriptFile& file, const Validation& v, const std::string& running_sha,
                            const std::string& attempted_at, ReloadPass& pass) {
  const LuaError& error = v.error;
  recordVersion(file, file.sha256, "failed", error.message, pass.now);
  recorder_.recordEvent("script.failed", "script/" + file.path,
                        {{"path", file.path},
                         {"kind", scriptKindName(file.kind)},
                         {"sha256", file.sha256},
                         {"error", error.message},
                         {"error_class", errorClassName(error.error_class)},
                         {"active_sha256", running_sha}});
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++load_errors_[file.path];
    ScriptStatus& s = statuses_[file.path];
    s.path = file.path;
    s.kind = scriptKindName(file.kind);
    s.status = running_sha.empty() ? "failed" : "stale";
    s.last_error = error.message;
    s.last_error_class = errorClassName(error.error_class);
    s.failed_sha256 = file.sha256;
    s.last_attempt_at = attempted_at;
  }
  if (running_sha.empty()) markFailed(file, v, pass);
  ++pass.summary.failed;
  pass.summary.errors.push_back(error.message);
}

void ScriptRegistry::clearAlarm(const std::string& path, ScriptKind kind, const std::string& why) {
  recorder_.recordEvent("alarm.cleared", "script/" + path,
                        {{"path", path},
                         {"kind", scriptKindName(kind)},
                         {"message", path + " " + why + ": it no longer counts as a failing script"}});
}

void ScriptRegistry::markFailed(const ScriptFile& file, const Validation& v, ReloadPass& pass) {
  FailedScript failed{file.path, file.kind, v.name.empty() ? file.name : v.name, v.level, file.sha256, v.error.message};
  auto [it, fresh] = pass.next.failed.try_emplace(file.path, failed);
  const bool new_content = fresh || it->second.sha256 != file.sha256;
  it->second = std::move(failed);
  pass.changed = true;
  if (!new_content) return;  // the same content failing again after a lib changed
  recorder_.recordEvent("alarm.script", "script/" + file.path,
                        {{"path", file.path},
                         {"kind", scriptKindName(file.kind)},
                         {"sha256", file.sha256},
                         {"error", v.error.message},
                         {"error_class", errorClassName(v.error.error_class)},
                         {"message", file.path + " failed validation and no earlier version of it is good"}});
}

ReloadSummary ScriptRegistry::reloadAll() {
  std::lock_guard<std::mutex> reload_lock(reload_mu_);
  const std::shared_ptr<const ScriptSet> old = current();
  ReloadPass pass;
  pass.next = *old;
  pass.now = formatTimestamp(clock_.now());
  const std::vector<Candidate> candidates = scan(pass.summary);
  unloadMissing(candidates, pass);
  for (const Candidate& c : candidates) reloadFile(c, pass);
  if (pass.changed) {
    pass.next.version = old->version + 1;
    auto published = std::make_shared<const ScriptSet>(std::move(pass.next));
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(published);
  }
  pass.summary.version = current()->version;
  return pass.summary;
}

Status ScriptRegistry::startWatching() {
  std::lock_guard<std::mutex> lock(watcher_mu_);
  if (watcher_) return Status::ok();
  std::vector<std::filesystem::path> dirs;
  for (const auto& [dir, kind] : directories()) dirs.push_back(dir);
  auto watcher = std::make_unique<DirectoryWatcher>(dirs, options_.debounce, [this] { reloadAll(); });
  TIDE_RETURN_IF_ERROR(watcher->start());
  watcher_ = std::move(watcher);
  return Status::ok();
}

void ScriptRegistry::stopWatching() {
  std::unique_ptr<DirectoryWatcher> watcher;
  {
    std::lock_guard<std::mutex> lock(watcher_mu_);
    watcher = std::move(watcher_);
  }
  if (watcher) watcher->stop();
}

}  // namespace tide::lua
