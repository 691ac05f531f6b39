#pragma once
// One sandboxed LuaJIT interpreter with per-call limits (docs/architecture.md#the-lua-host).
//
// A LuaState is created by LuaState::create(), which opens the allowed libraries and
// installs the sandbox (host/lua/runtime/sandbox.cpp) before anyone else can touch the state. The
// JIT is off, so the count hook that enforces the deadline fires everywhere.
//
// Every entry into Lua goes through call(): it arms the deadline and the memory checks,
// runs the body as a protected call, and classifies what went wrong. Nothing else may run
// Lua code on the state, so a Lua error never escapes to the host and no C++ exception
// ever crosses a Lua frame.
//
// Limits are per call:
// - deadline: a count hook checks a steady clock every `hook_instructions` VM instructions.
//   Once expired it is sticky: every later hook raises again, so a script's pcall cannot
//   swallow it. C library functions (string.rep, string.find, ...) run to completion
//   between two checks.
// - memory: the allocator refuses to grow past `memory_bytes` and the call fails with a
//   memory error, also sticky. If LuaJIT refuses a custom allocator (non-GC64 builds),
//   the state falls back to luaL_newstate and the hook compares the GC count instead.
// After a timeout or memory error the limits are reset and a full GC runs, so the next
// call starts clean.
//
// Thread-safety: none. A LuaState belongs to the thread that uses it and is never shared;
// it may be handed to another thread only with external synchronisation and never used
// from two threads at once. call() is not re-entrant.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/core/status.h"

struct lua_State;
struct lua_Debug;

namespace tide::lua {

using Json = nlohmann::json;

inline constexpr size_t kDefaultMemoryLimit = size_t{32} << 20;
inline constexpr std::chrono::milliseconds kDefaultDeadline{50};
inline constexpr int kDefaultHookInstructions = 1000;

enum class LuaErrorClass { kNone, kLoad, kRuntime, kTimeout, kMemory };

// "", "load", "runtime", "timeout", "memory": the decision record's error_class.
const char* errorClassName(LuaErrorClass error_class);

// The outcome of one call. `message` names the script (chunkname) and line when Lua knows
// them, e.g. "policies/freeze.lua:12: attempt to index a nil value".
struct LuaError {
  LuaErrorClass error_class = LuaErrorClass::kNone;
  std::string message;

  bool ok() const { return error_class == LuaErrorClass::kNone; }
};

struct LuaLimits {
  size_t memory_bytes = kDefaultMemoryLimit;
  std::chrono::milliseconds deadline = kDefaultDeadline;
  int hook_instructions = kDefaultHookInstructions;
};

// One line written by a script through print() or ctx.log.*.
struct LogRecord {
  std::string level;  // info | warn | error
  std::string where;  // "policies/x.lua:12"
  std::string message;
  Json fields = nullptr;
};
using LogSink = std::function<void(const LogRecord&)>;

enum class AllocatorMode {
  kCapped,             // lua_newstate with the capped allocator (falls back if refused)
  kSystemWithGcCheck,  // luaL_newstate; the hook checks the GC count (the fallback path)
};

struct LuaStateOptions {
  LuaLimits limits;
  // What os.time(), os.date() and ctx.now() read. Null: the system clock. Must outlive
  // the state (or be replaced with setClock first).
  const Clock* clock = nullptr;
  LogSink log;  // print() and ctx.log.*; empty: discarded
  AllocatorMode allocator = AllocatorMode::kCapped;
};

class LuaState {
 public:
  // Creates a state with the sandbox installed. Fails only when no memory is available.
  static Result<std::unique_ptr<LuaState>> create(LuaStateOptions options = {});
  ~LuaState();
  LuaState(const LuaState&) = delete;
  LuaState& operator=(const LuaState&) = delete;

  // Runs `body(lua_State*)` as one protected call under the limits. The body may use the
  // Lua API freely (push, lua_call scripts, read results into C++ variables it captured);
  // whatever it leaves on the stack is discarded. Lua errors, limit violations and
  // std::exceptions thrown by the body end the call and are returned, classified.
  template <class F>
  LuaError call(F&& body) {
    using Body = std::remove_reference_t<F>;
    return callImpl([](void* fn, lua_State* L) { (*static_cast<Body*>(fn))(L); }, static_cast<void*>(&body));
  }

  // The state behind a running call, for bindings. Only valid inside call().
  static LuaState& from(lua_State* L);

  lua_State* raw() const { return L_; }
  const LuaLimits& limits() const { return options_.limits; }
  bool usesCappedAllocator() const { return capped_; }
  // Bytes currently allocated by Lua (the GC count in fallback mode).
  size_t memoryUsed() const;

  void setClock(const Clock* clock) { clock_ = clock ? clock : &systemClock(); }
  const Clock& clock() const { return *clock_; }
  void setLogSink(LogSink sink) { options_.log = std::move(sink); }
  void log(LogRecord record) const;

  // Per-binding context, e.g. the data source of the evaluation in progress. The owner
  // keeps `value` alive while it is set. Never touches Lua memory.
  void setContext(const void* key, void* value);
  void* context(const void* key) const;

  // math.random's generator, reseeded with kRandomSeed at the start of every call so a
  // script's "random" choices are reproducible.
  static constexpr uint64_t kRandomSeed = 0x7469646521ULL;
  void seedRandom(uint64_t seed);
  uint64_t nextRandom();

  // Marks the running call's failure as a load (compile) error rather than a runtime one.
  void markLoadError() { load_error_ = true; }

  // While alive, time spent in the host (ledger queries behind ctx.*) does not count
  // against the running call's deadline.
  class HostTime {
   public:
    explicit HostTime(LuaState& state);
    ~HostTime();
    HostTime(const HostTime&) = delete;
    HostTime& operator=(const HostTime&) = delete;

   private:
    LuaState& state_;
    std::chrono::steady_clock::time_point started_;
  };

 private:
  explicit LuaState(LuaStateOptions options);
  LuaError callImpl(void (*thunk)(void*, lua_State*), void* body);
  static const Clock& systemClock();
  static void* allocate(void* ud, void* ptr, size_t old_size, size_t new_size);
  static void countHook(lua_State* L, lua_Debug* ar);
  void onHook(lua_State* L);

  LuaStateOptions options_;
  const Clock* clock_;
  lua_State* L_ = nullptr;
  bool capped_ = false;
  size_t used_ = 0;  // bytes held through the capped allocator
  // A handful of keys, set and cleared around every policy run: a flat list whose slots
  // stay allocated, searched linearly.
  std::vector<std::pair<const void*, void*>> context_;
  uint64_t random_state_ = kRandomSeed;

  // Per call.
  bool in_call_ = false;
  bool timed_out_ = false;
  bool memory_exceeded_ = false;
  bool load_error_ = false;
  std::chrono::steady_clock::time_point deadline_;
};

// Compiles `text` as a text chunk (bytecode is refused) named "@<chunkname>" and pushes
// the function. On failure marks the call's error as a load error and raises it. Only
// inside LuaState::call().
void loadTextChunk(lua_State* L, std::string_view text, const std::string& chunkname);

}  // namespace tide::lua
