#include "host/lua/policy/policy_interpreter.h"

#include <lua.hpp>

#include "host/lua/policy/bindings_policy.h"
#include "host/lua/runtime/bindings_json.h"
#include "host/lua/runtime/bindings_readonly.h"
#include "host/lua/runtime/test_table.h"

namespace tide::lua {
namespace {

constexpr const char* kCaseFields[] = {"name", "op", "ctx", "expect", "reason"};
constexpr TestTable kPolicyTests(kCaseFields);

void setDefault(Json& object, const char* key, Json value) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) object[key] = std::move(value);
}

Json& objectField(Json& object, const char* key) {
  setDefault(object, key, Json::object());
  return object[key];
}

// Reads the policy case at `item` into `cases`; "" or what is wrong with it.
std::string readCase(lua_State* L, int item, const TestCaseItem& item_info, std::vector<PolicyTestCase>* cases) {
  PolicyTestCase c;
  c.name = item_info.name;
  c.expect = fieldString(L, item, "expect");
  c.reason = fieldString(L, item, "reason");
  if (c.expect != "not_applicable" && !parseVerdict(c.expect)) {
    return item_info.label + ": expect must be approve, deny, manual, abstain or not_applicable";
  }
  for (auto [field, target] : {std::pair{"op", &c.op}, std::pair{"ctx", &c.ctx}}) {
    lua_getfield(L, item, field);
    if (!lua_isnil(L, -1)) {
      auto value = toJson(L, -1);
      if (!value.isOk() || !value->is_object()) {
        return item_info.label + ": " + field + " must be a table of named fields";
      }
      *target = std::move(value).value();
    }
    lua_pop(L, 1);
  }
  cases->push_back(std::move(c));
  return "";
}

}  // namespace

Json normalizeOp(const Json& op) {
  Json out = op.is_object() ? op : Json::object();
  setDefault(out, "id", 0);
  setDefault(out, "type", "");
  setDefault(out, "intent", "");
  setDefault(out, "requested_by", "");
  setDefault(out, "meta_instance", "");
  setDefault(out, "attempt", 1);
  if (Json& plan = objectField(out, "plan"); plan.is_object()) {
    setDefault(plan, "name", "");
    setDefault(plan, "namespace", "");
    setDefault(plan, "service_name", "");
    setDefault(plan, "approval", Json::object());
  }
  if (Json& deployment = objectField(out, "deployment"); deployment.is_object()) {
    setDefault(deployment, "id", "");
    setDefault(deployment, "old_coordinates", Json::array());
    setDefault(deployment, "new_coordinates", Json::array());
  }
  if (Json& node = objectField(out, "node"); node.is_object()) {
    setDefault(node, "name", "");
    setDefault(node, "update_domain", "");
    setDefault(node, "labels", Json::object());
  }
  return out;
}

PolicyInterpreter::PolicyInterpreter(std::shared_ptr<const ScriptSet> set, std::unique_ptr<LuaState> state)
    : set_(std::move(set)), state_(std::move(state)) {}

Result<std::unique_ptr<PolicyInterpreter>> PolicyInterpreter::create(std::shared_ptr<const ScriptSet> set,
                                                                     const LuaLimits& limits, const Clock& clock) {
  LuaStateOptions options;
  options.limits = limits;
  options.clock = &clock;
  TIDE_ASSIGN_OR_RETURN(std::unique_ptr<LuaState> state, LuaState::create(std::move(options)));
  std::unique_ptr<PolicyInterpreter> interpreter(new PolicyInterpreter(std::move(set), std::move(state)));
  PolicyInterpreter* self = interpreter.get();
  self->state_->setLogSink([self](const LogRecord& record) {
    if (!self->logs_) return;
    LogRecord clean = record;
    clean.message = validUtf8(record.message);
    self->logs_->push_back(std::move(clean));
  });
  if (LuaError e = prepareScriptState(*self->state_, self->set_.get()); !e.ok()) {
    return Status::internal("preparing the policy state: " + e.message);
  }
  if (LuaError e = self->state_->call([self](lua_State* L) {
        pushPolicyContext(L);
        self->ctx_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
      });
      !e.ok()) {
    return Status::internal("building ctx: " + e.message);
  }
  for (const ScriptFile* file : self->set_->ofKind(ScriptKind::kPolicy)) {
    LoadedScript loaded;
    LuaError e = loadScript(*self->state_, *file, &loaded);
    if (e.ok()) {
      self->loaded_[file->path] = loaded;
    } else {
      self->load_errors_[file->path] = e;
    }
  }
  return interpreter;
}

