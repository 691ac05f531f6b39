#include "host/lua/runtime/lua_state.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include <lua.hpp>

#include "host/lua/runtime/sandbox.h"

namespace tide::lua {
namespace {

char kStateKey;  // its address keys the owning LuaState* in the registry

// The calling thread's last CPU clock reading, and when it was taken. Per thread, not per
// state: a state handed to another thread (a PolicyPool) must not start from a reading of
// the thread it came from.
struct CpuReading {
  std::chrono::steady_clock::time_point at{};
  std::chrono::nanoseconds cpu{};
  uint64_t reads = 0;
};
thread_local CpuReading t_cpu_reading;

std::chrono::nanoseconds readCpuClock(std::chrono::steady_clock::time_point now) {
  t_cpu_reading = {now, threadCpuTime(), t_cpu_reading.reads + 1};
  return t_cpu_reading.cpu;
}

struct PendingCall {
  void (*thunk)(void*, lua_State*);
  void* body;
};

// The protected frame every call runs in. A std::exception from the body becomes a Lua
// error here, so it never unwinds through LuaJIT's frames.
int runBody(lua_State* L) {
  auto* pending = static_cast<PendingCall*>(lua_touserdata(L, 1));
  lua_settop(L, 0);
  char message[512];
  try {
    pending->thunk(pending->body, L);
    return 0;
  } catch (const std::exception& e) {
    std::snprintf(message, sizeof message, "internal error: %s", e.what());
  }
  lua_pushstring(L, message);
  return lua_error(L);
}

int panic(lua_State* L) {
  // Unreachable by construction: all Lua runs inside lua_cpcall.
  std::fprintf(stderr, "tide: unprotected Lua error: %s\n", lua_tostring(L, -1));
  std::abort();
}

// Reads the error value without allocating (the state may be at its memory cap).
std::string errorText(lua_State* L, int index) {
  if (lua_type(L, index) == LUA_TSTRING) {
    size_t len = 0;
    const char* text = lua_tolstring(L, index, &len);
    return std::string(text, len);
  }
  if (lua_type(L, index) == LUA_TNUMBER) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.14g", lua_tonumber(L, index));
    return buf;
  }
  return std::string("(error object is a ") + luaL_typename(L, index) + " value)";
}

std::string describeBytes(size_t bytes) {
  char buf[64];
  if (bytes % (size_t{1} << 20) == 0) {
    std::snprintf(buf, sizeof buf, "%zu MiB", bytes >> 20);
  } else {
    std::snprintf(buf, sizeof buf, "%zu bytes", bytes);
  }
  return buf;
}

// "chunk:line: " of the innermost Lua function with a known line (the hook may fire while
// a library function such as pcall is on top), or "".
void pushWhere(lua_State* L) {
  lua_Debug ar;
  for (int level = 0; level < 8 && lua_getstack(L, level, &ar); ++level) {
    if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
      lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
      return;
    }
  }
  lua_pushliteral(L, "");
}

// Every block the capped allocator hands out carries a header naming the budget it is
// charged to, so a block the GC frees during another script's call comes off the right
// budget. A block that grows or shrinks is charged anew to the budget in effect (the one
// that made it this size). The header also keeps the block's size, header included, so
// that where a block goes back (BlockPool or free) never rests on the size Lua passes.
// 16 bytes keep malloc's alignment.
struct alignas(16) BlockHeader {
  MemoryBudget budget;
  size_t bytes;
};
static_assert(sizeof(BlockHeader) == 16);

void releaseBlock(BlockPool& pool, BlockHeader* block) {
  if (BlockPool::holds(block->bytes)) {
    pool.give(block, block->bytes);
  } else {
    std::free(block);
  }
}

