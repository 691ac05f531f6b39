#pragma once
// Loading script files into a sandboxed state — one way for production evaluators, reload
// validation and `tide scripts test`, so what passes validation is what runs.
//
// A script file is a text chunk that returns a table and defines no globals. It runs in
// the environment of its kind (the sandbox allow-list plus the kind's verbs), and its
// table must have the kind's shape:
//   policy    name, decide(op, ctx); optional level (advisory|soft|hard, default hard),
//             applies(op), tests, description
//   strategy  name, reconcile(r); optional params, tests, description
//   hook      name, on = { ["operation.before"] = fn, ... }; optional fail_open (boolean),
//             description (no tests)
//   lib       any value; reached as tide.lib.<file stem>

#include <filesystem>
#include <span>
#include <string>

#include "host/core/status.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/sandbox.h"
#include "host/lua/runtime/script_set.h"

namespace tide::lua {

// The verbs each kind's scripts see beyond the sandbox. The runtime defines none of them:
// policy/ and strategy/ own theirs (policyVerbs(), strategyVerbs()) and whoever prepares a
// state passes them in, so the runtime never includes the areas built on it. A kind left
// empty sees no verbs; hooks and libs have none.
struct ScriptVerbs {
  std::span<const Verb> policy;
  std::span<const Verb> strategy;

  std::span<const Verb> of(ScriptKind kind) const;
};

// The events a hook's `on` table may name.
std::span<const char* const> hookEvents();

// Reads `file` as a ScriptFile of `kind` shown as `display_path` (sha256 filled in; name
// and level are known only after loading).
Result<ScriptFile> readScriptFile(const std::filesystem::path& file, const std::string& display_path, ScriptKind kind);

// Builds one environment per kind in `state`, with that kind's `verbs`, and points tide.lib
// at the libs of `set`, which must outlive the state's use of it. Call once, before loadScript.
LuaError prepareScriptState(LuaState& state, const ScriptSet* set, const ScriptVerbs& verbs);

// What a loaded script declared.
struct LoadedScript {
  int ref = -2;  // LUA_NOREF; the script's table in the registry
  std::string name;
  std::string level;  // policies: advisory | soft | hard
  bool has_tests = false;
  bool fail_open = false;  // hooks: a failing operation.before lets the operation run
  // What the script's top level and calls are charged to (its own memory budget).
  MemoryBudget budget = kStateBudget;
};

// Compiles and runs `file` in its kind's environment and checks the shape of its table.
// Shape errors are load errors; errors while the chunk runs are runtime errors. For a lib,
// loads it through tide.lib (so `set` must contain it), charged to the state's budget;
// any other kind gets a budget of its own.
LuaError loadScript(LuaState& state, const ScriptFile& file, LoadedScript* out);

}  // namespace tide::lua
