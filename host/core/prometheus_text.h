#pragma once
// Pieces of the Prometheus text exposition format (0.0.4), for the host's /metrics and
// `tide workload`'s.

#include <string>
#include <string_view>

namespace tide {

// A label value with \, " and newlines escaped, as the format wants inside quotes.
std::string prometheusLabelValue(std::string_view value);

// A sample value or bucket bound: up to 9 significant digits ("0.0005", "2.5", "1e+09").
std::string prometheusNumber(double value);

}  // namespace tide
