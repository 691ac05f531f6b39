#include "host/lua/strategy/strategy_interpreter.h"

#include <chrono>
#include <cmath>
#include <set>
#include <unordered_set>

#include <lua.hpp>

#include "host/lua/runtime/bindings_json.h"
#include "host/lua/runtime/bindings_readonly.h"
#include "host/lua/runtime/test_table.h"
#include "host/lua/strategy/bindings_strategy.h"
#include "host/model/states.h"

namespace tide::lua {
namespace {

constexpr const char* kStrategyCaseFields[] = {"name", "r", "expect", "check", "expect_state", "expect_error"};
constexpr TestTable kStrategyTests(kStrategyCaseFields);
constexpr const char* kSignals[] = {"promote", "promote_full", "abort", "pause", "resume"};

void setDefault(Json& object, const char* key, Json value) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) object[key] = std::move(value);
}

// The field `key` of `object` made an object ({} when missing); error when it is not one.
Status objectField(Json& object, const char* key, const std::string& where) {
  setDefault(object, key, Json::object());
  if (!object[key].is_object()) {
    return Status::invalidArgument("rollout snapshot: " + where + key + " must be an object");
  }
  return Status::ok();
}

Status stringFields(Json& object, std::initializer_list<const char*> keys, const std::string& where) {
  for (const char* key : keys) {
    setDefault(object, key, "");
    if (!object[key].is_string()) {
      return Status::invalidArgument("rollout snapshot: " + where + key + " must be a string");
    }
  }
  return Status::ok();
}

bool isNonNegativeInteger(const Json& value) {
  return value.is_number() && value.get<double>() >= 0 && std::floor(value.get<double>()) == value.get<double>();
}

double unixSeconds(TimePoint t) {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count()) / 1e6;
}

Status normalizeInstance(Json& instance, size_t i, const std::string& deployment_id) {
  const std::string where = "instances[" + std::to_string(i) + "].";
  if (!instance.is_object()) {
    return Status::invalidArgument("rollout snapshot: instances[" + std::to_string(i) + "] must be an object");
  }
  TIDE_RETURN_IF_ERROR(
      stringFields(instance, {"name", "deployment_id", "state", "node", "update_domain", "ready_since"}, where));
  setDefault(instance, "version", instance["deployment_id"].get<std::string>() == deployment_id ? "new" : "old");
  if (instance["version"] != "new" && instance["version"] != "old") {
    return Status::invalidArgument("rollout snapshot: " + where + "version must be \"new\" or \"old\"");
  }
  setDefault(instance, "healthy", false);
  setDefault(instance, "ready_seconds", 0);
  TIDE_RETURN_IF_ERROR(objectField(instance, "coordinates", where));
  for (const char* key : {"operation", "last_operation"}) {
    if (!instance.contains(key)) instance[key] = nullptr;
    if (!instance[key].is_null() && !instance[key].is_object()) {
      return Status::invalidArgument("rollout snapshot: " + where + key + " must be an object or null");
    }
  }
  instance["ready"] = instance["state"] == model::toString(model::RuntimeState::kRunning) &&
                      instance["healthy"] == true && instance["operation"].is_null();
  return Status::ok();
}

Status statusOf(const LuaError& e, const std::string& path) {
  // Name the file even when Lua could not (a refused allocation has no line).
  const std::string message = (e.message.find(path) == std::string::npos ? path + ": " : "") + validUtf8(e.message);
  switch (e.error_class) {
    case LuaErrorClass::kTimeout: return Status::deadlineExceeded(message);
    case LuaErrorClass::kMemory: return Status::resourceExhausted(message);
    default: return Status::unprocessable(message);
  }
}

// Every instance an action names is in the snapshot and named once; at most one terminal
// action.
Status checkActions(const std::vector<StrategyAction>& actions, const Json& snapshot) {
  std::unordered_set<std::string> known;  // filled only when an action names instances
  for (const StrategyAction& action : actions) {
    if (action.instances.empty() || !known.empty()) continue;
    for (const Json& instance : snapshot["instances"]) known.insert(instance["name"].get<std::string>());
  }
  std::set<std::string> named;
  int terminal = 0;
  for (const StrategyAction& action : actions) {
    const char* kind = actionKindName(action.kind);
    for (const std::string& name : action.instances) {
      if (!known.count(name)) {
        return Status::unprocessable(std::string(kind) + " names '" + name +
                                     "', which is not an instance of this rollout");
      }
      if (!named.insert(name).second) {
        return Status::unprocessable("instance '" + name + "' is named by more than one action");
      }
    }
    using Kind = StrategyAction::Kind;
    terminal += action.kind == Kind::kComplete || action.kind == Kind::kFail || action.kind == Kind::kRollback;
  }
  if (terminal > 1) {
    return Status::unprocessable("at most one of complete, fail and rollback may be returned");
  }
  return Status::ok();
}

