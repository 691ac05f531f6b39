#include "host/core/failpoint.h"

#include <signal.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <map>
#include <mutex>

namespace tide::failpoint {
namespace {

enum class Action { kKill, kError };

struct Armed {
  Action action = Action::kError;
  int64_t only_at = 0;  // the hit that fires; 0: every one
};

struct Registry {
  std::mutex mu;
  std::map<std::string, Armed, std::less<>> armed;
  std::map<std::string, int64_t, std::less<>> reached;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

Result<std::pair<std::string, Armed>> parseEntry(std::string_view entry) {
  auto bad = [&](const std::string& why) {
    std::string message = kEnvironmentVariable;
    message.append(": '").append(entry).append("' ").append(why);
    return Status::invalidArgument(std::move(message), {{kEnvironmentVariable, why, ""}});
  };
  const size_t equals = entry.find('=');
  if (equals == std::string_view::npos || trim(entry.substr(0, equals)).empty()) {
    return bad("is not NAME=ACTION[@N]");
  }
  std::string_view action = trim(entry.substr(equals + 1));
  Armed armed;
  if (const size_t at = action.find('@'); at != std::string_view::npos) {
    const std::string_view count = action.substr(at + 1);
    auto [end, error] = std::from_chars(count.data(), count.data() + count.size(), armed.only_at);
    if (error != std::errc() || end != count.data() + count.size() || armed.only_at < 1) {
      return bad("has a bad @N (a count from 1)");
    }
    action = action.substr(0, at);
  }
  if (action == "kill") {
    armed.action = Action::kKill;
  } else if (action == "error") {
    armed.action = Action::kError;
  } else {
    return bad("names an unknown action (kill or error)");
  }
  return std::make_pair(std::string(trim(entry.substr(0, equals))), armed);
}

// Arms what the environment names before main() runs, so even the first ledger write of a
// starting host is covered. A spec that does not parse is said on stderr and arms nothing.
[[maybe_unused]] const bool kArmedFromEnvironment = [] {
  const char* spec = std::getenv(kEnvironmentVariable);
  if (spec == nullptr || *spec == '\0') return false;
  Status armed = arm(spec);
  if (!armed.isOk()) {
    const std::string line = "tide: failpoints not armed: " + armed.message() + "\n";
    // Best effort: stderr is all there is this early, and a short write still says enough.
    (void)::write(STDERR_FILENO, line.data(), line.size());
  }
  return armed.isOk();
}();

}  // namespace

namespace internal {

std::atomic<bool> g_armed{false};

Status reached(std::string_view name) {
  Registry& r = registry();
  std::unique_lock<std::mutex> lock(r.mu);
  auto counted = r.reached.find(name);
  if (counted == r.reached.end()) counted = r.reached.emplace(std::string(name), 0).first;
  const int64_t hit = ++counted->second;
  auto armed = r.armed.find(name);
  if (armed == r.armed.end()) return Status::ok();
  if (armed->second.only_at != 0 && armed->second.only_at != hit) return Status::ok();
  if (armed->second.action == Action::kKill) {
    const std::string line = "tide: failpoint " + std::string(name) + " fired: kill\n";
    // Best effort: the process dies next whatever the write did.
    (void)::write(STDERR_FILENO, line.data(), line.size());
    ::kill(::getpid(), SIGKILL);
    ::pause();  // SIGKILL cannot be caught; nothing after the place runs
  }
  return Status::unavailable("failpoint " + std::string(name) + " fired");
}

}  // namespace internal

Status arm(std::string_view spec) {
  std::map<std::string, Armed, std::less<>> armed;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view entry = trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (entry.empty()) continue;
    TIDE_ASSIGN_OR_RETURN(auto parsed, parseEntry(entry));
    armed[parsed.first] = parsed.second;
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.reached.clear();
  internal::g_armed.store(!armed.empty(), std::memory_order_relaxed);
  r.armed = std::move(armed);
  return Status::ok();
}

int64_t timesReached(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.reached.find(name);
  return it == r.reached.end() ? 0 : it->second;
}

}  // namespace tide::failpoint
