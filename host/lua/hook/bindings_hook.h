#pragma once
// The `ctx` runtime hooks receive (docs/architecture.md#runtime-hooks), read-only:
//   ctx.now()                  a fresh UTC time table, as a policy's ctx.now(), plus `unix`
//                              (the same as `epoch`)
//   ctx.log.info|warn|error    the same as tide.log.*
//   ctx.emit_file(name, text)  writes `text` to <hooks output dir>/<name> atomically (a
//                              temporary sibling, fsync, rename), creating the directory.
//                              `name` must match ^[A-Za-z0-9._-]{1,100}$ and be neither "."
//                              nor ".."; `text` is at most kMaxEmitFileBytes. Raises on a bad
//                              name, too much text, no configured directory or an I/O error.
// This is the only I/O a hook has. Time spent writing does not count against the deadline.

#include <cstddef>
#include <filesystem>
#include <string_view>

#include <lua.hpp>

namespace tide::lua {

class LuaState;

inline constexpr size_t kMaxEmitFileBytes = size_t{1} << 20;

// Whether `name` may be given to ctx.emit_file.
bool validEmitFileName(std::string_view name);

// Pushes the read-only ctx table. Inside LuaState::call.
void pushHookContext(lua_State* L);

// Where ctx.emit_file writes in `state`; null or empty: emit_file raises. `dir` must
// outlive the state's use of it.
void setHookOutputDir(LuaState& state, const std::filesystem::path* dir);

}  // namespace tide::lua
