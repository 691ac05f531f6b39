#include "host/engine/metric_provider.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "host/engine/outbound_http.h"

namespace tide::engine {
namespace {

using Json = nlohmann::json;

// An answer is read up to this size; a larger one is an error (a query over too many series).
constexpr size_t kMaxAnswerBytes = 4 << 20;

// GET `origin` + `target` within `timeout_ms`; the body of a 2xx answer, else why not. A
// Prometheus error answer (4xx/5xx with a JSON error) is returned as a body too, so its own
// words can be read.
Result<std::string> get(const std::string& origin, const std::string& target, int timeout_ms, bool error_bodies) {
  httplib::Client client(origin);
  const time_t seconds = timeout_ms / 1000;
  const time_t micros = static_cast<time_t>(timeout_ms % 1000) * 1000;
  client.set_connection_timeout(seconds, micros);
  client.set_read_timeout(seconds, micros);
  client.set_write_timeout(seconds, micros);
  int status = 0;
  std::string body;
  bool too_big = false;
  httplib::Result result = client.Get(
      target, httplib::Headers{{"Accept", "application/json"}},
      [&](const httplib::Response& response) {
        status = response.status;
        return true;
      },
      [&](const char* data, size_t length) {
        if (body.size() + length > kMaxAnswerBytes) {
          too_big = true;
          return false;
        }
        body.append(data, length);
        return true;
      });
  if (too_big) return Status::unavailable("the answer is larger than " + std::to_string(kMaxAnswerBytes >> 20) + " MiB");
  if (status == 0) return Status::unavailable(transportError(result.error(), timeout_ms));
  if (status >= 200 && status < 300) return body;
  if (error_bodies && !body.empty() && body.front() == '{') return body;
  return Status::unavailable("HTTP " + std::to_string(status));
}

// A sample's value: Prometheus writes them as strings ("0.25", "NaN", "+Inf").
Result<double> sampleValue(const Json& sample) {
  if (!sample.is_array() || sample.size() != 2 || !sample[1].is_string()) {
    return Status::invalidArgument("a sample is not [time, \"value\"]");
  }
  const std::string text = sample[1].get<std::string>();
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return Status::invalidArgument("sample value \"" + text + "\" is not a number");
  return value;
}

Result<double> finite(double value) {
  if (!std::isfinite(value)) return Status::invalidArgument("no data (the query answered " + std::to_string(value) + ")");
  return value;
}

Result<double> reducePoints(const Json& points, const std::string& reduce) {
  if (!points.is_array() || points.empty()) return Status::invalidArgument("no data: the range holds no points");
  double out = 0;
  double sum = 0;
  int counted = 0;
  for (const auto& point : points) {
    auto value = sampleValue(point);
    if (!value.isOk()) return value.status();
    if (!std::isfinite(*value)) continue;  // a point of a window with no requests says nothing
    if (counted == 0 || reduce == "last") {
      out = *value;
    } else if (reduce == "min") {
      out = std::min(out, *value);
    } else if (reduce != "avg") {
      out = std::max(out, *value);
    }
    sum += *value;
    ++counted;
  }
  if (counted == 0) return Status::invalidArgument("no data (every point of the range is NaN)");
  return reduce == "avg" ? sum / counted : out;
}

}  // namespace

Result<double> prometheusValue(const std::string& body, const std::string& reduce) {
  const Json answer = Json::parse(body, nullptr, false);
  if (answer.is_discarded() || !answer.is_object()) return Status::invalidArgument("the answer is not JSON");
  if (answer.value("status", "") != "success") {
    return Status::invalidArgument(answer.value("errorType", std::string("error")) + ": " +
                                   answer.value("error", std::string("(no message)")));
  }
  const Json& data = answer.contains("data") ? answer["data"] : Json();
  const std::string type = data.is_object() ? data.value("resultType", "") : "";
  const Json& result = data.is_object() && data.contains("result") ? data["result"] : Json();
  if (type == "scalar") {
    auto value = sampleValue(result);
    return value.isOk() ? finite(*value) : value;
  }
  if (type != "vector" && type != "matrix") {
    return Status::invalidArgument("unexpected result type \"" + type + "\"");
  }
  if (!result.is_array() || result.empty()) return Status::invalidArgument("no data: the query matched no series");
  if (result.size() > 1) {
    return Status::invalidArgument("the query answered " + std::to_string(result.size()) +
                                   " series; it must answer one (aggregate it, e.g. sum(...))");
  }
  if (type == "matrix") return reducePoints(result[0].value("values", Json()), reduce);
  auto value = sampleValue(result[0].value("value", Json()));
  return value.isOk() ? finite(*value) : value;
}

Result<double> jsonPathValue(const std::string& body, const std::string& json_path) {
  const Json answer = Json::parse(body, nullptr, false);
  if (answer.is_discarded()) return Status::invalidArgument("the answer is not JSON");
  const Json* at = &answer;
  std::string walked;
  size_t i = 0;
  while (i < json_path.size()) {
    if (json_path[i] == '.') {
      ++i;
      continue;
    }
    if (json_path[i] == '[') {
      const size_t close = json_path.find(']', i);
      const std::string digits = close == std::string::npos ? "" : json_path.substr(i + 1, close - i - 1);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
        return Status::invalidArgument("json_path \"" + json_path + "\": expected [index] at " + std::to_string(i));
      }
      const size_t index = std::stoul(digits);
      walked += "[" + digits + "]";
      if (!at->is_array() || index >= at->size()) return Status::invalidArgument("the answer has no " + walked);
      at = &(*at)[index];
      i = close + 1;
      continue;
    }
    const size_t end = json_path.find_first_of(".[", i);
    const std::string key = json_path.substr(i, end == std::string::npos ? std::string::npos : end - i);
    walked += (walked.empty() ? "" : ".") + key;
    if (!at->is_object() || !at->contains(key)) return Status::invalidArgument("the answer has no " + walked);
    at = &(*at)[key];
    i = end == std::string::npos ? json_path.size() : end;
  }
  const std::string where = walked.empty() ? "the answer" : walked;
  if (at->is_number()) return finite(at->get<double>());
  if (at->is_string()) {
    const std::string text = at->get<std::string>();
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end != text.c_str() && *end == '\0') return finite(value);
  }
  return Status::invalidArgument(where + " is not a number: " + at->dump().substr(0, 80));
}

