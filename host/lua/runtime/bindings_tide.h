#pragma once
// The `tide` table every script sees (read-only):
//   tide.version    the host's version string
//   tide.log        info/warn/error(message[, fields]) to the state's log sink, as ctx.log
//   tide.lib.<name> the value returned by scripts/lib/<name>.lua, loaded by the host on
//                   first use in this state, in a sandbox environment whose only verbs
//                   are the libs' own (bindings_time.h), and cached as a read-only view.
//                   Unknown names and cycles raise.

#include <lua.hpp>

namespace tide::lua {

class LuaState;
struct ScriptSet;

// Pushes the `tide` table. Called by the sandbox while it builds the allow-list.
void pushTideTable(lua_State* L);

// Pushes a read-only table of info, warn and error functions: (message[, fields]) writes a
// LogRecord to the running state's log sink. tide.log and a policy's ctx.log.
void pushLogTable(lua_State* L);

// Makes the libs of `set` what tide.lib loads from. `set` must outlive the state's use of
// it; call before the first lookup (loaded libs are cached per state).
void setLibraries(LuaState& state, const ScriptSet* set);

}  // namespace tide::lua
