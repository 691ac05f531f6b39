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
// Limits are per call (docs/lua.md#limits):
// - deadline: the CPU time of the calling thread plus the wall time of host work (below),
//   so a host starved by other work does not fail scripts that did nothing wrong, while a
//   script that makes slow ctx.* queries still runs out of time (host work's own CPU time
//   counts twice, a price for not reading the CPU clock, a system call, around every
//   query); the wall clock still ends any call at wallLimitOf(deadline). A count hook checks every `hook_instructions` VM
//   instructions, and C functions that can work for long (the pattern matcher, ctx.*
//   queries, emit_file) call checkLimits() between chunks and around host work (hostWork),
//   whose whole wall time counts. C functions that copy a lot (string concatenation,
//   string.rep, table.concat) are caught by the allocator, which checks every
//   kBytesPerDeadlineCheck bytes of growth and refuses to grow past the deadline. A check
//   reads the cheap steady clock, and the thread's CPU clock only once the wall time since
//   the start could have used up the deadline. Nor is the CPU clock read when a call
//   starts while the thread's last reading is fresh (kMaxCpuReadingAge): the call starts
//   from that reading plus the wall time since, as much CPU as the thread can have used by
//   then, which grants the call at most that age more than its deadline. The host pushing
//   a script's input (hostInput) is not the script's time: the deadline starts once the
//   input is there.
// - memory: every allocation is charged to a budget (MemoryBudget): the script whose file
//   is loading or whose function is running, or the state's own. Each budget is capped at
//   `memory_bytes`, so one script's hoard fails only that script; the input the host pushes
//   for a script (hostInput) is charged to no script and not capped. If LuaJIT refuses a
//   custom allocator (non-GC64 builds), the state falls back to luaL_newstate and the hook
//   compares the state's GC count against the one cap instead.
// - C depth: functions that call back into Lua from C (pcall, xpcall, print, gsub with a
//   function or table, string.format's __tostring, table.sort's comparator, tide.lib)
//   count their nesting (CallDepth) and raise before the C stack could overflow.
// Once a deadline or memory limit is hit the call is *tripped*: the hook raises at every
// check, and the sandbox's pcall and xpcall re-raise instead of returning the error, so no
// script can swallow it. After such a call a full GC runs, so the next call starts clean.
//
// Thread-safety: none. A LuaState belongs to the thread that uses it and is never shared;
// it may be handed to another thread only with external synchronisation and never used
// from two threads at once. call() is not re-entrant.

#include <algorithm>
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
#include "host/lua/runtime/block_pool.h"

struct lua_State;
struct lua_Debug;

namespace tide::lua {

using Json = nlohmann::json;

inline constexpr size_t kDefaultMemoryLimit = size_t{32} << 20;
inline constexpr std::chrono::milliseconds kDefaultDeadline{50};
inline constexpr int kDefaultHookInstructions = 1000;
// How deep C functions may nest calls back into Lua (pcall inside gsub inside pcall ...).
// Each level costs a few KiB of C stack (gsub's buffer alone is 8 KiB): 100 levels stay far
// below any thread's stack, and no honest script nests more than a handful.
inline constexpr int kMaxCallDepth = 100;

// How many bytes the allocator hands out between two looks at the clock: 1 MiB is copied
// in well under a millisecond, and a clock read per MiB costs nothing measurable.
inline constexpr size_t kBytesPerDeadlineCheck = size_t{1} << 20;

// How old the thread's last CPU clock reading may be for a call to start from it instead
// of reading the clock, a system call of about half a microsecond (a policy decision makes
// six calls, and these reads were a sixth of its time): a sixteenth of the deadline, at
// most 1 ms. A call may use up to that age more CPU than its deadline.
inline constexpr int kCpuReadingAgeDivisor = 16;
inline constexpr std::chrono::microseconds kMaxCpuReadingAge{1000};
constexpr std::chrono::nanoseconds maxCpuReadingAge(std::chrono::nanoseconds deadline) {
  return std::min<std::chrono::nanoseconds>(deadline / kCpuReadingAgeDivisor, kMaxCpuReadingAge);
}

// The wall-clock bound of a call whose deadline (in CPU time) is `deadline`: a script that
// spins uses CPU as fast as the wall clock runs unless the machine is starved, so this
// bound only ends calls on a machine far too busy, or C code that blocks outside hostWork.
inline constexpr int kWallLimitFactor = 10;
inline constexpr std::chrono::milliseconds kMinWallLimit{1000};
constexpr std::chrono::microseconds wallLimitOf(std::chrono::microseconds deadline) {
  return std::max<std::chrono::microseconds>(deadline * kWallLimitFactor, kMinWallLimit);
}

// Whose memory an allocation is: 0 is the state's own (sandbox, snapshots the host pushes,
// libs), others come from LuaState::newBudget(), one per loaded script.
using MemoryBudget = int;
inline constexpr MemoryBudget kStateBudget = 0;
// What the host pushes for a script to read inside a call (LuaState::hostInput): never
// capped, since its size is the host's choice (a rollout snapshot grows with its plan).
inline constexpr MemoryBudget kHostInputBudget = 1;

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
  // Allocations are charged to `budget` (kStateBudget when not given).
  template <class F>
  LuaError call(F&& body) {
    return call(kStateBudget, std::forward<F>(body));
  }
  template <class F>
  LuaError call(MemoryBudget budget, F&& body) {
    using Body = std::remove_reference_t<F>;
    return callImpl(budget, [](void* fn, lua_State* L) { (*static_cast<Body*>(fn))(L); }, static_cast<void*>(&body));
  }

