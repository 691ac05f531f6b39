#pragma once
// A bounded pool of PolicyEngines, for policy evaluations that arrive on many threads at
// once (POST /v1/policies/evaluate; docs/architecture.md#lua-states-and-threads).
//
// Each engine owns one Lua state with every policy loaded. The state is built on the
// engine's first evaluation and reused until the ScriptSetProvider publishes another
// version (or a policy hits a limit, policy_engine.h), so a request never builds a state
// while the scripts stay the same. A borrowed engine belongs to its borrower until the
// lease ends: concurrent borrowers always hold different engines. A borrower that finds
// no idle engine builds one more while the pool holds fewer than `max_engines`, else
// waits up to `wait` for one to come back, else gets kUnavailable.
//
// Memory: at most `max_engines` states, each capped at limits.memory_bytes; idle engines
// keep their states.
//
// Thread-safety: borrow(), evaluate() and the counters are safe from any thread. A Lease
// is used by one thread at a time. The pool must outlive its leases.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/lua/policy/policy_data.h"
#include "host/lua/policy/policy_engine.h"
#include "host/lua/runtime/script_set.h"

namespace tide::lua {

inline constexpr std::chrono::milliseconds kDefaultPoolWait{2000};

struct PolicyPoolOptions {
  PolicyEngineOptions engine;
  size_t max_engines = 0;  // 0: the machine's hardware threads (at least 1)
  std::chrono::milliseconds wait = kDefaultPoolWait;
};

class PolicyPool {
 public:
  // `scripts` and `clock` must outlive the pool; `clock` is what policies' top-level code
  // reads while a state is built and the default for evaluations.
  PolicyPool(const ScriptSetProvider& scripts, const Clock& clock, PolicyPoolOptions options = {});
  ~PolicyPool();
  PolicyPool(const PolicyPool&) = delete;
  PolicyPool& operator=(const PolicyPool&) = delete;

  // An engine borrowed from the pool; it goes back when the lease is destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();

    PolicyEngine& engine() const { return *engine_; }
    PolicyEngine* operator->() const { return engine_.get(); }

   private:
    friend class PolicyPool;
    Lease(PolicyPool* pool, std::unique_ptr<PolicyEngine> engine);
    PolicyPool* pool_;
    std::unique_ptr<PolicyEngine> engine_;
    uint64_t builds_when_lent_ = 0;
  };

  // An idle engine, a new one while below the bound, or one that comes back within
  // `wait`. kUnavailable when every engine stayed busy.
  Result<Lease> borrow();

  // Borrows an engine and runs PolicyEngine::evaluate(op, data, clock) on it.
  Result<Evaluation> evaluate(const Json& op, PolicyDataSource& data, const Clock& clock);

  size_t maxEngines() const { return max_engines_; }
  // Engines created so far (idle and borrowed).
  size_t engines() const;
  // Lua states the pool's engines have built, counted as each engine comes back.
  uint64_t builds() const;

 private:
  void giveBack(std::unique_ptr<PolicyEngine> engine, uint64_t builds_while_lent);

  const ScriptSetProvider& scripts_;
  const Clock& clock_;
  const PolicyPoolOptions options_;
  const size_t max_engines_;

  mutable std::mutex mu_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<PolicyEngine>> idle_;  // REQUIRES: mu_ is held
  size_t created_ = 0;                               // REQUIRES: mu_ is held
  uint64_t builds_ = 0;                              // REQUIRES: mu_ is held
};

}  // namespace tide::lua
