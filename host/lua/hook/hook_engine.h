#pragma once
// Runtime hooks (docs/architecture.md#runtime-hooks): scripts/hooks/*.lua reacting to what the host does.
//
// A hook file returns { name = "...", on = { [event] = function(arg, ctx) ... end, ... } }
// with events among hookEvents() (script_loader.h checks the shape). Hooks run in name
// order, each handler call under the LuaLimits of its own (deadline, memory cap), with the
// read-only ctx of bindings_hook.h.
//
// before(op) runs every operation.before handler. A handler returns nil (or {}) to let the
// operation run, { veto = "reason" } to hold it, or { delay = seconds, reason = "..." } to
// postpone it. The first veto wins and no later hook is asked; otherwise the largest delay
// wins. A hook that raises, times out, runs out of memory or returns anything else is a
// failure, and fails closed: it vetoes with "operation.before failed: <error>" as its
// reason, unless its file declares `fail_open = true` (then the failure is only reported and
// the other hooks decide). A hook that did not load vetoes too (it cannot say it fails open),
// and so do a hook file that failed validation with no earlier good version
// (ScriptSet::failed: it cannot say which events it guards) and a Lua state that cannot be
// built while there are hooks.
//
// notify(event, arg) runs the handlers of one of the other four events; what they return
// is ignored. Both report per-hook failures for the caller to record.
//
// Thread-safety: none. Each calling thread owns its HookEngine (or guards it); the
// ScriptSetProvider is shared. When the provider publishes a new version the engine
// rebuilds its Lua state on the next call (hot reload).

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/script_set.h"
#include "host/lua/runtime/versioned_build.h"

namespace tide::lua {

struct HookFailure {
  std::string hook;   // the declared name (the path when the file did not load)
  std::string event;  // "operation.before", ...
  std::string error;  // "scripts/hooks/x.lua:3: attempt to index a nil value"
  LuaErrorClass error_class = LuaErrorClass::kRuntime;
  // operation.before only: the hook declares fail_open, so this failure let the operation go
  // on instead of vetoing it.
  bool failed_open = false;
};

struct HookVerdict {
  enum class Kind { kProceed, kVeto, kDelay };
  Kind kind = Kind::kProceed;
  std::string hook;          // the hook that vetoed or asked for the delay ("host": no state)
  std::string reason;        // veto's reason (a failure's, when it failed closed); delay's (possibly empty) reason
  double delay_seconds = 0;  // kDelay: > 0
  std::vector<HookFailure> failures;
};

struct HookEngineOptions {
  LuaLimits limits;
  std::filesystem::path output_dir;  // ctx.emit_file's directory; empty: emit_file raises
  LogSink log;                       // ctx.log.*, tide.log.* and print; empty: discarded
};

// A veto or delay reason longer than this is cut.
inline constexpr size_t kMaxHookReasonBytes = 1024;

class HookEngine {
 public:
  // `scripts` and `clock` must outlive the engine; `clock` is ctx.now().
  HookEngine(const ScriptSetProvider& scripts, const Clock& clock, HookEngineOptions options);
  ~HookEngine();
  HookEngine(const HookEngine&) = delete;
  HookEngine& operator=(const HookEngine&) = delete;

  // Runs operation.before handlers on `op` (the operation as JSON).
  HookVerdict before(const Json& op);
  // Runs the handlers of `event` (operation.after, instance.state, deployment.state, route)
  // on `arg`. An unknown event is reported as one failure naming it.
  std::vector<HookFailure> notify(const std::string& event, const Json& arg);

  // The ScriptSet version the engine's state was built from (0 before the first call).
  uint64_t loadedVersion() const;

 private:
  struct Hook {
    const ScriptFile* file = nullptr;
    int ref = -2;  // LUA_NOREF: the script's table; -2 with load_error set when it did not load
    MemoryBudget budget = kStateBudget;  // the hook's own (LoadedScript::budget)
    std::set<std::string> events;
    bool fail_open = false;  // LoadedScript::fail_open
    LuaError load_error;
  };

  // The hooks of one ScriptSet loaded in one Lua state. Members are destroyed in reverse
  // order: the state before the set its libs point into.
  struct Loaded {
    std::shared_ptr<const ScriptSet> set;
    std::unique_ptr<LuaState> state;
    std::vector<Hook> hooks;  // by name
    int ctx_ref = -2;
  };

  // A Lua state for `set` with its hooks loaded; a hook that does not load is kept with
  // its load_error. Errors only when the state itself cannot be built.
  Result<std::unique_ptr<Loaded>> load(std::shared_ptr<const ScriptSet> set) const;
  // The hooks of the provider's current set, loaded anew when it has another version; or
  // why they could not be.
  Result<Loaded*> refresh();
  // Calls the handler of `event` in `hook` with `arg` and ctx; the handler's first result
  // is converted to JSON into `result`.
  static LuaError call(Loaded& loaded, const Hook& hook, const std::string& event, const Json& arg, Json* result);

  const ScriptSetProvider& scripts_;
  const Clock& clock_;
  HookEngineOptions options_;
  VersionedBuild<Loaded> loaded_;
};

}  // namespace tide::lua