  // The state behind a running call, for bindings. Only valid inside call().
  static LuaState& from(lua_State* L);

  lua_State* raw() const { return L_; }
  const LuaLimits& limits() const { return options_.limits; }
  bool usesCappedAllocator() const { return capped_; }
  // Bytes currently allocated by Lua (the GC count in fallback mode).
  size_t memoryUsed() const;
  // A new memory budget, capped at limits().memory_bytes; for one script's allocations.
  MemoryBudget newBudget();
  // Bytes currently charged to `budget` (0 in fallback mode, which has one cap).
  size_t memoryUsed(MemoryBudget budget) const;
  // Charges allocations to `budget` until destroyed (then to the one before): a lib that
  // loads on a script's first use of it is the state's, not that script's.
  class Charge {
   public:
    Charge(LuaState& state, MemoryBudget budget) : state_(state), previous_(state.budget_) { state.budget_ = budget; }
    ~Charge() { state_.budget_ = previous_; }
    Charge(const Charge&) = delete;
    Charge& operator=(const Charge&) = delete;

   private:
    LuaState& state_;
    MemoryBudget previous_;
  };

  // For a C function about to build `bytes` at once (string.rep): raises the call's memory
  // limit error when the running budget cannot hold them, so a size the library would wrap
  // or refuse some other way fails as what it is.
  void reserveResult(lua_State* L, double bytes);

  // True once the running call hit its deadline or memory limit; stays true until it ends.
  bool tripped() const { return timed_out_ || memory_exceeded_; }
  // Raises the call's limit error if it is tripped or its deadline has passed. For C
  // functions that work for long (between chunks) or wait for the host (after it).
  void checkLimits(lua_State* L);
  // Runs `work` (a ledger query behind ctx.*, a file write) for a running C function: its
  // wall time counts against the deadline, waits included, checked before and after.
  // Raises like checkLimits.
  template <class F>
  auto hostWork(lua_State* L, F&& work) {
    checkLimits(L);
    const auto started = std::chrono::steady_clock::now();
    auto result = work();
    const auto took = std::chrono::steady_clock::now() - started;
    host_work_ += took;
    next_cpu_look_ -= took;  // the work's CPU time counted twice: the time used grew by up to 2 x took
    checkLimits(L);
    return result;
  }
  // Runs `push` inside a call: the host pushing what the script is about to read, whose
  // size follows the fleet (a rollout snapshot of thousands of instances), not the script.
  // It is the host's work, not the script's: its allocations are charged to
  // kHostInputBudget, which no cap refuses, and its time does not count, as the call's
  // deadline starts again when it returns, `allowance` later than the limit (for a script
  // that must at least read all of it).
  template <class F>
  void hostInput(F&& push, std::chrono::microseconds allowance = {}) {
    const size_t before = memoryUsed();
    {
      Charge charge(*this, kHostInputBudget);
      push();
    }
    if (!capped_) host_input_bytes_ += memoryUsed() - std::min(memoryUsed(), before);
    restartDeadline(allowance);
  }