// `block` (null for a new one) resized to `bytes`, header included, as realloc would:
// contents kept, and on failure null with `block` untouched. Small blocks come from
// `pool`; a block stays where it is while its size class does.
BlockHeader* resizeBlock(BlockPool& pool, BlockHeader* block, size_t bytes) {
  const bool small = BlockPool::holds(bytes);
  BlockHeader* out = nullptr;
  if (block && small && BlockPool::holds(block->bytes) && BlockPool::sameClass(block->bytes, bytes)) {
    out = block;
  } else if (block && !small && !BlockPool::holds(block->bytes)) {
    out = static_cast<BlockHeader*>(std::realloc(block, bytes));
  } else {
    out = static_cast<BlockHeader*>(small ? pool.take(bytes) : std::malloc(bytes));
    if (out && block) {
      std::memcpy(out, block, std::min(block->bytes, bytes));
      releaseBlock(pool, block);
    }
  }
  if (out) out->bytes = bytes;
  return out;
}

}  // namespace

const char* errorClassName(LuaErrorClass error_class) {
  switch (error_class) {
    case LuaErrorClass::kNone: return "";
    case LuaErrorClass::kLoad: return "load";
    case LuaErrorClass::kRuntime: return "runtime";
    case LuaErrorClass::kTimeout: return "timeout";
    case LuaErrorClass::kMemory: return "memory";
  }
  return "runtime";
}

const Clock& LuaState::systemClock() {
  static const SystemClock kClock;
  return kClock;
}

LuaState::LuaState(LuaStateOptions options)
    : options_(std::move(options)), clock_(options_.clock ? options_.clock : &systemClock()) {
  if (options_.allocator == AllocatorMode::kCapped) {
    L_ = lua_newstate(&LuaState::allocate, this);
    capped_ = L_ != nullptr;
  }
  if (!L_) L_ = luaL_newstate();
  if (!L_) return;
  lua_atpanic(L_, panic);
  luaJIT_setmode(L_, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
  // Installed once for the state's life: lua_sethook rebuilds LuaJIT's dispatch table, too
  // dear to do around every call. Lua only runs inside call(), and the hook does nothing
  // outside one.
  lua_sethook(L_, &LuaState::countHook, LUA_MASKCOUNT, options_.limits.hook_instructions);
}

Result<std::unique_ptr<LuaState>> LuaState::create(LuaStateOptions options) {
  std::unique_ptr<LuaState> state(new LuaState(std::move(options)));
  if (!state->L_) return Status::resourceExhausted("cannot allocate a Lua state");
  LuaState* self = state.get();
  LuaError error = state->call([self](lua_State* L) {
    lua_pushlightuserdata(L, &kStateKey);
    lua_pushlightuserdata(L, self);
    lua_rawset(L, LUA_REGISTRYINDEX);
    installSandbox(L);
  });
  if (!error.ok()) return Status::resourceExhausted("installing the Lua sandbox: " + error.message);
  return state;
}

LuaState::~LuaState() {
  if (L_) lua_close(L_);
}

LuaState& LuaState::from(lua_State* L) {
  void* ud = nullptr;
  if (lua_getallocf(L, &ud) == &LuaState::allocate) return *static_cast<LuaState*>(ud);
  lua_pushlightuserdata(L, &kStateKey);
  lua_rawget(L, LUA_REGISTRYINDEX);
  auto* state = static_cast<LuaState*>(lua_touserdata(L, -1));
  lua_pop(L, 1);
  return *state;
}

size_t LuaState::memoryUsed() const {
  if (capped_) return used_;
  return static_cast<size_t>(lua_gc(L_, LUA_GCCOUNT, 0)) * 1024 + static_cast<size_t>(lua_gc(L_, LUA_GCCOUNTB, 0));
}

void LuaState::log(LogRecord record) const {
  if (options_.log) options_.log(record);
}

void LuaState::setContext(const void* key, void* value) {
  for (auto& [k, v] : context_) {
    if (k == key) {
      v = value;
      return;
    }
  }
  if (value) context_.emplace_back(key, value);
}

void* LuaState::context(const void* key) const {
  for (const auto& [k, v] : context_) {
    if (k == key) return v;
  }
  return nullptr;
}

void LuaState::seedRandom(uint64_t seed) { random_state_ = seed ? seed : kRandomSeed; }

uint64_t LuaState::nextRandom() {
  // xorshift64*: small, fast, and the same sequence on every platform.
  uint64_t x = random_state_;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  random_state_ = x;
  return x * 0x2545F4914F6CDD1DULL;
}

MemoryBudget LuaState::newBudget() {
  budgets_.push_back(0);
  return static_cast<MemoryBudget>(budgets_.size() - 1);
}

size_t LuaState::memoryUsed(MemoryBudget budget) const {
  return capped_ && budget >= 0 && static_cast<size_t>(budget) < budgets_.size() ? budgets_[budget] : 0;
}

void* LuaState::allocate(void* ud, void* ptr, size_t old_size, size_t new_size) {
  auto* self = static_cast<LuaState*>(ud);
  BlockHeader* block = ptr ? static_cast<BlockHeader*>(ptr) - 1 : nullptr;
  if (!block) old_size = 0;  // LuaJIT may pass a type tag as old_size for a new block
  const MemoryBudget owner = block ? block->budget : self->budget_;
  if (new_size == 0) {
    if (block) releaseBlock(self->pool_, block);
    self->used_ -= old_size;
    self->budgets_[owner] -= old_size;
    return nullptr;
  }
  const MemoryBudget charged = self->budget_;
  const size_t charged_before = self->budgets_[charged] - (owner == charged ? old_size : 0);
  const bool capped = charged != kHostInputBudget;
  if (capped && new_size > old_size && charged_before + new_size > self->options_.limits.memory_bytes) {
    self->memory_exceeded_ = true;
    return nullptr;
  }
  if (capped && new_size > old_size && self->pastDeadlineAfter(new_size - old_size)) return nullptr;
  BlockHeader* grown = resizeBlock(self->pool_, block, sizeof(BlockHeader) + new_size);
  if (!grown) return nullptr;
  grown->budget = charged;
  self->budgets_[owner] -= old_size;
  self->budgets_[charged] += new_size;
  self->used_ = self->used_ - old_size + new_size;
  return grown + 1;
}

bool LuaState::pastDeadlineAfter(size_t grown) {
  grown_since_check_ += grown;
  if (!in_call_ || timed_out_ || grown_since_check_ < kBytesPerDeadlineCheck) return false;
  grown_since_check_ = 0;
  // Only the allocation that finds the deadline passed is refused: the error it raises
  // (and every check after it) must still be able to allocate its message.
  timed_out_ = deadlinePassed();
  return timed_out_;
}

void LuaState::restartDeadline(std::chrono::microseconds allowance) {
  grown_since_check_ = 0;
  const std::chrono::microseconds allowed = options_.limits.deadline + allowance;
  const auto now = std::chrono::steady_clock::now();
  allowed_ = allowed;
  if (now - t_cpu_reading.at > maxCpuReadingAge(allowed)) readCpuClock(now);
  // The thread cannot have used more CPU since the reading than the wall time since it.
  cpu_started_ = t_cpu_reading.cpu + (now - t_cpu_reading.at);
  host_work_ = {};
  next_cpu_look_ = now + allowed;
  wall_limit_ = now + wallLimitOf(allowed);
}

bool LuaState::deadlinePassed() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_cpu_look_) return false;
  if (now >= wall_limit_) return true;
  const std::chrono::nanoseconds used = readCpuClock(now) - cpu_started_ + host_work_;
  if (used >= allowed_) return true;
  // Preempted: what is left cannot be used up sooner than this.
  next_cpu_look_ = std::min(now + (allowed_ - used), wall_limit_);
  return false;
}