// Reads the strategy case at `item` into `cases`; "" or what is wrong with it.
std::string readCase(lua_State* L, int item, const TestCaseItem& item_info, std::vector<StrategyTestCase>* cases) {
  const std::string& label = item_info.label;
  StrategyTestCase c;
  c.index = item_info.index;
  c.name = item_info.name;
  c.expect_error = fieldString(L, item, "expect_error");

  lua_getfield(L, item, "r");
  if (!lua_isnil(L, -1)) {
    auto r = toJson(L, -1);
    if (!r.isOk() || !r->is_object()) return label + ": r must be a table of named fields";
    c.r = std::move(r).value();
  }
  lua_getfield(L, item, "expect");
  if (!lua_isnil(L, -1)) {
    auto expect = toJson(L, -1);
    std::vector<StrategyAction> actions;
    Status parsed = expect.isOk() ? parseStrategyActions(*expect, &actions) : expect.status();
    if (!parsed.isOk()) return label + ": expect must be a list of actions: " + parsed.message();
    c.expect = std::move(actions);
  }
  lua_getfield(L, item, "check");
  c.has_check = lua_isfunction(L, -1);
  if (!c.has_check && !lua_isnil(L, -1)) {
    return label + ": check must be a function(actions, state)";
  }
  lua_getfield(L, item, "expect_state");
  if (!lua_isnil(L, -1)) {
    auto state = toJson(L, -1);
    if (!state.isOk() || !state->is_object()) {
      return label + ": expect_state must be a table of named fields";
    }
    c.expect_state = std::move(state).value();
  }
  if (!c.expect && !c.has_check && c.expect_error.empty()) {
    return label + " needs expect, check or expect_error";
  }
  cases->push_back(std::move(c));
  return "";
}

}  // namespace

Result<Json> normalizeRolloutSnapshot(Json snapshot, const Json& params, const Clock& clock) {
  if (!snapshot.is_object() && !snapshot.is_null()) {
    return Status::invalidArgument("rollout snapshot: must be an object");
  }
  Json out = snapshot.is_object() ? std::move(snapshot) : Json::object();

  TIDE_RETURN_IF_ERROR(objectField(out, "deployment", ""));
  Json& deployment = out["deployment"];
  TIDE_RETURN_IF_ERROR(stringFields(deployment, {"id", "state", "created_at"}, "deployment."));
  setDefault(deployment, "count", 0);
  if (!isNonNegativeInteger(deployment["count"])) {
    return Status::invalidArgument("rollout snapshot: deployment.count must be a non-negative integer");
  }
  TIDE_RETURN_IF_ERROR(objectField(deployment, "coordinates", "deployment."));
  out["count"] = deployment["count"];

  if (!out.contains("previous")) out["previous"] = nullptr;
  if (!out["previous"].is_null() && !out["previous"].is_object()) {
    return Status::invalidArgument("rollout snapshot: previous must be an object or null");
  }
  if (!out.contains("restore")) out["restore"] = nullptr;
  if (!out["restore"].is_null() && !out["restore"].is_object()) {
    return Status::invalidArgument("rollout snapshot: restore must be an object or null");
  }
  TIDE_RETURN_IF_ERROR(objectField(out, "plan", ""));
  TIDE_RETURN_IF_ERROR(stringFields(out["plan"], {"name", "namespace", "service_name"}, "plan."));

  setDefault(out, "instances", Json::array());
  if (out["instances"] == Json::object()) out["instances"] = Json::array();  // {} from Lua
  if (!out["instances"].is_array()) {
    return Status::invalidArgument("rollout snapshot: instances must be a list");
  }
  Json counts = {{"total", 0},     {"new", 0},       {"old", 0},      {"ready", 0},
                 {"new_ready", 0}, {"old_ready", 0}, {"in_flight", 0}};
  const std::string deployment_id = deployment["id"].get<std::string>();
  for (size_t i = 0; i < out["instances"].size(); ++i) {
    Json& instance = out["instances"][i];
    TIDE_RETURN_IF_ERROR(normalizeInstance(instance, i, deployment_id));
    const std::string version = instance["version"].get<std::string>();
    const bool ready = instance["ready"].get<bool>();
    counts["total"] = counts["total"].get<int64_t>() + 1;
    counts[version] = counts[version].get<int64_t>() + 1;
    counts["ready"] = counts["ready"].get<int64_t>() + (ready ? 1 : 0);
    counts[version + "_ready"] = counts[version + "_ready"].get<int64_t>() + (ready ? 1 : 0);
    counts["in_flight"] = counts["in_flight"].get<int64_t>() + (instance["operation"].is_null() ? 0 : 1);
  }
  out["counts"] = std::move(counts);
  out["params"] = params;

  if (out.contains("now_unix") && !out["now_unix"].is_null()) {
    if (!out["now_unix"].is_number()) {
      return Status::invalidArgument("rollout snapshot: now_unix must be a number");
    }
    Result<TimePoint> now = timeFromUnixSeconds(out["now_unix"].get<double>());
    if (!now.isOk()) return Status::invalidArgument("rollout snapshot: now_unix: " + now.status().message());
    setDefault(out, "now", formatTimestamp(*now));
  } else if (out.contains("now") && !out["now"].is_null()) {
    auto now = out["now"].is_string() ? parseTimestamp(out["now"].get<std::string>())
                                      : Result<TimePoint>(Status::invalidArgument(""));
    if (!now.isOk()) {
      return Status::invalidArgument("rollout snapshot: now must be an RFC 3339 timestamp");
    }
    out["now_unix"] = unixSeconds(*now);
  } else {
    const TimePoint now = clock.now();
    out["now"] = formatTimestamp(now);
    out["now_unix"] = unixSeconds(now);
  }

  TIDE_RETURN_IF_ERROR(objectField(out, "signals", ""));
  for (const char* signal : kSignals) {
    setDefault(out["signals"], signal, false);
    if (!out["signals"][signal].is_boolean()) {
      return Status::invalidArgument(std::string("rollout snapshot: signals.") + signal + " must be true or false");
    }
  }
  TIDE_RETURN_IF_ERROR(objectField(out, "state", ""));
  if (out.contains("metrics") && out["metrics"] == Json::array()) out["metrics"] = Json::object();  // {} from Lua
  TIDE_RETURN_IF_ERROR(objectField(out, "metrics", ""));
  return out;
}