  // Counts one level of C calling back into Lua; raises "C stack depth ..." (a runtime
  // error) past kMaxCallDepth. Every protected call (the sandbox's pcall) restores the
  // depth it started with, so a level skipped by unwinding is not lost.
  class CallDepth {
   public:
    explicit CallDepth(lua_State* L);
    ~CallDepth() { --state_.call_depth_; }
    CallDepth(const CallDepth&) = delete;
    CallDepth& operator=(const CallDepth&) = delete;

   private:
    LuaState& state_;
  };
  int callDepth() const { return call_depth_; }
  void restoreCallDepth(int depth) { call_depth_ = depth; }

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

  // How many times the calling thread has read its CPU clock for Lua deadlines.
  static uint64_t cpuClockReads();

 private:
  explicit LuaState(LuaStateOptions options);
  LuaError callImpl(MemoryBudget budget, void (*thunk)(void*, lua_State*), void* body);
  [[noreturn]] void raiseLimit(lua_State* L);
  // For the allocator, which cannot raise: counts `grown` bytes and, every
  // kBytesPerDeadlineCheck of them, marks the call timed out once its deadline has passed.
  // True for the one allocation to refuse, whose failure raises the error.
  bool pastDeadlineAfter(size_t grown);
  // The deadline's clocks, started again with `allowance` more than the limit.
  void restartDeadline(std::chrono::microseconds allowance);
  // True once the call used its time (CPU plus host work) or its wall limit; reads the
  // CPU clock only when the wall clock says the time could be used up.
  bool deadlinePassed();
  static const Clock& systemClock();
  static void* allocate(void* ud, void* ptr, size_t old_size, size_t new_size);
  static void countHook(lua_State* L, lua_Debug* ar);
  void onHook(lua_State* L);

  LuaStateOptions options_;
  const Clock* clock_;
  lua_State* L_ = nullptr;
  bool capped_ = false;
  size_t used_ = 0;  // bytes held through the capped allocator
  BlockPool pool_;   // the capped allocator's small blocks; outlives L_ (closed in ~LuaState)
  // Bytes held per MemoryBudget (capped allocator only); the budget in effect.
  std::vector<size_t> budgets_ = std::vector<size_t>(2, 0);  // kStateBudget, kHostInputBudget, scripts
  MemoryBudget budget_ = kStateBudget;
  size_t collected_at_ = 0;  // the budget's usage after the last collection the hook ran
  size_t grown_since_check_ = 0;  // bytes allocated since the allocator last read the clock
  // A handful of keys, set and cleared around every policy run: a flat list whose slots
  // stay allocated, searched linearly.
  std::vector<std::pair<const void*, void*>> context_;
  uint64_t random_state_ = kRandomSeed;

  // Per call.
  bool in_call_ = false;
  bool timed_out_ = false;
  bool memory_exceeded_ = false;
  bool load_error_ = false;
  int call_depth_ = 0;
  size_t host_input_bytes_ = 0;  // pushed by hostInput in fallback mode, where one cap counts all
  std::chrono::nanoseconds allowed_{};       // the limit plus the allowance
  std::chrono::nanoseconds cpu_started_{};   // the thread's CPU clock when the deadline started
  std::chrono::nanoseconds host_work_{};     // wall time of hostWork, counted beside the CPU time
  std::chrono::steady_clock::time_point next_cpu_look_;  // before this, allowed_ cannot be used up
  std::chrono::steady_clock::time_point wall_limit_;
};

// Compiles `text` as a text chunk (bytecode is refused) named "@<chunkname>" and pushes
// the function. On failure marks the call's error as a load error and raises it. Only
// inside LuaState::call().
void loadTextChunk(lua_State* L, std::string_view text, const std::string& chunkname);

}  // namespace tide::lua
