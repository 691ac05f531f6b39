#include "host/lua/strategy/strategy_params.h"

#include <cmath>
#include <regex>

#include "host/core/suggest.h"

namespace tide::lua {
namespace {

using Json = nlohmann::json;

constexpr const char* kTypes[] = {"number", "integer", "string", "boolean", "list", "table", "count"};
constexpr const char* kSpecFields[] = {"type", "default", "description", "one_of", "min", "max"};

bool isIntegral(const Json& value) {
  if (value.is_number_integer() || value.is_number_unsigned()) return true;
  return value.is_number_float() && std::floor(value.get<double>()) == value.get<double>();
}

bool isPercent(const Json& value) {
  static const std::regex kPercent("[0-9]{1,9}%");
  return value.is_string() && std::regex_match(value.get<std::string>(), kPercent);
}

std::string shown(const Json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string shownNumber(double n) {
  return std::floor(n) == n && std::fabs(n) < 1e15 ? std::to_string(static_cast<int64_t>(n)) : Json(n).dump();
}

std::string typeOfDefault(const Json& value) {
  if (value.is_boolean()) return "boolean";
  if (value.is_number()) return "number";
  if (value.is_string()) return "string";
  if (value.is_array()) return "list";
  return "table";
}

const char* typeWanted(const std::string& type) {
  if (type == "number") return "a number";
  if (type == "integer") return "an integer";
  if (type == "string") return "a string";
  if (type == "boolean") return "true or false";
  if (type == "list") return "a list";
  if (type == "table") return "a table of named fields";
  return "an integer >= 0 or a percentage like \"25%\"";
}

bool hasType(const std::string& type, const Json& value) {
  if (type == "number") return value.is_number();
  if (type == "integer") return value.is_number() && isIntegral(value);
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "list") return value.is_array();
  if (type == "table") return value.is_object();
  return (value.is_number() && isIntegral(value) && value.get<double>() >= 0) || isPercent(value);
}

Status specError(const std::string& name, const std::string& message) {
  return Status::invalidArgument("params." + name + ": " + message, {{"params." + name, message, ""}});
}

Result<ParamSpec> parseSpec(const std::string& name, const Json& declared) {
  ParamSpec spec;
  const bool is_spec = declared.is_object() && declared.contains("type") && declared["type"].is_string();
  if (!is_spec) {
    spec.type = typeOfDefault(declared);
    spec.default_value = declared;
    return spec;
  }
  for (const auto& [key, value] : declared.items()) {
    bool known = false;
    for (const char* field : kSpecFields) known = known || key == field;
    if (!known) {
      return specError(name, "unknown spec field '" + key + "' (known: type, default, description, one_of, min, max)");
    }
  }
  spec.type = declared["type"].get<std::string>();
  bool known_type = false;
  for (const char* type : kTypes) known_type = known_type || spec.type == type;
  if (!known_type) {
    return specError(name,
                     "unknown type '" + spec.type + "' (known: number, integer, string, boolean, list, table, count)");
  }
  if (declared.contains("description")) {
    if (!declared["description"].is_string()) return specError(name, "description must be a string");
    spec.description = declared["description"].get<std::string>();
  }
  if (declared.contains("one_of")) {
    if (!declared["one_of"].is_array() || declared["one_of"].empty()) {
      return specError(name, "one_of must be a non-empty list of values");
    }
    spec.one_of = declared["one_of"];
  }
  for (auto [field, target] : {std::pair{"min", &spec.min}, std::pair{"max", &spec.max}}) {
    if (!declared.contains(field)) continue;
    if (!declared[field].is_number()) return specError(name, std::string(field) + " must be a number");
    *target = declared[field].get<double>();
  }
  if (declared.contains("default")) {
    spec.default_value = declared["default"];
    // Lua cannot tell an empty list from an empty table; the declared type can.
    if (spec.type == "list" && spec.default_value == Json::object()) spec.default_value = Json::array();
    if (std::string problem = checkParam(spec, spec.default_value); !problem.empty()) {
      return specError(name, "the default " + problem);
    }
  }
  return spec;
}

}  // namespace

Result<ParamSpecs> parseParamSpecs(const Json& declared) {
  ParamSpecs specs;
  if (declared.is_null()) return specs;
  if (!declared.is_object()) {
    return Status::invalidArgument("params must be a table of named params",
                                   {{"params", "must be a table of named params", ""}});
  }
  for (const auto& [name, value] : declared.items()) {
    TIDE_ASSIGN_OR_RETURN(specs[name], parseSpec(name, value));
  }
  return specs;
}

std::string checkParam(const ParamSpec& spec, const Json& value) {
  if (!hasType(spec.type, value)) {
    return std::string("must be ") + typeWanted(spec.type) + ", not " + shown(value);
  }
  if (spec.one_of.is_array()) {
    bool allowed = false;
    for (const Json& option : spec.one_of) allowed = allowed || option == value;
    if (!allowed) return "must be one of " + shown(spec.one_of) + ", not " + shown(value);
  }
  if (value.is_number()) {
    const double n = value.get<double>();
    if (spec.min && n < *spec.min) return "must be at least " + shownNumber(*spec.min) + ", not " + shown(value);
    if (spec.max && n > *spec.max) return "must be at most " + shownNumber(*spec.max) + ", not " + shown(value);
  }
  return "";
}

std::vector<ParamProblem> paramProblems(const std::string& script, const ParamSpecs& specs, const Json& params,
                                        const std::string& source) {
  std::vector<ParamProblem> problems;
  if (params.is_null()) return problems;
  if (!params.is_object()) {
    problems.push_back({"", false, "the " + source + "'s params must be an object"});
    return problems;
  }
  std::vector<std::string_view> declared;
  std::string known;
  for (const auto& [name, unused] : specs) {
    declared.push_back(name);
    known += (known.empty() ? "" : ", ") + name;
  }
  for (const auto& [name, value] : params.items()) {
    if (value.is_null()) continue;
    auto spec = specs.find(name);
    if (spec == specs.end()) {
      std::string message = "unknown " + source + " param '" + name + "'";
      if (auto nearest = nearestName(name, declared)) message += " (did you mean '" + *nearest + "'?)";
      message += "; " + script + " knows " + (known.empty() ? "no params" : known);
      problems.push_back({name, true, std::move(message)});
    } else if (std::string problem = checkParam(spec->second, value); !problem.empty()) {
      problems.push_back({name, false, source + " param '" + name + "' " + problem});
    }
  }
  return problems;
}

Result<Json> resolveParams(const std::string& script, const ParamSpecs& specs, const Json& plan_params,
                           const Json& deployment_params) {
  std::vector<ErrorDetail> details;
  for (auto [source, params] : {std::pair{"plan", &plan_params}, std::pair{"deployment", &deployment_params}}) {
    for (ParamProblem& problem : paramProblems(script, specs, *params, source)) {
      details.push_back({problem.name.empty() ? "params" : "params." + problem.name, std::move(problem.message), ""});
    }
  }
  if (!details.empty()) {
    std::string message = script + ": " + details.front().message;
    if (size_t more = details.size() - 1; more > 0) {
      message += " (and " + std::to_string(more) + (more == 1 ? " more error)" : " more errors)");
    }
    return Status::invalidArgument(std::move(message), std::move(details));
  }
  Json out = Json::object();
  for (const auto& [name, spec] : specs) {
    if (!spec.default_value.is_null()) out[name] = spec.default_value;
  }
  for (const Json* params : {&plan_params, &deployment_params}) {
    if (!params->is_object()) continue;
    for (const auto& [name, value] : params->items()) {
      if (!value.is_null()) out[name] = value;
    }
  }
  return out;
}

}  // namespace tide::lua
