// libFuzzer target: any text as a policy file, loaded and run the way the host runs one
// (docs/architecture.md#the-lua-host): a ScriptSet holding it beside the shipped libs
// (scripts/lib), a PolicyInterpreter that compiles it as text only in the policy
// environment of the sandbox and runs its top level under the limits, its tests table
// read, then applies(op) and decide(op, ctx) once against the op of
// examples/op-dev-create.json.
//
// The limits are those of production but shorter, so a looping input costs the fuzzer
// little: a 10 ms deadline and 8 MiB per script. What must hold: no crash, no sanitizer
// report, and every run ends (libFuzzer's -timeout catches one that does not).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "host/core/clock.h"
#include "host/core/sha256.h"
#include "host/lua/policy/policy_data.h"
#include "host/lua/policy/policy_interpreter.h"
#include "host/lua/runtime/script_loader.h"

namespace {

using namespace tide;
using namespace std::chrono_literals;

const std::filesystem::path kSourceDir = TIDE_SOURCE_DIR;

struct Fixture {
  lua::ScriptSet libs;  // scripts/lib/*.lua, as the registry loads them
  lua::Json op;
  lua::Json ctx;
  lua::LuaLimits limits;
};

const Fixture& fixture() {
  static const Fixture kFixture = [] {
    Fixture f;
    for (const auto& entry : std::filesystem::directory_iterator(kSourceDir / "scripts" / "lib")) {
      if (entry.path().extension() != ".lua") continue;
      const std::string path = "scripts/lib/" + entry.path().filename().string();
      auto file = lua::readScriptFile(entry.path(), path, lua::ScriptKind::kLib);
      if (!file.isOk()) std::abort();
      f.libs.files[path] = std::move(file).value();
    }
    std::ifstream in(kSourceDir / "examples" / "op-dev-create.json");
    std::ostringstream text;
    text << in.rdbuf();
    const lua::Json example = lua::Json::parse(text.str());
    f.op = example.at("op");
    f.ctx = example.at("ctx");
    f.limits.deadline = 10ms;
    f.limits.memory_bytes = size_t{8} << 20;
    return f;
  }();
  return kFixture;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Fixture& f = fixture();
  auto set = std::make_shared<lua::ScriptSet>(f.libs);
  set->version = 1;
  lua::ScriptFile policy;
  policy.path = "policies/fuzz.lua";
  policy.kind = lua::ScriptKind::kPolicy;
  policy.name = "fuzz";
  policy.level = "hard";
  policy.text.assign(reinterpret_cast<const char*>(data), size);
  policy.sha256 = sha256Hex(policy.text);
  set->files[policy.path] = policy;

  FakeClock clock(*parseTimestamp(f.ctx.at("now").get<std::string>()));
  auto interpreter = lua::PolicyInterpreter::create(set, f.limits, clock);
  if (!interpreter.isOk()) std::abort();  // only when no memory is left
  static_cast<void>((*interpreter)->testCases(policy));
  if (!(*interpreter)->setOp(f.op).ok()) std::abort();
  lua::SnapshotDataSource ctx(f.ctx, clock);
  const lua::PolicyRun run = (*interpreter)->run(policy, ctx);
  // A policy that failed to load or run never approves.
  if (run.error_class != lua::LuaErrorClass::kNone && run.verdict == lua::Verdict::kApprove) std::abort();
  return 0;
}
