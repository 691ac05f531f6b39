#include "host/core/prometheus_text.h"

#include <cstdio>

namespace tide {

std::string prometheusLabelValue(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string prometheusNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

std::string prometheusHistogram(std::string_view name, std::string_view labels, std::span<const double> bounds,
                                std::span<const uint64_t> buckets, uint64_t count, double sum) {
  const std::string series(name);
  const std::string with(labels);
  std::string out;
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += buckets[i];
    out += series + "_bucket{" + with + ",le=\"" + prometheusNumber(bounds[i]) + "\"} " + std::to_string(cumulative) +
           "\n";
  }
  out += series + "_bucket{" + with + ",le=\"+Inf\"} " + std::to_string(count) + "\n";
  out += series + "_sum{" + with + "} " + prometheusNumber(sum) + "\n";
  out += series + "_count{" + with + "} " + std::to_string(count) + "\n";
  return out;
}

}  // namespace tide
