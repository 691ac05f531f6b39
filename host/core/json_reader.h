#pragma once
// Reading a JSON object into typed values while collecting every problem, not just the
// first: the one JSON reader of the host, the twin of config::MapReader (YAML, with lines).
// Driver and router configs, the agent protocol's documents and request bodies all read
// through it, so a problem always reads the same way: an ErrorDetail{field, message, ""}
// where field is the dotted path ("driver_config.seed", "instances[2].want").
//
// A value that is null counts as absent, as a JSON client would expect. Reads never throw.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/core/status.h"

namespace tide {

// Every problem found in one JSON input.
class JsonProblems {
 public:
  void add(std::string field, std::string message);
  bool empty() const { return details_.empty(); }
  size_t count() const { return details_.size(); }
  const std::vector<ErrorDetail>& details() const { return details_; }

  // kInvalidArgument "<what>: <first field> <first message> (and N more)" with every problem
  // in details. REQUIRES: !empty().
  Status toStatus(std::string_view what) const;

 private:
  std::vector<ErrorDetail> details_;
};

enum class JsonNeed { kOptional, kRequired };

// Inclusive bounds unless min_exclusive ("greater than min").
struct JsonBounds {
  double min;
  double max;
  bool min_exclusive = false;
};

// How bounds read in messages: "in [0, 3600]", "in (0, 1]"; a max at int64's limit or
// beyond reads "of at least <min>" ("greater than <min>").
std::string describeBounds(const JsonBounds& bounds);

// One JSON object read at `path` ("" for the document itself). A value that is not an
// object is one problem at `path`; every read of it then finds nothing. Problems go to
// `problems`, which must outlive the reader.
class JsonReader {
 public:
  JsonReader(const nlohmann::json& value, std::string path, JsonProblems& problems,
             std::string_view not_object = "must be an object");

  bool isObject() const { return object_; }
  const nlohmann::json& value() const { return value_; }
  // The path of `key` ("driver_config" + "seed" → "driver_config.seed"); "" → the object's own.
  std::string field(std::string_view key) const;
  // The value under `key`, or nullptr when absent or null.
  const nlohmann::json* find(std::string_view key) const;
  // Records `message` at `key` ("" = the object itself).
  void bad(std::string_view key, std::string message) const;
  // Every key not in `known` is a problem at that key: `message`, by default
  // "unknown key (known: a, b, c)".
  void onlyKeys(std::initializer_list<std::string_view> known, std::string message = "") const;

  // Typed reads: nullopt (and, when `need` is required, "is required") when absent;
  // nullopt after recording a problem when the value has the wrong type or is out of
  // bounds. `must` replaces the default message of a bad value ("must be a string", "must be
  // a number in [0, 1]", ...).
  std::optional<std::string> string(std::string_view key, JsonNeed need, std::string must = "") const;
  std::optional<int64_t> integer(std::string_view key, JsonNeed need, JsonBounds bounds, std::string must = "") const;
  // A whole number of at least 0 up to UINT64_MAX (seeds).
  std::optional<uint64_t> unsignedInteger(std::string_view key, JsonNeed need, std::string must = "") const;
  std::optional<double> number(std::string_view key, JsonNeed need, JsonBounds bounds, std::string must = "") const;
  std::optional<bool> boolean(std::string_view key, JsonNeed need, std::string must = "") const;
  // The value if it is an array / object (a problem otherwise), else nullptr.
  const nlohmann::json* array(std::string_view key, JsonNeed need, std::string must = "") const;
  const nlohmann::json* object(std::string_view key, JsonNeed need, std::string must = "") const;

  // A reader of the object at index `index` of the array under `key` ("instances[2]").
  JsonReader element(std::string_view key, size_t index, const nlohmann::json& value) const;
  // A reader of the object under `key` ("resources").
  JsonReader child(std::string_view key, const nlohmann::json& value) const;

 private:
  // The value under `key` when present; "is required" when absent and needed.
  const nlohmann::json* present(std::string_view key, JsonNeed need) const;

  const nlohmann::json& value_;
  std::string path_;
  JsonProblems& problems_;
  bool object_;
};

}  // namespace tide