StrategyInterpreter::StrategyInterpreter(std::shared_ptr<const ScriptSet> set, std::unique_ptr<LuaState> state,
                                         const Clock& clock)
    : set_(std::move(set)), state_(std::move(state)), clock_(clock) {}

Result<std::unique_ptr<StrategyInterpreter>> StrategyInterpreter::create(std::shared_ptr<const ScriptSet> set,
                                                                         const LuaLimits& limits, const Clock& clock) {
  LuaStateOptions options;
  options.limits = limits;
  options.clock = &clock;
  TIDE_ASSIGN_OR_RETURN(std::unique_ptr<LuaState> state, LuaState::create(std::move(options)));
  std::unique_ptr<StrategyInterpreter> interpreter(new StrategyInterpreter(std::move(set), std::move(state), clock));
  StrategyInterpreter* self = interpreter.get();
  self->state_->setLogSink([self](const LogRecord& record) {
    if (!self->logs_) return;
    LogRecord clean = record;
    clean.message = validUtf8(record.message);
    self->logs_->push_back(std::move(clean));
  });
  if (LuaError e =
          prepareScriptState(*self->state_, self->set_.get(), ScriptVerbs{.policy = {}, .strategy = strategyVerbs()});
      !e.ok()) {
    return Status::internal("preparing the strategy state: " + e.message);
  }
  for (const ScriptFile* file : self->set_->ofKind(ScriptKind::kStrategy)) {
    Loaded loaded;
    if (LuaError e = loadScript(*self->state_, *file, &loaded.script); !e.ok()) {
      self->load_errors_[file->path] = statusOf(e, file->path);
      continue;
    }
    Result<Json> declared = Json();
    LuaError e = self->state_->call(loaded.script.budget, [&](lua_State* L) {
      lua_rawgeti(L, LUA_REGISTRYINDEX, loaded.script.ref);
      lua_getfield(L, -1, "params");
      declared = toJson(L, -1);
    });
    if (!e.ok()) {
      self->load_errors_[file->path] = statusOf(e, file->path);
      continue;
    }
    Result<ParamSpecs> specs = declared.isOk() ? parseParamSpecs(*declared) : Result<ParamSpecs>(declared.status());
    if (!specs.isOk()) {
      self->load_errors_[file->path] = Status::unprocessable(file->path + ": " + specs.status().message());
      continue;
    }
    loaded.params = std::move(specs).value();
    self->loaded_[file->path] = std::move(loaded);
  }
  return interpreter;
}

Result<const StrategyInterpreter::Loaded*> StrategyInterpreter::find(const ScriptFile& strategy) const {
  if (auto it = load_errors_.find(strategy.path); it != load_errors_.end()) return it->second;
  auto it = loaded_.find(strategy.path);
  if (it == loaded_.end()) return Status::notFound(strategy.path + ": not loaded in this interpreter");
  return &it->second;
}

Result<Json> StrategyInterpreter::resolveParams(const ScriptFile& strategy, const Json& plan_params,
                                                const Json& deployment_params) const {
  TIDE_ASSIGN_OR_RETURN(const Loaded* loaded, find(strategy));
  return lua::resolveParams(loaded->script.name, loaded->params, plan_params, deployment_params);
}

