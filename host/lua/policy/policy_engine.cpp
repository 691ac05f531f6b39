#include "host/lua/policy/policy_engine.h"

#include <algorithm>
#include <optional>

namespace tide::lua {

// A loaded version, a file that failed validation, or a name the plan lists that no file
// declares (both of the latter vote as failing). Points into the ScriptSet it was selected
// from.
struct SelectedPolicy {
  const std::string* name;
  const ScriptFile* file = nullptr;
  const FailedScript* failed = nullptr;
  std::string level;  // advisory | soft | hard
};

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

// The policy names a plan lists in approval.policies, sorted, or nullopt when it lists none.
std::optional<std::vector<std::string>> listedPolicies(const Json& op) {
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

// The policies that decide `op`: every policy of `set` when the plan lists none; with a
// list, every hard and soft policy plus the advisory ones it names. A plan may add
// policies, never remove one that counts (fail closed). Files that failed validation take
// part alike, counting as hard when their level is unknown. By name.
std::vector<SelectedPolicy> selectPolicies(const ScriptSet& set,
                                           const std::optional<std::vector<std::string>>& listed) {
  auto isListed = [&listed](const std::string& name) {
    return listed && std::binary_search(listed->begin(), listed->end(), name);
  };
  auto counts = [&](const std::string& name, const std::string& level) {
    return !listed || level != "advisory" || isListed(name);
  };
  std::vector<SelectedPolicy> out;
  for (const ScriptFile* file : set.ofKind(ScriptKind::kPolicy)) {
    const std::string level = file->level.empty() ? "hard" : file->level;
    if (counts(file->name, level)) out.push_back({&file->name, file, nullptr, level});
  }
  for (const auto& [path, failed] : set.failed) {
    if (failed.kind != ScriptKind::kPolicy) continue;
    const std::string level = failed.level.empty() ? "hard" : failed.level;
    const std::string& name = failed.shownName();
    if (counts(name, level)) out.push_back({&name, nullptr, &failed, level});
  }
  if (listed) {
    for (const std::string& name : *listed) {
      const bool declared =
          std::any_of(out.begin(), out.end(), [&name](const SelectedPolicy& s) { return *s.name == name; });
      if (!declared) out.push_back({&name, nullptr, nullptr, "hard"});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const SelectedPolicy& a, const SelectedPolicy& b) { return *a.name < *b.name; });
  return out;
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
  if (evaluation.outcome == Outcome::kPendingApproval) {
    j["approvals"] = model::approvalsJson({evaluation.approvals, evaluation.overridable, {}});
  }
}

PolicyEngine::PolicyEngine(const ScriptSetProvider& scripts, const Clock& clock, PolicyEngineOptions options)
    : scripts_(scripts), clock_(clock), options_(options), interpreter_("policy state") {}

PolicyEngine::~PolicyEngine() = default;

const std::vector<SelectedPolicy>& PolicyEngine::defaultSelection(const std::shared_ptr<const ScriptSet>& set) {
  if (default_selection_set_ != set) {
    default_selection_ = selectPolicies(*set, std::nullopt);
    default_selection_set_ = set;
  }
  return default_selection_;
}

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

  const std::optional<std::vector<std::string>> listed = listedPolicies(op);
  std::vector<SelectedPolicy> listed_selection;
  if (listed) listed_selection = selectPolicies(*set, listed);
  const std::vector<SelectedPolicy>& policies = listed ? listed_selection : defaultSelection(set);
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
  for (const SelectedPolicy& policy : policies) {
    const std::string& name = *policy.name;
    const std::string& level = policy.level;
    PolicyRun run;
    if (policy.file) {
      run = op_error.ok() ? interpreter->run(*policy.file, data) : failedRun(op_error.error_class, op_error.message);
    } else if (policy.failed) {
      run = failedRun(LuaErrorClass::kLoad, policy.failed->reason());
    } else {
      run = failedRun(LuaErrorClass::kLoad, "policy '" + name + "' named by the plan is not loaded");
    }
    hit_limit = hit_limit || run.error_class == LuaErrorClass::kTimeout || run.error_class == LuaErrorClass::kMemory;
    // A failing policy fails closed: it asks a person, or denies where the host denies by
    // default.
    if (run.error_class != LuaErrorClass::kNone && options_.default_outcome == Outcome::kRejected) {
      run.verdict = Verdict::kDeny;
    }
    if (!run.applicable) continue;
    votes.push_back({name, parseLevel(level).value_or(Level::kHard), run.verdict, run.reason, run.requirement});
    const std::string& sha256 = policy.file ? policy.file->sha256 : policy.failed ? policy.failed->sha256 : "";
    evaluation.decisions.push_back({level, makeRecord(name, sha256, run, evaluation.at)});
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
  evaluation.approvals = std::move(combined.approvals);
  return evaluation;
}

}  // namespace tide::lua
