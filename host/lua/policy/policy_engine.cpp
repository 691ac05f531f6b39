#include "host/lua/policy/policy_engine.h"

#include <algorithm>

namespace tide::lua {
namespace {

model::Decision makeRecord(const std::string& policy, const std::string& sha256, const PolicyRun& run,
                           const std::string& at) {
  model::Decision record;
  record.policy = policy;
  record.script_sha256 = sha256;
  record.verdict = verdictName(run.verdict);
  record.reasons = Json::array();
  if (!run.reason.empty()) record.reasons.push_back(run.reason);
  record.duration_us = run.duration_us;
  record.error_class = errorClassName(run.error_class);
  record.at = at;
  return record;
}

PolicyRun failedRun(LuaErrorClass error_class, const std::string& message) {
  PolicyRun run;
  run.verdict = Verdict::kManual;
  run.error_class = error_class;
  run.reason = std::string(errorClassName(error_class)) + " error: " + message;
  return run;
}

// The policy names a plan restricts evaluation to, or nullopt for "every policy".
std::optional<std::vector<std::string>> selectedPolicies(const Json& op) {
  // find(), not contains() and operator[]: this runs for every decision.
  auto field = [](const Json& object, const char* key) -> const Json* {
    if (!object.is_object()) return nullptr;
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  };
  const Json* plan = field(op, "plan");
  const Json* approval = plan ? field(*plan, "approval") : nullptr;
  const Json* listed = approval ? field(*approval, "policies") : nullptr;
  if (!listed || !listed->is_array() || listed->empty()) return std::nullopt;
  const Json& policies = *listed;
  std::vector<std::string> names;
  for (const Json& name : policies) {
    if (name.is_string()) names.push_back(name.get<std::string>());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

void to_json(Json& j, const Evaluation& evaluation) {
  Json decisions = Json::array();
  for (const PolicyDecision& decision : evaluation.decisions) {
    Json d = decision.record;
    d["level"] = decision.level;
    decisions.push_back(std::move(d));
  }
  Json logs = Json::array();
  for (const LogRecord& log : evaluation.logs) {
    logs.push_back({{"level", log.level}, {"where", log.where}, {"message", log.message}, {"fields", log.fields}});
  }
  j = Json{{"outcome", outcomeName(evaluation.outcome)},
           {"summary", evaluation.summary},
           {"overridable", evaluation.overridable},
           {"decisions", std::move(decisions)},
           {"logs", std::move(logs)},
           {"script_set_version", evaluation.script_set_version},
           {"at", evaluation.at}};
}

PolicyEngine::PolicyEngine(const ScriptSetProvider& scripts, const Clock& clock, PolicyEngineOptions options)
    : scripts_(scripts), clock_(clock), options_(options), interpreter_("policy state") {}

PolicyEngine::~PolicyEngine() = default;

uint64_t PolicyEngine::loadedVersion() const { return interpreter_.version(); }

size_t PolicyEngine::luaMemoryUsed() const { return interpreter_.get() ? interpreter_.get()->state().memoryUsed() : 0; }

Evaluation PolicyEngine::evaluate(const Json& op, PolicyDataSource& data) { return evaluate(op, data, clock_); }

Evaluation PolicyEngine::evaluate(const Json& op, PolicyDataSource& data, const Clock& clock) {
  Evaluation evaluation;
  evaluation.at = formatTimestamp(clock.now());
  std::shared_ptr<const ScriptSet> set = scripts_.current();
  evaluation.script_set_version = set->version;
  const Status built = interpreter_.ensure(set, [this](std::shared_ptr<const ScriptSet> scripts) {
    return PolicyInterpreter::create(std::move(scripts), options_.limits, clock_);
  });
  PolicyInterpreter* interpreter = interpreter_.get();

  const std::optional<std::vector<std::string>> names = selectedPolicies(op);
  std::vector<std::pair<const std::string*, const ScriptFile*>> policies;  // name -> file (null: missing)
  if (names) {
    policies.reserve(names->size());
    for (const std::string& name : *names) policies.emplace_back(&name, set->find(ScriptKind::kPolicy, name));
  } else {
    const std::vector<const ScriptFile*> files = set->ofKind(ScriptKind::kPolicy);
    policies.reserve(files.size());
    for (const ScriptFile* file : files) policies.emplace_back(&file->name, file);
  }
  evaluation.decisions.reserve(policies.size());

  LuaError op_error;
  if (interpreter) {
    interpreter->state().setClock(&clock);
    op_error = interpreter->setOp(op);
    interpreter->setLogCollector(&evaluation.logs);
  } else {
    op_error = {LuaErrorClass::kMemory, built.message()};
  }

  std::vector<PolicyVote> votes;
  votes.reserve(policies.size());
  bool hit_limit = op_error.error_class == LuaErrorClass::kTimeout || op_error.error_class == LuaErrorClass::kMemory;
  for (const auto& [name_of, file] : policies) {
    const std::string& name = *name_of;
    PolicyRun run;
    std::string level = "hard";
    if (!file) {
      run = failedRun(LuaErrorClass::kLoad, "policy '" + name + "' named by the plan is not loaded");
    } else {
      level = file->level.empty() ? "hard" : file->level;
      run = op_error.ok() ? interpreter->run(*file, data) : failedRun(op_error.error_class, op_error.message);
    }
    hit_limit = hit_limit || run.error_class == LuaErrorClass::kTimeout || run.error_class == LuaErrorClass::kMemory;
    // A failing policy fails closed: it asks a person, or denies where the host denies by
    // default.
    if (run.error_class != LuaErrorClass::kNone && options_.default_outcome == Outcome::kRejected) {
      run.verdict = Verdict::kDeny;
    }
    if (!run.applicable) continue;
    votes.push_back({name, parseLevel(level).value_or(Level::kHard), run.verdict, run.reason});
    evaluation.decisions.push_back({level, makeRecord(name, file ? file->sha256 : "", run, evaluation.at)});
  }
  if (interpreter) {
    interpreter->setLogCollector(nullptr);
    interpreter->state().setClock(&clock_);
    if (hit_limit) interpreter_.reset();
  }

  Combined combined = combineVotes(votes, options_.default_outcome);
  evaluation.outcome = combined.outcome;
  evaluation.summary = std::move(combined.summary);
  evaluation.overridable = combined.overridable;
  return evaluation;
}

}  // namespace tide::lua
