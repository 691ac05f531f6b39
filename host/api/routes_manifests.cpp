// POST /v1/manifests: a whole manifest (any mix of record kinds) applied atomically.
//
// Every problem of the file is answered at once, in file order, each at the line and column
// of the key or value at fault: the parser's, and with them what only the host can tell
// before writing (a strategy's params, a deployment's plan and payloads). Who may run what,
// and the ledger's own checks (names taken, references), come after, one at a time.

#include <algorithm>
#include <optional>

#include "host/api/command_access.h"
#include "host/api/dry_run.h"
#include "host/api/handlers.h"
#include "host/api/namespace_scope.h"
#include "host/api/request_inputs.h"
#include "host/config/field_reader.h"
#include "host/config/manifest.h"
#include "host/lua/registry/script_registry.h"
#include "host/lua/strategy/strategy_engine.h"

namespace tide::api::manifests {
namespace {

using model::Sourced;

// A problem of `field` (a canonical path below `record`), placed at its key or its value,
// named as written; at the record when the manifest does not spell the field out.
template <class T>
ErrorDetail placed(const Sourced<T>& record, const std::string& field, bool at_key, std::string message) {
  const auto it = record.fields.find(field);
  if (it == record.fields.end()) {
    return {record.path.empty() ? field : record.path + "." + field, std::move(message), record.location};
  }
  return {it->second.field, std::move(message), at_key ? it->second.key : it->second.value};
}

// Whether the parser found a problem at or under `field` of `record`: a check of what it
// read there would only guess.
template <class T>
bool parserRefused(const std::vector<ErrorDetail>& problems, const Sourced<T>& record, const std::string& field) {
  const auto it = record.fields.find(field);
  if (it == record.fields.end()) return false;
  const std::string& written = it->second.field;
  return std::any_of(problems.begin(), problems.end(), [&](const ErrorDetail& d) {
    return d.field == written || d.field.starts_with(written + ".") || d.field.starts_with(written + "[");
  });
}

// The checks of one manifest that need the host: its strategies and its ledger.
class HostChecks {
 public:
  HostChecks(ApiContext& context, const model::Manifest& manifest, std::vector<ErrorDetail>& problems)
      : context_(context), manifest_(manifest), problems_(problems) {
    if (context.scripts != nullptr) strategies_.emplace(*context.scripts, context.clock, context.lua_limits);
  }

  // The plan's strategy script is loaded and takes its params.
  Status checkPlan(const Sourced<model::Plan>& plan) {
    if (!strategies_ || parserRefused(problems_, plan, "strategy")) return Status::ok();
    const std::string script = scriptOf(plan.value);
    TIDE_ASSIGN_OR_RETURN(std::optional<lua::ParamSpecs> specs, declaredParams(script, plan, "strategy.script"));
    if (specs) addParamProblems(plan, script, *specs, plan.value.strategy.params, "plan");
    return Status::ok();
  }

  // The deployment's plan exists, here or in the ledger; its payloads are the plan's
  // applications; the strategy it runs is loaded and takes its own params, and the plan's
  // when it runs another script than the plan's.
  Status checkDeployment(const Sourced<model::Deployment>& deployment) {
    const model::Deployment& d = deployment.value;
    if (d.plan.empty()) return Status::ok();
    const Sourced<model::Plan>* listed = nullptr;
    for (const auto& plan : manifest_.plans) {
      if (plan.value.name == d.plan) listed = &plan;
    }
    std::optional<model::Plan> stored;
    if (listed == nullptr) {
      Result<model::Plan> got = context_.ledger.plans().getPlan(d.plan);
      if (got.status().code() == Code::kNotFound) {
        problems_.push_back(placed(deployment, "plan", false,
                                   "plan '" + d.plan + "' does not exist (in this manifest or on the host)"));
        return Status::ok();
      }
      TIDE_RETURN_IF_ERROR(got.status());
      stored = std::move(got).value();
    }
    const model::Plan& owner = listed != nullptr ? listed->value : *stored;
    if (listed == nullptr || !parserRefused(problems_, *listed, "applications")) {
      if (!parserRefused(problems_, deployment, "payload_coordinates")) {
        for (const ErrorDetail& problem : model::payloadCoordinateProblems(owner, d)) {
          problems_.push_back(placed(deployment, problem.field, false, problem.message));
        }
      }
    }
    if (!strategies_ || parserRefused(problems_, deployment, "strategy")) return Status::ok();
    if (listed != nullptr && parserRefused(problems_, *listed, "strategy")) return Status::ok();
    const model::EffectiveStrategy strategy = model::effectiveStrategy(&owner, d);
    const bool own_script = strategy.script != scriptOf(owner);
    if (!own_script && strategy.deployment_params.empty()) return Status::ok();
    // The plan's script not being loaded is the plan's problem, reported with it when listed.
    if (!own_script && listed != nullptr && !strategies_->declaredParams(strategy.script).isOk()) return Status::ok();
    TIDE_ASSIGN_OR_RETURN(std::optional<lua::ParamSpecs> specs,
                          declaredParams(strategy.script, deployment, own_script ? "strategy.script" : "plan"));
    if (!specs) return Status::ok();
    addParamProblems(deployment, strategy.script, *specs, strategy.deployment_params, "deployment");
    if (own_script) {
      // The plan's params, good for the plan's script, may not be for this one.
      for (lua::ParamProblem& p : lua::paramProblems(strategy.script, *specs, strategy.plan_params, "plan")) {
        problems_.push_back(placed(deployment, "strategy.script", false, std::move(p.message)));
      }
    }
    return Status::ok();
  }