uint64_t LuaState::cpuClockReads() { return t_cpu_reading.reads; }

void LuaState::countHook(lua_State* L, lua_Debug*) { from(L).onHook(L); }

void LuaState::onHook(lua_State* L) {
  if (!in_call_) return;
  const size_t limit = options_.limits.memory_bytes;
  if (!capped_ && !memory_exceeded_ && memoryUsed() > limit + host_input_bytes_) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    memory_exceeded_ = memoryUsed() > limit + host_input_bytes_;
  }
  // The GC paces itself on the whole state, not on one budget: a script close to its cap
  // gets its garbage collected before an allocation fails for garbage alone.
  if (capped_ && budgets_[budget_] > limit - limit / 4 && budgets_[budget_] > collected_at_ + limit / 8) {
    lua_gc(L, LUA_GCCOLLECT, 0);
    collected_at_ = budgets_[budget_];
  }
  checkLimits(L);
}

void LuaState::checkLimits(lua_State* L) {
  if (!in_call_) return;
  if (!timed_out_ && deadlinePassed()) timed_out_ = true;
  // Sticky: once a limit is hit, every check raises again until the call ends.
  if (tripped()) raiseLimit(L);
}

void LuaState::reserveResult(lua_State* L, double bytes) {
  const size_t limit = options_.limits.memory_bytes;
  const double used = static_cast<double>(capped_ ? budgets_[budget_] : memoryUsed() - std::min(memoryUsed(), host_input_bytes_));
  if (used + bytes <= static_cast<double>(limit)) return;
  memory_exceeded_ = true;
  raiseLimit(L);
}