Result<ParamSpecs> StrategyInterpreter::declaredParams(const ScriptFile& strategy) const {
  TIDE_ASSIGN_OR_RETURN(const Loaded* loaded, find(strategy));
  return loaded->params;
}

Result<StrategyResult> StrategyInterpreter::reconcile(const ScriptFile& strategy, Json snapshot) {
  const auto started = std::chrono::steady_clock::now();
  TIDE_ASSIGN_OR_RETURN(const Loaded* loaded, find(strategy));
  const Json none;
  auto field = [&](const char* key) -> const Json& {
    return snapshot.is_object() && snapshot.contains(key) ? snapshot[key] : none;
  };
  StrategyResult result;
  result.script_sha256 = strategy.sha256;
  TIDE_ASSIGN_OR_RETURN(result.params, lua::resolveParams(loaded->script.name, loaded->params, field("plan_params"),
                                                          field("deployment_params")));
  TIDE_ASSIGN_OR_RETURN(const Json normalized, normalizeRolloutSnapshot(std::move(snapshot), result.params, clock_));
  const auto allowance = kStrategyDeadlinePerInstance * static_cast<int64_t>(normalized["instances"].size());

  Json returned;
  logs_ = &result.logs;
  MetricBoard metrics{&normalized["metrics"], {}};
  setMetricBoard(*state_, &metrics);
  LuaError e = state_->call(loaded->script.budget, [&](lua_State* L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, loaded->script.ref);
    lua_getfield(L, -1, "reconcile");
    const int reconcile = lua_gettop(L);
    state_->hostInput([&] { pushRollout(L, normalized); }, allowance);
    const int state = lua_gettop(L);
    lua_pushvalue(L, reconcile);
    lua_pushvalue(L, state - 1);
    lua_call(L, 1, 1);
    auto value = toJson(L, -1);
    if (!value.isOk()) {
      luaL_error(L, "%s: reconcile must return a list of actions: %s", strategy.path.c_str(),
                 value.status().message().c_str());
    }
    returned = std::move(value).value();
    auto saved = toJson(L, state);
    if (!saved.isOk() || !saved->is_object()) {
      luaL_error(L, "%s: r.state cannot be saved: %s", strategy.path.c_str(),
                 saved.isOk() ? "it must hold named fields, not a list" : saved.status().message().c_str());
    }
    result.state = std::move(saved).value();
  });
  logs_ = nullptr;
  setMetricBoard(*state_, nullptr);
  if (!e.ok()) return statusOf(e, strategy.path);
  result.metric_queries.assign(metrics.asked.begin(), metrics.asked.end());

  Status parsed = parseStrategyActions(returned, &result.actions);
  if (parsed.isOk()) parsed = checkActions(result.actions, normalized);
  if (!parsed.isOk()) {
    return Status::unprocessable(strategy.path + ": reconcile returned " + parsed.message());
  }
  result.duration_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
  return result;
}

Result<std::vector<StrategyTestCase>> StrategyInterpreter::testCases(const ScriptFile& strategy) {
  TIDE_ASSIGN_OR_RETURN(const Loaded* loaded, find(strategy));
  std::vector<StrategyTestCase> cases;
  std::string problem;
  LuaError e = state_->call(loaded->script.budget, [&](lua_State* L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, loaded->script.ref);
    problem = kStrategyTests.read(L, lua_gettop(L), [&cases](lua_State* L, int item, const TestCaseItem& c) {
      return readCase(L, item, c, &cases);
    });
  });
  if (!e.ok()) return statusOf(e, strategy.path);
  if (!problem.empty()) return Status::invalidArgument(strategy.path + ": " + problem);
  return cases;
}

std::string StrategyInterpreter::runCheck(const ScriptFile& strategy, int index, const StrategyResult& result) {
  auto loaded = find(strategy);
  if (!loaded.isOk()) return loaded.status().message();
  std::string failure;
  Json actions = Json::array();
  for (const StrategyAction& action : result.actions) actions.push_back(action);
  std::vector<LogRecord> logs;
  logs_ = &logs;
  LuaError e = state_->call((*loaded)->script.budget, [&](lua_State* L) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, (*loaded)->script.ref);
    lua_getfield(L, -1, "tests");
    lua_rawgeti(L, -1, index);
    lua_getfield(L, -1, "check");
    pushJson(L, actions);
    pushJson(L, result.state);
    lua_call(L, 2, 2);
    if (lua_type(L, -2) == LUA_TBOOLEAN && !lua_toboolean(L, -2)) {
      failure = "check returned false";
      if (lua_type(L, -1) == LUA_TSTRING) failure += std::string(": ") + lua_tostring(L, -1);
    }
  });
  logs_ = nullptr;
  if (!e.ok()) return "check failed: " + validUtf8(e.message);
  return failure;
}

}  // namespace tide::lua
