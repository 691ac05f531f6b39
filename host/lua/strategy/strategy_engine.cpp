#include "host/lua/strategy/strategy_engine.h"

#include <cmath>

#include "host/lua/strategy/strategy_interpreter.h"

namespace tide::lua {
namespace {

using Kind = StrategyAction::Kind;

constexpr std::pair<Kind, const char*> kKindNames[] = {
    {Kind::kCreate, "create"},     {Kind::kUpdate, "update"}, {Kind::kDelete, "delete"},
    {Kind::kRelocate, "relocate"}, {Kind::kPause, "pause"},   {Kind::kRoute, "route"},
    {Kind::kComplete, "complete"}, {Kind::kFail, "fail"},     {Kind::kRollback, "rollback"},
};

std::optional<Kind> parseKind(const std::string& name) {
  for (const auto& [kind, kind_name] : kKindNames) {
    if (name == kind_name) return kind;
  }
  return std::nullopt;
}

bool hasReason(Kind kind) {
  return kind == Kind::kPause || kind == Kind::kComplete || kind == Kind::kFail || kind == Kind::kRollback;
}

Status parseAction(const Json& item, StrategyAction* out) {
  if (!item.is_object() || !item.contains("action") || !item["action"].is_string()) {
    return Status::invalidArgument("is not an action (use create(...), update(...), ...)");
  }
  const std::string name = item["action"].get<std::string>();
  const std::optional<Kind> kind = parseKind(name);
  if (!kind) return Status::invalidArgument("has an unknown action '" + name + "'");
  out->kind = *kind;
  for (const auto& [key, value] : item.items()) {
    const bool known =
        key == "action" || (key == "count" && (*kind == Kind::kCreate || *kind == Kind::kDelete)) ||
        (key == "instances" && (*kind == Kind::kUpdate || *kind == Kind::kDelete || *kind == Kind::kRelocate)) ||
        (key == "reason" && hasReason(*kind)) || (key == "until_unix" && *kind == Kind::kPause) ||
        (key == "weights" && *kind == Kind::kRoute);
    if (!known) return Status::invalidArgument(name + " has an unexpected field '" + key + "'");
  }
  if (item.contains("count")) {
    const Json& count = item["count"];
    if (!count.is_number() || count.get<double>() < 0 || std::floor(count.get<double>()) != count.get<double>()) {
      return Status::invalidArgument(name + ": count must be a non-negative integer");
    }
    out->count = count.get<int64_t>();
  }
  if (item.contains("instances")) {
    const Json& instances = item["instances"];
    if (instances.is_object() && instances.empty()) {
      // {} from Lua: an empty list
    } else if (!instances.is_array()) {
      return Status::invalidArgument(name + ": instances must be a list of names");
    } else {
      for (const Json& instance : instances) {
        if (!instance.is_string() || instance.get<std::string>().empty()) {
          return Status::invalidArgument(name + ": instances must be a list of names");
        }
        out->instances.push_back(instance.get<std::string>());
      }
    }
  }
  if ((*kind == Kind::kCreate && !item.contains("count")) ||
      (*kind == Kind::kDelete && item.contains("count") == item.contains("instances"))) {
    return Status::invalidArgument(name + " needs a count" + (*kind == Kind::kDelete ? " or instances" : ""));
  }
  if ((*kind == Kind::kUpdate || *kind == Kind::kRelocate) && !item.contains("instances")) {
    return Status::invalidArgument(name + " needs instances");
  }
  if (*kind == Kind::kRelocate && out->instances.size() != 1) {
    return Status::invalidArgument("relocate names exactly one instance");
  }
  if (item.contains("reason")) {
    if (!item["reason"].is_string()) return Status::invalidArgument(name + ": reason must be a string");
    out->reason = item["reason"].get<std::string>();
  }
  if ((*kind == Kind::kPause || *kind == Kind::kFail || *kind == Kind::kRollback) && out->reason.empty()) {
    return Status::invalidArgument(name + " needs a reason");
  }
  if (item.contains("until_unix")) {
    if (!item["until_unix"].is_number()) {
      return Status::invalidArgument("pause: until_unix must be a number");
    }
    out->until_unix = item["until_unix"].get<double>();
  }
  if (*kind == Kind::kRoute) {
    const Json& weights = item.contains("weights") ? item["weights"] : Json();
    bool valid = weights.is_object() && !weights.empty();
    for (const auto& [target, weight] : weights.items()) {
      valid = valid && weight.is_number() && weight.get<double>() >= 0;
    }
    if (!valid) return Status::invalidArgument("route: weights must be an object of numbers >= 0");
    out->weights = weights;
  }
  return Status::ok();
}

bool isNoOp(const StrategyAction& action) {
  return (action.kind == Kind::kCreate && action.count == 0) ||
         (action.kind == Kind::kDelete && action.count == 0 && action.instances.empty()) ||
         (action.kind == Kind::kUpdate && action.instances.empty());
}

std::string quoted(const std::string& text) { return Json(text).dump(); }

}  // namespace

const char* actionKindName(StrategyAction::Kind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

void to_json(Json& j, const StrategyAction& action) {
  j = Json{{"action", actionKindName(action.kind)}};
  switch (action.kind) {
    case Kind::kCreate: j["count"] = action.count; break;
    case Kind::kDelete:
      if (action.instances.empty()) {
        j["count"] = action.count;
      } else {
        j["instances"] = action.instances;
      }
      break;
    case Kind::kUpdate:
    case Kind::kRelocate: j["instances"] = action.instances; break;
    case Kind::kRoute: j["weights"] = action.weights; break;
    case Kind::kPause:
      if (action.until_unix) j["until_unix"] = *action.until_unix;
      [[fallthrough]];
    case Kind::kComplete:
    case Kind::kFail:
    case Kind::kRollback:
      if (!action.reason.empty() || action.kind != Kind::kComplete) j["reason"] = action.reason;
      break;
  }
}

Status parseStrategyActions(const Json& actions, std::vector<StrategyAction>* out) {
  out->clear();
  if (actions.is_null() || (actions.is_object() && actions.empty())) return Status::ok();
  if (actions.is_object() && actions.contains("action")) {
    return Status::invalidArgument("a single action; return a list of actions, e.g. { create(1) }");
  }
  if (!actions.is_array()) {
    return Status::invalidArgument("something that is not a list of actions: " + actions.dump().substr(0, 80));
  }
  for (size_t i = 0; i < actions.size(); ++i) {
    StrategyAction action;
    if (Status s = parseAction(actions[i], &action); !s.isOk()) {
      return Status::invalidArgument("actions[" + std::to_string(i + 1) + "] " + s.message());
    }
    if (!isNoOp(action)) out->push_back(std::move(action));
  }
  return Status::ok();
}

std::string describeActions(const std::vector<StrategyAction>& actions) {
  if (actions.empty()) return "nothing";
  std::string out;
  for (const StrategyAction& action : actions) {
    if (!out.empty()) out += ", ";
    out += actionKindName(action.kind);
    out += "(";
    switch (action.kind) {
      case Kind::kCreate: out += std::to_string(action.count); break;
      case Kind::kDelete:
      case Kind::kUpdate:
      case Kind::kRelocate:
        if (action.instances.empty()) out += std::to_string(action.count);
        for (size_t i = 0; i < action.instances.size(); ++i) {
          out += (i ? ", " : "") + action.instances[i];
        }
        break;
      case Kind::kRoute: out += action.weights.dump(); break;
      case Kind::kPause:
        out += quoted(action.reason);
        if (action.until_unix) out += ", until " + Json(*action.until_unix).dump();
        break;
      case Kind::kComplete:
      case Kind::kFail:
      case Kind::kRollback:
        if (!action.reason.empty()) out += quoted(action.reason);
        break;
    }
    out += ")";
  }
  return out;
}

StrategyEngine::StrategyEngine(const ScriptSetProvider& scripts, const Clock& clock, LuaLimits limits)
    : scripts_(scripts), clock_(clock), limits_(limits), interpreter_("strategy state") {}

StrategyEngine::~StrategyEngine() = default;

uint64_t StrategyEngine::loadedVersion() const { return interpreter_.version(); }

Result<StrategyInterpreter*> StrategyEngine::refresh() {
  TIDE_RETURN_IF_ERROR(interpreter_.ensure(scripts_.current(), [this](std::shared_ptr<const ScriptSet> scripts) {
    return StrategyInterpreter::create(std::move(scripts), limits_, clock_);
  }));
  return interpreter_.get();
}

Result<StrategyResult> StrategyEngine::reconcile(const std::string& script, Json snapshot) {
  TIDE_ASSIGN_OR_RETURN(StrategyInterpreter * interpreter, refresh());
  const ScriptFile* file = interpreter->scripts().find(ScriptKind::kStrategy, script);
  if (!file) return Status::notFound("no rollout strategy named '" + script + "' is loaded");
  return interpreter->reconcile(*file, std::move(snapshot));
}

Result<Json> StrategyEngine::resolveParams(const std::string& script, const Json& plan_params,
                                           const Json& deployment_params) {
  TIDE_ASSIGN_OR_RETURN(StrategyInterpreter * interpreter, refresh());
  const ScriptFile* file = interpreter->scripts().find(ScriptKind::kStrategy, script);
  if (!file) return Status::notFound("no rollout strategy named '" + script + "' is loaded");
  return interpreter->resolveParams(*file, plan_params, deployment_params);
}

Result<ParamSpecs> StrategyEngine::declaredParams(const std::string& script) {
  TIDE_ASSIGN_OR_RETURN(StrategyInterpreter * interpreter, refresh());
  const ScriptFile* file = interpreter->scripts().find(ScriptKind::kStrategy, script);
  if (!file) return Status::notFound("no rollout strategy named '" + script + "' is loaded");
  return interpreter->declaredParams(*file);
}

}  // namespace tide::lua
