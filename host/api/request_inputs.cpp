#include "host/api/request_inputs.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "host/core/json_reader.h"
#include "host/core/utf8.h"
#include "host/core/whole_number.h"
#include "host/lua/registry/script_registry.h"
#include "host/lua/strategy/strategy_engine.h"

namespace tide::api {
Status badParam(const std::string& name, const std::string& message) {
  return Status::invalidArgument("query parameter '" + name + "' " + message, {{name, message, ""}});
}

namespace {

std::string joined(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& value : values) out += (out.empty() ? "" : ", ") + value;
  return out;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool isJsonType(std::string_view type) { return type == "application/json"; }
bool isYamlType(std::string_view type) {
  return type == "application/yaml" || type == "application/x-yaml" || type == "text/yaml" || type == "text/x-yaml";
}

Status badField(const std::string& field, const std::string& message) {
  return Status::invalidArgument("body field '" + field + "' " + message, {{field, message, ""}});
}

// "<line>:<column>" (1-based, the column in bytes) of byte `offset` of `text`.
std::string lineAndColumnOf(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
  const auto line = 1 + std::count(before.begin(), before.end(), '\n');
  return std::to_string(line) + ":" + std::to_string(offset - line_start + 1);
}

}  // namespace

Status acceptOnly(const ApiRequest& request, std::initializer_list<std::string_view> accepted) {
  for (const auto& [name, value] : request.query) {
    if (std::find(accepted.begin(), accepted.end(), name) != accepted.end()) continue;
    std::string known;
    for (std::string_view a : accepted) known += (known.empty() ? "" : ", ") + std::string(a);
    return badParam(name, known.empty() ? "is not accepted here (this route takes no query parameters)"
                                        : "is not accepted here; accepted: " + known);
  }
  return Status::ok();
}

Result<std::optional<int64_t>> readIntegerParam(const ApiRequest& request, const std::string& name, int64_t min,
                                                int64_t max) {
  auto it = request.query.find(name);
  if (it == request.query.end()) return std::optional<int64_t>();
  std::optional<int64_t> value = parseWholeNumber(it->second);
  if (!value) return badParam(name, "must be an integer, got '" + it->second + "'");
  if (*value < min || *value > max) {
    return badParam(name,
                    "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + it->second);
  }
  return value;
}

Result<std::optional<int64_t>> readIntegerHeader(const std::string& name, const std::string& value, int64_t min,
                                                 int64_t max) {
  std::string_view text = trimmed(value);
  if (text.empty()) return std::optional<int64_t>();
  std::optional<int64_t> number = parseWholeNumber(text);
  if (!number || *number < min || *number > max) {
    std::string message =
        "must be an integer between " + std::to_string(min) + " and " + std::to_string(max) + ", got '" + value + "'";
    return Status::invalidArgument("header '" + name + "' " + message, {{name, message, ""}});
  }
  return number;
}

Result<ledger::ListOptions> readListOptions(const ApiRequest& request, const std::vector<QueryFilter>& filters,
                                            std::initializer_list<std::string_view> extra) {
  for (const auto& [name, value] : request.query) {
    bool known =
        name == "limit" || name == "after" ||
        std::any_of(filters.begin(), filters.end(), [&name = name](const QueryFilter& f) { return f.name == name; }) ||
        std::find(extra.begin(), extra.end(), name) != extra.end();
    if (known) continue;
    std::vector<std::string> accepted = {"limit", "after"};
    for (const QueryFilter& filter : filters) accepted.push_back(filter.name);
    for (std::string_view e : extra) accepted.emplace_back(e);
    return badParam(name, "is not accepted here; accepted: " + joined(accepted));
  }

  ledger::ListOptions options;
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> limit, readIntegerParam(request, "limit", 1, ledger::kMaxPageSize));
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> after, readIntegerParam(request, "after", 0, INT64_MAX));
  if (limit) options.limit = *limit;
  if (after) options.after = *after;
  for (const QueryFilter& filter : filters) {
    auto it = request.query.find(filter.name);
    if (it == request.query.end() || it->second.empty()) continue;
    std::string_view rest = it->second;
    while (true) {
      const size_t comma = filter.any_of ? rest.find(',') : std::string_view::npos;
      const std::string value(rest.substr(0, comma));
      if (value.empty()) return badParam(filter.name, "has an empty value in '" + it->second + "'");
      if (!filter.allowed.empty() &&
          std::find(filter.allowed.begin(), filter.allowed.end(), value) == filter.allowed.end()) {
        return badParam(filter.name, "must be " + std::string(filter.any_of ? "a comma-separated list of " : "") +
                                         "one of " + joined(filter.allowed) + ", got '" + value + "'");
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    options.filters[filter.name] = it->second;
  }
  return options;
}

Status readTimeWindow(const ApiRequest& request, TimePoint now, ledger::ListOptions& options) {
  for (const char* name : {"since", "until"}) {
    auto it = request.query.find(name);
    if (it == request.query.end() || it->second.empty()) continue;
    const std::string& text = it->second;
    TimePoint at;
    if (const std::optional<std::chrono::seconds> back = parseWholeDuration(text)) {
      at = now - *back;
    } else if (Result<TimePoint> stamp = parseTimestamp(text); stamp.isOk()) {
      at = *stamp;
    } else {
      return badParam(name,
                      "must be an RFC 3339 UTC timestamp (2026-11-21T12:00:00Z) or a span back from now (30m, "
                      "2h, 7d), got '" +
                          text + "'");
    }
    options.filters[name] = formatTimestamp(at);
  }
  auto since = options.filters.find("since");
  auto until = options.filters.find("until");
  if (since != options.filters.end() && until != options.filters.end() && until->second <= since->second) {
    return badParam("until", "must be later than since (" + since->second + "), got " + until->second);
  }
  return Status::ok();
}

Result<int64_t> readIdParam(const ApiRequest& request, const std::string& name) {
  const std::string& text = request.param(name);
  std::optional<int64_t> id = parseWholeNumber(text);
  if (!id || *id <= 0) {
    std::string message = "must be a positive integer, got '" + text + "'";
    return Status::invalidArgument("path parameter '" + name + "' " + message, {{name, message, ""}});
  }
  return *id;
}

Result<ledger::Generation> readExpectedGeneration(const ApiRequest& request) {
  TIDE_ASSIGN_OR_RETURN(std::optional<int64_t> from_query, readIntegerParam(request, "generation", 1, INT64_MAX));
  ledger::Generation from_header;
  std::string_view tag = trimmed(request.if_match);
  if (tag.substr(0, 2) == "W/") tag.remove_prefix(2);
  if (tag.size() >= 2 && tag.front() == '"' && tag.back() == '"') tag = tag.substr(1, tag.size() - 2);
  if (!tag.empty() && tag != "*") {
    std::optional<int64_t> value = parseWholeNumber(tag);
    if (!value || *value < 1) {
      std::string message = "must be the record's generation (a positive integer), got '" + request.if_match + "'";
      return Status::invalidArgument("header 'If-Match' " + message, {{"If-Match", message, ""}});
    }
    from_header = *value;
  }
  if (from_header && from_query && *from_header != *from_query) {
    std::string message = "disagrees with the If-Match header";
    return Status::invalidArgument("query parameter 'generation' " + message, {{"generation", message, ""}});
  }
  return from_header ? from_header : ledger::Generation(from_query);
}

Status checkNestingDepth(std::string_view body, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        std::string problem = "nests arrays and objects deeper than the limit of " + std::to_string(max_depth) +
                              " levels (limits.max_json_depth)";
        return Status::invalidArgument("request body " + problem, {{"body", problem, ""}});
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::ok();
}

Result<std::string> readSourceParam(const ApiRequest& request) {
  auto it = request.query.find("source");
  if (it == request.query.end() || it->second.empty()) return kBodySource;
  const std::string& source = it->second;
  if (source.size() > 1024) return badParam("source", "must be at most 1024 bytes");
  const bool control = std::any_of(source.begin(), source.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  if (control || firstInvalidUtf8(source) != std::string::npos) {
    return badParam("source", "must be a file name: UTF-8 without control characters");
  }
  return source;
}

Result<std::string_view> readBodyText(const ApiRequest& request, const std::string& source) {
  const std::string& type = request.content_type;
  if (type.empty()) {
    std::string message = "is required: application/json or application/yaml";
    return Status::invalidArgument("header 'Content-Type' " + message, {{"Content-Type", message, ""}});
  }
  if (!isJsonType(type) && !isYamlType(type)) {
    std::string message = "'" + type + "' is not supported; send application/json or application/yaml";
    return Status::invalidArgument("header 'Content-Type' " + message, {{"Content-Type", message, ""}});
  }
  if (trimmed(request.body).empty()) {
    return Status::invalidArgument("request body is empty", {{"body", "is empty", ""}});
  }
  if (isJsonType(type)) {
    try {
      nlohmann::json parsed = nlohmann::json::parse(request.body);
      static_cast<void>(parsed);
    } catch (const nlohmann::json::parse_error& error) {
      std::string what = error.what();
      if (size_t cut = what.find("] "); cut != std::string::npos) what = what.substr(cut + 2);
      std::string location = source + ":" + lineAndColumnOf(request.body, error.byte == 0 ? 0 : error.byte - 1);
      return Status::invalidArgument("malformed JSON at " + location + ": " + what, {{"body", what, location}});
    } catch (const std::exception& error) {
      return Status::invalidArgument(std::string("malformed JSON: ") + error.what(), {{"body", error.what(), ""}});
    }
  }
  return std::string_view(request.body);
}

Result<Json> readOptionalJsonObject(const ApiRequest& request, std::initializer_list<std::string_view> accepted) {
  if (request.body.find_first_not_of(" \t\r\n") == std::string::npos) return Json::object();
  if (!isJsonType(request.content_type)) {
    std::string message = "must be application/json, got '" + request.content_type + "'";
    return Status::invalidArgument("header 'Content-Type' " + message, {{"Content-Type", message, ""}});
  }
  TIDE_RETURN_IF_ERROR(readBodyText(request).status());
  Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) {
    return Status::invalidArgument("request body must be a JSON object", {{"body", "must be a JSON object", ""}});
  }
  for (const auto& item : body.items()) {
    if (std::find(accepted.begin(), accepted.end(), item.key()) != accepted.end()) continue;
    std::string known;
    for (std::string_view a : accepted) known += (known.empty() ? "" : ", ") + std::string(a);
    return badField(item.key(), "is not accepted here; accepted: " + known);
  }
  return body;
}

namespace {

// One field of a request body read by the JSON reader (host/core/json_reader.h); its problem,
// if any, as the request's error. The body is an object (readOptionalJsonObject).
template <typename T, typename Read>
Result<std::optional<T>> readBodyField(const Json& body, Read read) {
  JsonProblems problems;
  const JsonReader reader(body, "", problems);
  std::optional<T> value = read(reader);
  if (!problems.empty()) return badField(problems.details().front().field, problems.details().front().message);
  return value;
}

}  // namespace

Result<std::optional<std::string>> readStringField(const Json& body, const std::string& key) {
  return readBodyField<std::string>(body, [&key](const JsonReader& r) { return r.string(key, JsonNeed::kOptional); });
}

Result<std::optional<bool>> readBoolField(const Json& body, const std::string& key) {
  return readBodyField<bool>(body, [&key](const JsonReader& r) { return r.boolean(key, JsonNeed::kOptional); });
}

Result<std::optional<int64_t>> readIntegerField(const Json& body, const std::string& key, int64_t min, int64_t max) {
  return readBodyField<int64_t>(body, [&](const JsonReader& r) -> std::optional<int64_t> {
    const std::string range = "between " + std::to_string(min) + " and " + std::to_string(max);
    const Json* value = r.find(key);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number_integer()) {
      r.bad(key, "must be an integer " + range);
      return std::nullopt;
    }
    // Any int64 (an unsigned value past INT64_MAX is refused here), then [min, max], saying
    // what it was.
    const JsonBounds any_int64{static_cast<double>(INT64_MIN), static_cast<double>(INT64_MAX)};
    std::optional<int64_t> read = r.integer(key, JsonNeed::kOptional, any_int64, "must be " + range);
    if (read && (*read < min || *read > max)) {
      r.bad(key, "must be " + range + ", got " + std::to_string(*read));
      return std::nullopt;
    }
    return read;
  });
}

Status checkTrafficServed(const ApiContext& context, const model::Plan& plan) {
  if (!plan.traffic.declared() || context.traffic_unavailable.empty()) return Status::ok();
  const std::string problem = "this host runs no traffic router: " + context.traffic_unavailable;
  return Status(Code::kUnprocessable, "plan '" + plan.name + "': traffic.listen: " + problem,
                {{"traffic.listen", problem, ""}});
}

Status checkStrategyParams(ApiContext& context, const std::string& script, const Json& plan_params,
                           const Json& deployment_params) {
  if (context.scripts == nullptr) return Status::ok();
  lua::StrategyEngine strategies(*context.scripts, context.clock, context.lua_limits);
  Result<Json> params =
      strategies.resolveParams(script.empty() ? model::kDefaultStrategy : script, plan_params, deployment_params);
  if (params.isOk()) return Status::ok();
  if (params.status().code() == Code::kNotFound) {
    return Status::invalidArgument("strategy.script: " + params.status().message(),
                                   {{"strategy.script", params.status().message(), ""}});
  }
  return params.status();
}

Status checkDeploymentStrategy(ApiContext& context, const model::Plan& plan, const model::Deployment& deployment) {
  const model::EffectiveStrategy strategy = model::effectiveStrategy(&plan, deployment);
  return checkStrategyParams(context, strategy.script, strategy.plan_params, strategy.deployment_params);
}

}  // namespace tide::api
