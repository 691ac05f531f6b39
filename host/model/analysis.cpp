#include "host/model/analysis.h"

#include <tuple>

namespace tide::model {

std::string MetricQuery::key() const {
  std::string options;
  auto add = [&options](const std::string& field) {
    options += options.empty() ? " [" : " ";
    options += field;
  };
  if (range_seconds > 0) add("range=" + std::to_string(range_seconds));
  if (step_seconds > 0) add("step=" + std::to_string(step_seconds));
  if (!reduce.empty()) add("reduce=" + reduce);
  if (!json_path.empty()) add("json_path=" + json_path);
  return options.empty() ? query : query + options + "]";
}

bool MetricQuery::operator<(const MetricQuery& other) const {
  return std::tie(provider, query, range_seconds, step_seconds, reduce, json_path) <
         std::tie(other.provider, other.query, other.range_seconds, other.step_seconds, other.reduce, other.json_path);
}

}  // namespace tide::model