Result<double> fetchMetric(const model::MetricProvider& provider, const model::MetricQuery& query) {
  std::string origin;
  std::string prefix;
  if (!splitUrl(provider.url, origin, prefix)) return Status::invalidArgument("bad provider url \"" + provider.url + "\"");
  try {
    if (provider.type == "prometheus") {
      httplib::Params params{{"query", query.query}};
      std::string endpoint = "/api/v1/query";
      if (query.range_seconds > 0) {
        // Prometheus keeps real time, whatever clock the host's tests run on.
        const double now =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
        const int step = query.step_seconds > 0 ? query.step_seconds : std::max(1, query.range_seconds / 10);
        endpoint = "/api/v1/query_range";
        params.emplace("start", std::to_string(now - query.range_seconds));
        params.emplace("end", std::to_string(now));
        params.emplace("step", std::to_string(step));
      }
      auto body = get(origin, httplib::append_query_params(prefix + endpoint, params), provider.timeout_ms, true);
      if (!body.isOk()) return body.status();
      return prometheusValue(*body, query.reduce);
    }
    if (provider.type == "http") {
      auto body = get(origin, prefix + query.query, provider.timeout_ms, false);
      if (!body.isOk()) return body.status();
      return jsonPathValue(*body, query.json_path.empty() ? provider.json_path : query.json_path);
    }
  } catch (const std::exception& e) {
    return Status::unavailable(e.what());
  }
  return Status::invalidArgument("unknown provider type \"" + provider.type + "\"");
}

}  // namespace tide::engine
