#include "host/lua/runtime/script_loader.h"

#include <fstream>
#include <sstream>

#include <lua.hpp>

#include "host/core/sha256.h"
#include "host/lua/runtime/bindings_tide.h"

namespace tide::lua {
namespace {

// Registry keys of the per-kind environments, indexed by ScriptKind.
char kEnvironmentKeys[4];

constexpr const char* const kHookEvents[] = {
    "operation.before", "operation.after", "instance.state", "deployment.state", "route",
};

void* environmentKey(ScriptKind kind) { return &kEnvironmentKeys[static_cast<int>(kind)]; }

[[noreturn]] void shapeError(lua_State* L, const ScriptFile& file, const std::string& message) {
  LuaState::from(L).markLoadError();
  lua_pushfstring(L, "%s: %s", file.path.c_str(), message.c_str());
  lua_error(L);
  __builtin_unreachable();
}

bool validName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Checks the table at `table` against the shape of `file.kind`, filling `out`.
void checkShape(lua_State* L, int table, const ScriptFile& file, LoadedScript* out) {
  bool has_name = false;
  bool has_entry = false;  // decide / reconcile / on
  const char* entry = file.kind == ScriptKind::kPolicy     ? "decide"
                      : file.kind == ScriptKind::kStrategy ? "reconcile"
                                                           : "on";
  out->level = file.kind == ScriptKind::kPolicy ? "hard" : "";
  lua_pushnil(L);
  while (lua_next(L, table)) {
    if (lua_type(L, -2) != LUA_TSTRING) shapeError(L, file, "the returned table may only have named fields");
    const std::string key = lua_tostring(L, -2);
    const int type = lua_type(L, -1);
    if (key == "name") {
      if (type != LUA_TSTRING || !validName(lua_tostring(L, -1))) {
        shapeError(L, file, "name must be a string of letters, digits, '-', '_' or '.'");
      }
      out->name = lua_tostring(L, -1);
      has_name = true;
    } else if (key == "description") {
      if (type != LUA_TSTRING) shapeError(L, file, "description must be a string");
    } else if (key == "tests") {
      if (file.kind == ScriptKind::kHook)
        shapeError(L, file, "hooks have no tests table (they are tested from the host side)");
      if (type != LUA_TTABLE) shapeError(L, file, "tests must be a table of cases");
      out->has_tests = true;
    } else if (file.kind == ScriptKind::kPolicy && key == "level") {
      const std::string level = type == LUA_TSTRING ? lua_tostring(L, -1) : "";
      if (level != "advisory" && level != "soft" && level != "hard") {
        shapeError(L, file, "level must be \"advisory\", \"soft\" or \"hard\"");
      }
      out->level = level;
    } else if (file.kind == ScriptKind::kPolicy && key == "applies") {
      if (type != LUA_TFUNCTION) shapeError(L, file, "applies must be a function(op)");
    } else if (file.kind == ScriptKind::kHook && key == "fail_open") {
      if (type != LUA_TBOOLEAN) shapeError(L, file, "fail_open must be true or false");
      out->fail_open = lua_toboolean(L, -1) != 0;
    } else if (file.kind == ScriptKind::kStrategy && key == "params") {
      if (type != LUA_TTABLE) shapeError(L, file, "params must be a table");
    } else if (key == entry) {
      if (file.kind == ScriptKind::kHook) {
        if (type != LUA_TTABLE) shapeError(L, file, "on must be a table of event handlers");
        lua_pushnil(L);
        while (lua_next(L, -2)) {
          bool known = false;
          for (const char* event : kHookEvents)
            known = known || (lua_type(L, -2) == LUA_TSTRING && std::string(lua_tostring(L, -2)) == event);
          const std::string field = lua_type(L, -2) == LUA_TSTRING
                                        ? "on[\"" + std::string(lua_tostring(L, -2)).substr(0, 64) + "\"]"
                                        : std::string("on[") + luaL_typename(L, -2) + "]";
          if (!known)
            shapeError(L, file,
                       field +
                           " is an unknown event (known: operation.before, operation.after, "
                           "instance.state, deployment.state, route)");
          if (lua_type(L, -1) != LUA_TFUNCTION) shapeError(L, file, field + " must be a function(arg, ctx)");
          lua_pop(L, 1);
        }
      } else if (type != LUA_TFUNCTION) {
        shapeError(L, file, std::string(entry) + " must be a function");
      }
      has_entry = true;
    } else {
      shapeError(L, file, "unknown field '" + key + "' in the returned table");
    }
    lua_pop(L, 1);
  }
  if (!has_name) shapeError(L, file, "the returned table needs a name");
  if (!has_entry) shapeError(L, file, std::string("the returned table needs ") + entry);
}

}  // namespace

std::span<const Verb> ScriptVerbs::of(ScriptKind kind) const {
  switch (kind) {
    case ScriptKind::kPolicy: return policy;
    case ScriptKind::kStrategy: return strategy;
    case ScriptKind::kHook:
    case ScriptKind::kLib: return {};
  }
  return {};
}

std::span<const char* const> hookEvents() { return kHookEvents; }

Result<ScriptFile> readScriptFile(const std::filesystem::path& file, const std::string& display_path, ScriptKind kind) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Status::notFound("cannot read " + file.string());
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::unavailable("error reading " + file.string());
  ScriptFile out;
  out.path = display_path;
  out.kind = kind;
  out.text = text.str();
  out.sha256 = sha256Hex(out.text);
  if (kind == ScriptKind::kLib) out.name = file.stem().string();
  return out;
}

LuaError prepareScriptState(LuaState& state, const ScriptSet* set, const ScriptVerbs& verbs) {
  setLibraries(state, set);
  return state.call([&verbs](lua_State* L) {
    for (ScriptKind kind : {ScriptKind::kPolicy, ScriptKind::kStrategy, ScriptKind::kHook, ScriptKind::kLib}) {
      lua_pushlightuserdata(L, environmentKey(kind));
      pushEnvironment(L, verbs.of(kind));
      lua_rawset(L, LUA_REGISTRYINDEX);
    }
  });
}

LuaError loadScript(LuaState& state, const ScriptFile& file, LoadedScript* out) {
  *out = LoadedScript{};
  if (file.kind != ScriptKind::kLib) out->budget = state.newBudget();
  return state.call(out->budget, [&file, out](lua_State* L) {
    lua_pushlightuserdata(L, environmentKey(file.kind));
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (lua_isnil(L, -1)) luaL_error(L, "the state was not prepared for scripts");
    const int env = lua_gettop(L);
    if (file.kind == ScriptKind::kLib) {
      lua_getfield(L, env, "tide");
      lua_getfield(L, -1, "lib");
      lua_getfield(L, -1, file.name.c_str());
      out->name = file.name;
      return;
    }
    loadTextChunk(L, file.text, file.path);
    lua_pushvalue(L, env);
    lua_setfenv(L, -2);
    lua_call(L, 0, 1);
    if (lua_type(L, -1) != LUA_TTABLE) {
      shapeError(L, file, std::string("the file must return a table, not ") + luaL_typename(L, -1));
    }
    checkShape(L, lua_gettop(L), file, out);
    out->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  });
}

}  // namespace tide::lua
