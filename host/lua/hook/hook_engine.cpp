#include "host/lua/hook/hook_engine.h"

#include <cmath>

#include <lua.hpp>

#include "host/lua/hook/bindings_hook.h"
#include "host/lua/runtime/bindings_json.h"
#include "host/lua/runtime/bindings_readonly.h"
#include "host/lua/runtime/script_loader.h"

namespace tide::lua {
namespace {

constexpr const char* kBeforeShape =
    "operation.before must return nil, { veto = \"reason\" } or { delay = seconds, reason = \"...\" }";

bool isHookEvent(const std::string& event) {
  for (const char* known : hookEvents()) {
    if (event == known) return true;
  }
  return false;
}

// `message`, naming `path` when Lua could not (a refused allocation has no line).
std::string naming(const std::string& path, const std::string& message) {
  return (message.find(path) == std::string::npos ? path + ": " : "") + validUtf8(message);
}

std::string cut(const std::string& text) { return validUtf8(text.substr(0, kMaxHookReasonBytes)); }

// What an operation.before handler returned, as a verdict of `hook`; "" or why it is not one.
std::string readBefore(const Json& value, const std::string& hook, HookVerdict* out) {
  out->kind = HookVerdict::Kind::kProceed;
  if (value.is_null() || (value.is_object() && value.empty())) return "";
  if (!value.is_object()) return std::string(kBeforeShape) + ", not " + value.dump().substr(0, 80);
  for (const auto& [key, field] : value.items()) {
    if (key != "veto" && key != "delay" && key != "reason") {
      return std::string(kBeforeShape) + "; unknown field '" + key + "'";
    }
  }
  if (value.contains("veto") && value.contains("delay")) {
    return std::string(kBeforeShape) + "; not both veto and delay";
  }
  if (value.contains("reason") && !value["reason"].is_string()) return "operation.before: reason must be a string";
  if (value.contains("veto")) {
    if (!value["veto"].is_string() || value["veto"].get<std::string>().empty()) {
      return "operation.before: veto must be a non-empty string (the reason)";
    }
    if (value.contains("reason")) return "operation.before: a veto is its own reason; drop 'reason'";
    out->kind = HookVerdict::Kind::kVeto;
    out->hook = hook;
    out->reason = cut(value["veto"].get<std::string>());
    return "";
  }
  if (!value.contains("delay")) return std::string(kBeforeShape) + "; reason alone says nothing";
  const Json& delay = value["delay"];
  if (!delay.is_number() || !std::isfinite(delay.get<double>()) || delay.get<double>() < 0) {
    return "operation.before: delay must be a number of seconds >= 0";
  }
  if (delay.get<double>() == 0) return "";
  out->kind = HookVerdict::Kind::kDelay;
  out->hook = hook;
  out->delay_seconds = delay.get<double>();
  out->reason = value.contains("reason") ? cut(value["reason"].get<std::string>()) : "";
  return "";
}

}  // namespace

HookEngine::HookEngine(const ScriptSetProvider& scripts, const Clock& clock, HookEngineOptions options)
    : scripts_(scripts), clock_(clock), options_(std::move(options)), loaded_("hook state") {}

HookEngine::~HookEngine() = default;

uint64_t HookEngine::loadedVersion() const { return loaded_.version(); }

Result<std::unique_ptr<HookEngine::Loaded>> HookEngine::load(std::shared_ptr<const ScriptSet> set) const {
  auto loaded = std::make_unique<Loaded>();
  loaded->set = std::move(set);
  LuaStateOptions state_options;
  state_options.limits = options_.limits;
  state_options.clock = &clock_;
  state_options.log = options_.log;
  TIDE_ASSIGN_OR_RETURN(loaded->state, LuaState::create(std::move(state_options)));
  LuaState& state = *loaded->state;
  if (LuaError e = prepareScriptState(state, loaded->set.get(), ScriptVerbs{}); !e.ok()) {
    return Status::internal("preparing the hook state: " + e.message);
  }
  setHookOutputDir(state, &options_.output_dir);
  if (LuaError e = state.call([&loaded](lua_State* L) {
        pushHookContext(L);
        loaded->ctx_ref = luaL_ref(L, LUA_REGISTRYINDEX);
      });
      !e.ok()) {
    return Status::internal("building the hooks' ctx: " + e.message);
  }
  for (const ScriptFile* file : loaded->set->ofKind(ScriptKind::kHook)) {
    Hook hook;
    hook.file = file;
    LoadedScript script;
    hook.load_error = loadScript(state, *file, &script);
    if (hook.load_error.ok()) {
      hook.ref = script.ref;
      hook.budget = script.budget;
      hook.fail_open = script.fail_open;
      hook.load_error = state.call(hook.budget, [&hook](lua_State* L) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, hook.ref);
        lua_getfield(L, -1, "on");
        if (lua_type(L, -1) != LUA_TTABLE) return;
        lua_pushnil(L);
        while (lua_next(L, -2)) {
          if (lua_type(L, -2) == LUA_TSTRING && lua_isfunction(L, -1)) hook.events.insert(lua_tostring(L, -2));
          lua_pop(L, 1);
        }
      });
    }
    loaded->hooks.push_back(std::move(hook));
  }
  return loaded;
}

