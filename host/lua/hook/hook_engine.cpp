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
    : scripts_(scripts), clock_(clock), options_(std::move(options)) {}

HookEngine::~HookEngine() {
  hooks_.clear();
  state_.reset();  // before set_, whose files the state's libs point into
}

uint64_t HookEngine::loadedVersion() const { return state_ && set_ ? set_->version : 0; }

bool HookEngine::refresh(std::string* failure) {
  std::shared_ptr<const ScriptSet> set = scripts_.current();
  if (state_ && set_ && set_->version == set->version) return true;
  hooks_.clear();
  state_.reset();  // free the old state before building the new one
  set_ = std::move(set);

  LuaStateOptions state_options;
  state_options.limits = options_.limits;
  state_options.clock = &clock_;
  state_options.log = options_.log;
  auto created = LuaState::create(std::move(state_options));
  if (!created.isOk()) {
    *failure = "cannot create the hooks' Lua state: " + created.status().message();
    return false;
  }
  std::unique_ptr<LuaState> state = std::move(created).value();
  if (LuaError e = prepareScriptState(*state, set_.get()); !e.ok()) {
    *failure = "preparing the hooks' Lua state: " + e.message;
    return false;
  }
  setHookOutputDir(*state, &options_.output_dir);
  if (LuaError e = state->call([this](lua_State* L) {
        pushHookContext(L);
        ctx_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
      });
      !e.ok()) {
    *failure = "building the hooks' ctx: " + e.message;
    return false;
  }
  for (const ScriptFile* file : set_->ofKind(ScriptKind::kHook)) {
    Hook hook;
    hook.file = file;
    LoadedScript loaded;
    hook.load_error = loadScript(*state, *file, &loaded);
    if (hook.load_error.ok()) {
      hook.ref = loaded.ref;
      hook.load_error = state->call([&hook](lua_State* L) {
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
    hooks_.push_back(std::move(hook));
  }
  state_ = std::move(state);
  return true;
}

LuaError HookEngine::call(const Hook& hook, const std::string& event, const Json& arg, Json* result) {
  std::string problem;
  LuaError e = state_->call([&](lua_State* L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, hook.ref);
    lua_getfield(L, -1, "on");
    if (lua_type(L, -1) != LUA_TTABLE) luaL_error(L, "%s: on is no longer a table", hook.file->path.c_str());
    lua_getfield(L, -1, event.c_str());
    if (!lua_isfunction(L, -1)) {
      luaL_error(L, "%s: on[\"%s\"] is no longer a function", hook.file->path.c_str(), event.c_str());
    }
    pushReadOnlyJson(L, arg);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx_ref_);
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
  std::string failure;
  if (!refresh(&failure)) {
    verdict.failures.push_back({"", event, failure, LuaErrorClass::kMemory});
    return verdict;
  }
  for (const Hook& hook : hooks_) {
    const std::string& name = hook.file->name.empty() ? hook.file->path : hook.file->name;
    if (!hook.load_error.ok()) {
      verdict.failures.push_back({name, event, naming(hook.file->path, hook.load_error.message),
                                  hook.load_error.error_class});
      continue;
    }
    if (!hook.events.count(event)) continue;
    Json returned;
    if (LuaError e = call(hook, event, op, &returned); !e.ok()) {
      verdict.failures.push_back({name, event, e.message, e.error_class});
      continue;
    }
    HookVerdict said;
    if (std::string problem = readBefore(returned, name, &said); !problem.empty()) {
      verdict.failures.push_back({name, event, hook.file->path + ": " + problem, LuaErrorClass::kRuntime});
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
    failures.push_back({"", event, "notify: '" + event + "' is not an event hooks are notified of",
                        LuaErrorClass::kRuntime});
    return failures;
  }
  std::string failure;
  if (!refresh(&failure)) {
    failures.push_back({"", event, failure, LuaErrorClass::kMemory});
    return failures;
  }
  for (const Hook& hook : hooks_) {
    const std::string& name = hook.file->name.empty() ? hook.file->path : hook.file->name;
    if (!hook.load_error.ok()) {
      failures.push_back({name, event, naming(hook.file->path, hook.load_error.message), hook.load_error.error_class});
      continue;
    }
    if (!hook.events.count(event)) continue;
    if (LuaError e = call(hook, event, arg, nullptr); !e.ok()) {
      failures.push_back({name, event, e.message, e.error_class});
    }
  }
  return failures;
}

}  // namespace tide::lua
