#pragma once
// Pieces of the Prometheus text exposition format (0.0.4), for the host's /metrics and
// `tide workload`'s.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tide {

// A label value with \, " and newlines escaped, as the format wants inside quotes.
std::string prometheusLabelValue(std::string_view value);

// A sample value or bucket bound: up to 9 significant digits ("0.0005", "2.5", "1e+09").
std::string prometheusNumber(double value);

// One series of a histogram: `name`_bucket{`labels`,le="..."} for each of `bounds` (summing
// `buckets`, the non-cumulative count per bound) and for +Inf, then `name`_sum and
// `name`_count. `labels` is `a="x",b="y"`, already escaped, and not empty.
// REQUIRES: bounds.size() == buckets.size().
std::string prometheusHistogram(std::string_view name, std::string_view labels, std::span<const double> bounds,
                                std::span<const uint64_t> buckets, uint64_t count, double sum);

}  // namespace tide
