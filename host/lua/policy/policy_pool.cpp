#include "host/lua/policy/policy_pool.h"

#include <algorithm>
#include <string>
#include <thread>

namespace tide::lua {

PolicyPool::Lease::Lease(PolicyPool* pool, std::unique_ptr<PolicyEngine> engine)
    : pool_(pool), engine_(std::move(engine)), builds_when_lent_(engine_->builds()) {}

PolicyPool::Lease::Lease(Lease&& other) noexcept
    : pool_(other.pool_), engine_(std::move(other.engine_)), builds_when_lent_(other.builds_when_lent_) {}

PolicyPool::Lease& PolicyPool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (engine_) {
      const uint64_t built = engine_->builds() - builds_when_lent_;
      pool_->giveBack(std::move(engine_), built);
    }
    pool_ = other.pool_;
    engine_ = std::move(other.engine_);
    builds_when_lent_ = other.builds_when_lent_;
  }
  return *this;
}

PolicyPool::Lease::~Lease() {
  if (engine_) {
    const uint64_t built = engine_->builds() - builds_when_lent_;
    pool_->giveBack(std::move(engine_), built);
  }
}

PolicyPool::PolicyPool(const ScriptSetProvider& scripts, const Clock& clock, PolicyPoolOptions options)
    : scripts_(scripts),
      clock_(clock),
      options_(options),
      max_engines_(options.max_engines > 0 ? options.max_engines
                                           : std::max<size_t>(1, std::thread::hardware_concurrency())) {}

PolicyPool::~PolicyPool() = default;

Result<PolicyPool::Lease> PolicyPool::borrow() {
  std::unique_lock<std::mutex> lock(mu_);
  const bool available =
      returned_.wait_for(lock, options_.wait, [this] { return !idle_.empty() || created_ < max_engines_; });
  if (!available) {
    return Status::unavailable("all " + std::to_string(max_engines_) + " policy evaluators are busy; try again");
  }
  if (!idle_.empty()) {
    std::unique_ptr<PolicyEngine> engine = std::move(idle_.back());
    idle_.pop_back();
    return Lease(this, std::move(engine));
  }
  ++created_;
  lock.unlock();
  // Cheap: the engine builds its Lua state on its first evaluation, outside the lock.
  return Lease(this, std::make_unique<PolicyEngine>(scripts_, clock_, options_.engine));
}

Result<Evaluation> PolicyPool::evaluate(const Json& op, PolicyDataSource& data, const Clock& clock) {
  TIDE_ASSIGN_OR_RETURN(Lease lease, borrow());
  return lease->evaluate(op, data, clock);
}

size_t PolicyPool::engines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_;
}

uint64_t PolicyPool::builds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return builds_;
}

void PolicyPool::giveBack(std::unique_ptr<PolicyEngine> engine, uint64_t builds_while_lent) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    builds_ += builds_while_lent;
    idle_.push_back(std::move(engine));
  }
  returned_.notify_one();
}

}  // namespace tide::lua