Result<HookEngine::Loaded*> HookEngine::refresh() {
  TIDE_RETURN_IF_ERROR(loaded_.ensure(scripts_.current(),
                                      [this](std::shared_ptr<const ScriptSet> set) { return load(std::move(set)); }));
  return loaded_.get();
}

LuaError HookEngine::call(Loaded& loaded, const Hook& hook, const std::string& event, const Json& arg, Json* result) {
  std::string problem;
  LuaError e = loaded.state->call(hook.budget, [&](lua_State* L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, hook.ref);
    lua_getfield(L, -1, "on");
    if (lua_type(L, -1) != LUA_TTABLE) luaL_error(L, "%s: on is no longer a table", hook.file->path.c_str());
    lua_getfield(L, -1, event.c_str());
    if (!lua_isfunction(L, -1)) {
      luaL_error(L, "%s: on[\"%s\"] is no longer a function", hook.file->path.c_str(), event.c_str());
    }
    pushReadOnlyJson(L, arg);
    lua_rawgeti(L, LUA_REGISTRYINDEX, loaded.ctx_ref);
    lua_call(L, 2, 1);
    if (!result) return;
    auto value = toJson(L, -1);
    if (!value.isOk()) {
      problem = event + " returned something that is not data: " + value.status().message();
      return;
    }
    *result = std::move(value).value();
  });
  if (e.ok() && !problem.empty()) e = {LuaErrorClass::kRuntime, problem};
  if (!e.ok()) e.message = naming(hook.file->path, e.message);
  return e;
}

HookVerdict HookEngine::before(const Json& op) {
  HookVerdict verdict;
  const std::string event = "operation.before";
  // Records `failure`; true when it holds the operation (the hook does not fail open).
  auto failed = [&verdict](HookFailure failure, bool fail_open) {
    failure.failed_open = fail_open;
    verdict.failures.push_back(failure);
    if (fail_open) return false;
    verdict.kind = HookVerdict::Kind::kVeto;
    verdict.hook = failure.hook.empty() ? "host" : failure.hook;
    verdict.reason = cut(failure.event + " failed: " + failure.error);
    verdict.delay_seconds = 0;
    return true;
  };
  Result<Loaded*> loaded = refresh();
  if (!loaded.isOk()) {
    const bool no_hooks = scripts_.current()->ofKind(ScriptKind::kHook).empty();
    failed({"", event, "the hooks could not be loaded: " + loaded.status().message(), LuaErrorClass::kMemory},
           no_hooks);
    return verdict;
  }
  for (const auto& [path, file] : (*loaded)->set->failed) {
    if (file.kind == ScriptKind::kHook) {
      failed({file.shownName(), event, file.reason(), LuaErrorClass::kLoad}, false);
      return verdict;
    }
  }
  for (const Hook& hook : (*loaded)->hooks) {
    const std::string& name = hook.file->name.empty() ? hook.file->path : hook.file->name;
    if (!hook.load_error.ok()) {
      // Whether it fails open is unknown when it did not load.
      if (failed({name, event, naming(hook.file->path, hook.load_error.message), hook.load_error.error_class}, false)) {
        return verdict;
      }
      continue;
    }
    if (!hook.events.count(event)) continue;
    Json returned;
    if (LuaError e = call(**loaded, hook, event, op, &returned); !e.ok()) {
      if (failed({name, event, e.message, e.error_class}, hook.fail_open)) return verdict;
      continue;
    }
    HookVerdict said;
    if (std::string problem = readBefore(returned, name, &said); !problem.empty()) {
      if (failed({name, event, hook.file->path + ": " + problem, LuaErrorClass::kRuntime}, hook.fail_open)) {
        return verdict;
      }
      continue;
    }
    if (said.kind == HookVerdict::Kind::kVeto) {
      said.failures = std::move(verdict.failures);
      return said;
    }
    if (said.kind == HookVerdict::Kind::kDelay && said.delay_seconds > verdict.delay_seconds) {
      verdict.kind = HookVerdict::Kind::kDelay;
      verdict.hook = said.hook;
      verdict.reason = said.reason;
      verdict.delay_seconds = said.delay_seconds;
    }
  }
  return verdict;
}

std::vector<HookFailure> HookEngine::notify(const std::string& event, const Json& arg) {
  std::vector<HookFailure> failures;
  if (!isHookEvent(event) || event == "operation.before") {
    failures.push_back(
        {"", event, "notify: '" + event + "' is not an event hooks are notified of", LuaErrorClass::kRuntime});
    return failures;
  }
  Result<Loaded*> loaded = refresh();
  if (!loaded.isOk()) {
    failures.push_back({"", event, loaded.status().message(), LuaErrorClass::kMemory});
    return failures;
  }
  for (const Hook& hook : (*loaded)->hooks) {
    const std::string& name = hook.file->name.empty() ? hook.file->path : hook.file->name;
    if (!hook.load_error.ok()) {
      failures.push_back({name, event, naming(hook.file->path, hook.load_error.message), hook.load_error.error_class});
      continue;
    }
    if (!hook.events.count(event)) continue;
    if (LuaError e = call(**loaded, hook, event, arg, nullptr); !e.ok()) {
      failures.push_back({name, event, e.message, e.error_class});
    }
  }
  return failures;
}

}  // namespace tide::lua
