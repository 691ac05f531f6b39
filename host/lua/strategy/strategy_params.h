#pragma once
// A rollout strategy's declared params and how the host resolves them (docs/architecture.md#rollouts):
// script defaults ← plan params ← deployment params, each value checked against the
// declaration, so a typo or a wrong type is refused when the deployment is submitted, not
// when the strategy first runs.
//
// A strategy declares each param in its `params` table either by a default value, whose
// type becomes the param's type:
//     params = { pause_seconds = 60, steps = { 10, 50, 100 } }
// or by a spec, a table with a `type` field:
//     params = { max_surge = { type = "count", default = 0, description = "..." } }
// Spec fields: type (required), default, description, one_of (a list of allowed values),
// min and max (numbers). Types:
//   number, integer, string, boolean, list, table,
//   count   an integer >= 0 or a percentage string such as "25%" (of the desired count)
// A param without a default is nil in r.params until a plan or deployment sets it. Params
// are replaced whole: a table param given by the plan replaces the default table.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/status.h"

namespace tide::lua {

struct ParamSpec {
  std::string type;
  nlohmann::json default_value;  // null: no default
  std::string description;
  nlohmann::json one_of;  // null, or the list of allowed values
  std::optional<double> min;
  std::optional<double> max;
};
using ParamSpecs = std::map<std::string, ParamSpec>;

// Reads a `params` table converted to JSON (null when the script declares none). Errors
// are kInvalidArgument naming the param: "params.max_surge: unknown type 'int'".
Result<ParamSpecs> parseParamSpecs(const nlohmann::json& declared);

// "" when `value` fits `spec`, else what it must be: "must be an integer >= 0 or a
// percentage like \"25%\", not \"abc\"".
std::string checkParam(const ParamSpec& spec, const nlohmann::json& value);

// One problem of the params a plan or a deployment gives a strategy.
struct ParamProblem {
  std::string name;     // the param as given; "" when the params are not an object
  bool unknown;         // the name is at fault (no such param), else its value
  std::string message;  // "unknown plan param 'max_surg' (did you mean 'max_surge'?); rolling knows ..."
};

// Every problem of `params` (an object, or null for none; a null value means "not set"),
// given by `source` ("plan" or "deployment"), against `specs`, in the params' order: an
// unknown name (with the nearest declared one when it is a near miss), a value of another
// type or out of bounds, params that are not an object. `script` names the strategy.
std::vector<ParamProblem> paramProblems(const std::string& script, const ParamSpecs& specs,
                                        const nlohmann::json& params, const std::string& source);

// The defaults overlaid with `plan_params`, then `deployment_params`. Errors are
// kInvalidArgument naming the first problem (paramProblems), every problem of both in the
// details, each with field "params.<name>" ("params" when the params are not an object).
Result<nlohmann::json> resolveParams(const std::string& script, const ParamSpecs& specs,
                                     const nlohmann::json& plan_params, const nlohmann::json& deployment_params);

}  // namespace tide::lua
