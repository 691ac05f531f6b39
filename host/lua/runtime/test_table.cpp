#include "host/lua/runtime/test_table.h"

#include <lua.hpp>

namespace tide::lua {
std::string fieldString(lua_State* L, int table, const char* key) {
  lua_getfield(L, table, key);
  std::string value = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
  lua_pop(L, 1);
  return value;
}

std::string TestTable::read(lua_State* L, int script, const ReadCase& read_case) const {
  lua_pushliteral(L, "tests");
  lua_rawget(L, script);
  if (lua_isnil(L, -1)) return "";
  const int tests = lua_gettop(L);
  const int n = static_cast<int>(lua_objlen(L, tests));
  for (int i = 1; i <= n; ++i) {
    const std::string label = "tests[" + std::to_string(i) + "]";
    lua_rawgeti(L, tests, i);
    const int item = lua_gettop(L);
    if (lua_type(L, item) != LUA_TTABLE) return label + " must be a table";
    lua_pushnil(L);
    while (lua_next(L, item)) {
      bool known = false;
      for (const char* field : case_fields_) {
        known = known || (lua_type(L, -2) == LUA_TSTRING && std::string(lua_tostring(L, -2)) == field);
      }
      lua_pop(L, 1);
      if (!known) {
        std::string fields;
        for (const char* field : case_fields_) {
          fields += (fields.empty() ? "" : ", ") + std::string(field);
        }
        return label + " has an unknown field (known: " + fields + ")";
      }
    }
    TestCaseItem c;
    c.index = i;
    c.name = fieldString(L, item, "name");
    if (c.name.empty()) c.name = "case " + std::to_string(i);
    c.label = label + " (" + c.name + ")";
    if (std::string problem = read_case(L, item, c); !problem.empty()) return problem;
    lua_settop(L, tests);
  }
  return "";
}

std::shared_ptr<ScriptSet> testSetOf(const ScriptFile& script, const ScriptSet& libs) {
  auto set = std::make_shared<ScriptSet>();
  for (const ScriptFile* lib : libs.ofKind(ScriptKind::kLib)) set->files[lib->path] = *lib;
  set->files[script.path] = script;
  return set;
}

}  // namespace tide::lua