LuaError PolicyInterpreter::setOp(const Json& op) {
  const Json normalized = normalizeOp(op);
  return state_->call([this, &normalized](lua_State* L) {
    luaL_unref(L, LUA_REGISTRYINDEX, op_ref_);
    op_ref_ = LUA_NOREF;
    pushReadOnlyJson(L, normalized);
    op_ref_ = luaL_ref(L, LUA_REGISTRYINDEX);
  });
}

PolicyRun PolicyInterpreter::run(const ScriptFile& policy, PolicyDataSource& data) {
  const auto started = std::chrono::steady_clock::now();
  PolicyRun out;
  auto fail = [&out, &policy](const LuaError& e) {
    out.verdict = Verdict::kManual;
    out.error_class = e.error_class;
    // Name the file even when Lua could not (a refused allocation has no line).
    const std::string where = e.message.find(policy.path) == std::string::npos ? policy.path + ": " : "";
    out.reason = std::string(errorClassName(e.error_class)) + " error: " + where + validUtf8(e.message);
  };
  if (auto it = load_errors_.find(policy.path); it != load_errors_.end()) {
    fail(it->second);
    return out;
  }
  auto it = loaded_.find(policy.path);
  if (it == loaded_.end()) {
    fail({LuaErrorClass::kLoad, policy.path + ": not loaded in this evaluator"});
    return out;
  }
  const int policy_ref = it->second.ref;
  std::string verdict;
  std::string reason;
  bool applicable = true;
  setPolicyData(*state_, &data);
  LuaError e = state_->call([&](lua_State* L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, policy_ref);
    const int table = lua_gettop(L);
    lua_pushliteral(L, "applies");
    lua_rawget(L, table);
    if (lua_isfunction(L, -1)) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, op_ref_);
      lua_call(L, 1, 1);
      applicable = lua_toboolean(L, -1) != 0;
    }
    lua_settop(L, table);
    if (!applicable) return;
    lua_pushliteral(L, "decide");
    lua_rawget(L, table);
    lua_rawgeti(L, LUA_REGISTRYINDEX, op_ref_);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx_ref_);
    lua_call(L, 2, 1);
    if (lua_type(L, -1) != LUA_TTABLE && !isReadOnly(L, -1)) {
      luaL_error(L, "%s: decide must return approve(...), deny(...), manual(...) or abstain(), not %s",
                 policy.path.c_str(), luaL_typename(L, -1));
    }
    verdict = fieldString(L, lua_gettop(L), "verdict");
    reason = fieldString(L, lua_gettop(L), "reason");
    if (!parseVerdict(verdict)) {
      luaL_error(L, "%s: decide returned a table without a verdict; use approve, deny, manual or abstain",
                 policy.path.c_str());
    }
  });
  setPolicyData(*state_, nullptr);
  out.duration_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
  if (!e.ok()) {
    fail(e);
  } else if (!applicable) {
    out.applicable = false;
  } else {
    out.verdict = *parseVerdict(verdict);
    out.reason = validUtf8(reason);
  }
  return out;
}

Result<std::vector<PolicyTestCase>> PolicyInterpreter::testCases(const ScriptFile& policy) {
  if (auto it = load_errors_.find(policy.path); it != load_errors_.end()) {
    return Status::invalidArgument(it->second.message);
  }
  auto it = loaded_.find(policy.path);
  if (it == loaded_.end()) return Status::notFound(policy.path + ": not loaded");
  const int policy_ref = it->second.ref;
  std::vector<PolicyTestCase> cases;
  std::string problem;
  LuaError e = state_->call([&](lua_State* L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, policy_ref);
    problem = kPolicyTests.read(L, lua_gettop(L), [&cases](lua_State* L, int item, const TestCaseItem& c) {
      return readCase(L, item, c, &cases);
    });
  });
  if (!e.ok()) return Status::invalidArgument(e.message);
  if (!problem.empty()) return Status::invalidArgument(policy.path + ": " + problem);
  return cases;
}

}  // namespace tide::lua