void LuaState::raiseLimit(lua_State* L) {
  pushWhere(L);
  if (memory_exceeded_) {
    lua_pushfstring(L, "memory limit of %s exceeded", describeBytes(options_.limits.memory_bytes).c_str());
  } else {
    lua_pushfstring(L, "deadline of %d ms exceeded", static_cast<int>(options_.limits.deadline.count()));
  }
  lua_concat(L, 2);
  lua_error(L);
  __builtin_unreachable();
}

LuaState::CallDepth::CallDepth(lua_State* L) : state_(from(L)) {
  if (state_.call_depth_ >= kMaxCallDepth) {
    luaL_error(L, "C stack depth limit of %d exceeded (recursion through pcall, gsub, print or a metamethod)",
               kMaxCallDepth);
  }
  ++state_.call_depth_;
}

LuaError LuaState::callImpl(MemoryBudget budget, void (*thunk)(void*, lua_State*), void* body) {
  if (in_call_) return {LuaErrorClass::kRuntime, "LuaState::call is not re-entrant"};
  if (budget < 0 || static_cast<size_t>(budget) >= budgets_.size()) budget = kStateBudget;
  Charge charge(*this, budget);
  in_call_ = true;
  call_depth_ = 0;
  collected_at_ = 0;
  timed_out_ = false;
  memory_exceeded_ = false;
  load_error_ = false;
  host_input_bytes_ = 0;
  random_state_ = kRandomSeed;
  restartDeadline({});

  PendingCall pending{thunk, body};
  const int status = lua_cpcall(L_, runBody, &pending);

  LuaError result;
  std::string message;
  if (status != 0) {
    message = errorText(L_, -1);
    lua_pop(L_, 1);
  }
  // A limit hit counts even when the script caught the error and returned normally. An
  // allocation refused past the deadline raises LUA_ERRMEM too: that is a timeout.
  if (memory_exceeded_ || (status == LUA_ERRMEM && !timed_out_)) {
    result.error_class = LuaErrorClass::kMemory;
    result.message = message.find("memory limit of") != std::string::npos
                         ? message
                         : "memory limit of " + describeBytes(options_.limits.memory_bytes) + " exceeded";
  } else if (timed_out_) {
    result.error_class = LuaErrorClass::kTimeout;
    result.message = message.find("deadline of") != std::string::npos
                         ? message
                         : "deadline of " + std::to_string(options_.limits.deadline.count()) + " ms exceeded";
  } else if (status != 0) {
    result.error_class = load_error_ ? LuaErrorClass::kLoad : LuaErrorClass::kRuntime;
    result.message = message;
  }
  if (result.error_class == LuaErrorClass::kMemory || result.error_class == LuaErrorClass::kTimeout) {
    lua_gc(L_, LUA_GCCOLLECT, 0);
  }
  timed_out_ = false;
  memory_exceeded_ = false;
  in_call_ = false;
  return result;
}

void loadTextChunk(lua_State* L, std::string_view text, const std::string& chunkname) {
  if (!text.empty() && text[0] == LUA_SIGNATURE[0]) {
    LuaState::from(L).markLoadError();
    lua_pushfstring(L, "%s: precompiled bytecode is refused; only Lua source text loads", chunkname.c_str());
    lua_error(L);
  }
  int status = 0;
  {
    const std::string name = "@" + chunkname;
    status = luaL_loadbufferx(L, text.data(), text.size(), name.c_str(), "t");  // "t": text only
  }
  if (status != 0) {
    LuaState::from(L).markLoadError();
    lua_error(L);
  }
}

}  // namespace tide::lua