 private:
  static std::string scriptOf(const model::Plan& plan) {
    return plan.strategy.script.empty() ? model::kDefaultStrategy : plan.strategy.script;
  }

  // The params `script` declares; nullopt after placing a problem at `field` of `record`
  // when no such strategy is loaded. Other failures (the script failed to load, no
  // interpreter could be built) are the host's, as POST /v1/plans answers them.
  template <class T>
  Result<std::optional<lua::ParamSpecs>> declaredParams(const std::string& script, const Sourced<T>& record,
                                                        const std::string& field) {
    Result<lua::ParamSpecs> specs = strategies_->declaredParams(script);
    if (specs.isOk()) return std::optional<lua::ParamSpecs>(std::move(specs).value());
    if (specs.status().code() != Code::kNotFound) return specs.status();
    problems_.push_back(placed(record, field, false, specs.status().message()));
    return std::optional<lua::ParamSpecs>();
  }

  template <class T>
  void addParamProblems(const Sourced<T>& record, const std::string& script, const lua::ParamSpecs& specs,
                        const Json& params, const std::string& source) {
    for (lua::ParamProblem& p : lua::paramProblems(script, specs, params, source)) {
      const std::string field = p.name.empty() ? "strategy.params" : "strategy.params." + p.name;
      problems_.push_back(placed(record, field, p.unknown, std::move(p.message)));
    }
  }

  ApiContext& context_;
  const model::Manifest& manifest_;
  std::vector<ErrorDetail>& problems_;
  std::optional<lua::StrategyEngine> strategies_;
};

}  // namespace

Result<ApiResponse> apply(ApiContext& context, const ApiRequest& request) {
  TIDE_RETURN_IF_ERROR(acceptOnly(request, {"source", "dry_run"}));
  TIDE_ASSIGN_OR_RETURN(const bool dry_run, readDryRun(request));
  TIDE_ASSIGN_OR_RETURN(const std::string source, readSourceParam(request));
  TIDE_ASSIGN_OR_RETURN(std::string_view text, readBodyText(request, source));
  TIDE_ASSIGN_OR_RETURN(config::ManifestReading reading, config::readManifest(text, source));
  const model::Manifest& manifest = reading.manifest;
  {
    HostChecks checks(context, manifest, reading.problems);
    for (const auto& plan : manifest.plans) TIDE_RETURN_IF_ERROR(checks.checkPlan(plan));
    for (const auto& deployment : manifest.deployments) TIDE_RETURN_IF_ERROR(checks.checkDeployment(deployment));
  }
  if (!reading.problems.empty()) return config::problemsStatus(std::move(reading.problems));
  TIDE_RETURN_IF_ERROR(authorizeManifest(context.ledger, request.principal, manifest));
  // Who may run raw commands: as POST /v1/plans and deployments check them.
  for (const auto& plan : manifest.plans) {
    TIDE_RETURN_IF_ERROR(checkCommandAccess(context, request.principal, plan.value).withPrefix(plan.location));
    TIDE_RETURN_IF_ERROR(checkTrafficServed(context, plan.value).withPrefix(plan.location));
  }
  for (const auto& deployment : manifest.deployments) {
    TIDE_RETURN_IF_ERROR(
        checkCommandAccess(context, request.principal, deployment.value).withPrefix(deployment.location));
  }
  if (dry_run) {
    TIDE_ASSIGN_OR_RETURN(Json diff, manifestDryRun(context, request.principal, manifest));
    return jsonReply(diff);
  }
  TIDE_ASSIGN_OR_RETURN(ledger::AppliedManifest applied,
                        context.ledger.applyManifest(manifest, request.principal.name));
  return jsonReply({{"capabilities", applied.capabilities},
                    {"clusters", applied.clusters},
                    {"nodes", applied.nodes},
                    {"plans", applied.plans},
                    {"deployments", applied.deployments},
                    {"warnings", warningsJson(applied.warnings)}},
                   201);
}

}  // namespace tide::api::manifests
