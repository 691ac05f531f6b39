#pragma once
// Helpers shared by the tests of host/lua.

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <lua.hpp>
#include <nlohmann/json.hpp>

#include "host/core/clock.h"
#include "host/lua/runtime/bindings_json.h"
#include "host/lua/runtime/lua_state.h"
#include "host/lua/runtime/sandbox.h"
#include "tests/support/eventually.h"
#include "tests/support/resident.h"
#include "tests/support/source_tree.h"

namespace tide::lua::testing {

struct ChunkResult {
  LuaError error;
  nlohmann::json value;  // the chunk's first result, as JSON
};

inline std::unique_ptr<LuaState> newState(LuaStateOptions options = {}) {
  auto state = LuaState::create(std::move(options));
  if (!state.isOk()) return nullptr;
  return std::move(state).value();
}

// Runs `code` in a fresh sandbox environment (allow-list, no verbs) of `state`.
inline ChunkResult runChunk(LuaState& state, const std::string& code, const std::string& chunkname = "test.lua") {
  ChunkResult result;
  result.error = state.call([&](lua_State* L) {
    loadTextChunk(L, code, chunkname);
    pushEnvironment(L, {});
    lua_setfenv(L, -2);
    lua_call(L, 0, 1);
    auto value = toJson(L, -1);
    result.value = value.isOk() ? std::move(value).value() : nlohmann::json("<" + value.status().message() + ">");
  });
  return result;
}

// A directory under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tide-lua-XXXXXX").string();
    path_ = mkdtemp(pattern.data()) ? std::filesystem::path(pattern) : std::filesystem::path();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Writes `text` to `path` atomically (write a sibling, then rename), creating directories.
inline void writeFile(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
  }
  std::filesystem::rename(tmp, path);
}

using tide::testing::eventually;

using tide::testing::residentBytes;
using tide::testing::kSourceTree;

// The clock the script tests start from.
inline FakeClock testClock() { return FakeClock(*parseTimestamp("2026-03-03T10:00:00Z")); }

}  // namespace tide::lua::testing

#include <mutex>
#include <vector>

#include "host/lua/registry/script_registry.h"

namespace tide::lua::testing {

// A ScriptRecorder keeping everything in memory. Thread-safe.
class MemoryRecorder final : public ScriptRecorder {
 public:
  struct Event {
    std::string kind;
    std::string subject;
    nlohmann::json data;
  };
  void recordScriptVersion(const model::ScriptVersion& version) override {
    std::lock_guard<std::mutex> lock(mu_);
    versions_.push_back(version);
  }
  void recordEvent(const std::string& kind, const std::string& subject, const nlohmann::json& data) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back({kind, subject, data});
  }
  void keepText(const ScriptFile&) override {}
  // Each registry over this recorder starts with no kept version (tests/engine covers the
  // ledger's).
  std::optional<ScriptFile> lastGoodVersion(const std::string&) override { return std::nullopt; }
  std::vector<model::ScriptVersion> versions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return versions_;
  }
  std::vector<Event> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<model::ScriptVersion> versions_;
  std::vector<Event> events_;
};

// A registry over a temp dir: policies/ and scripts/{rollout,hooks,lib}/.
struct RegistryFixture {
  explicit RegistryFixture(LuaLimits limits = {}) {
    ScriptRegistryOptions options;
    options.policies_dir = dir.path() / "policies";
    options.scripts_dir = dir.path() / "scripts";
    options.limits = limits;
    options.debounce = std::chrono::milliseconds(50);
    std::filesystem::create_directories(options.policies_dir);
    std::filesystem::create_directories(options.scripts_dir / "lib");
    registry = std::make_unique<ScriptRegistry>(options, recorder, clock);
  }
  std::filesystem::path policy(const std::string& file) const { return dir.path() / "policies" / file; }
  std::filesystem::path lib(const std::string& file) const { return dir.path() / "scripts" / "lib" / file; }

  TempDir dir;
  FakeClock clock{*parseTimestamp("2026-03-03T10:00:00Z")};
  MemoryRecorder recorder;
  std::unique_ptr<ScriptRegistry> registry;
};

// A policy file approving (or whatever `verdict` says) everything, named `name`.
inline std::string simplePolicy(const std::string& name, const std::string& verdict = "approve(\"ok\")",
                                const std::string& level = "hard") {
  return "return { name = \"" + name + "\", level = \"" + level + "\", decide = function(op, ctx) return " + verdict +
         " end }\n";
}

}  // namespace tide::lua::testing
