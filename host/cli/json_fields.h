#pragma once
// Lenient reads of the server's JSON for the CLI's views: a missing key or a value of an
// unexpected type reads as null, an empty list or "", so an older or newer server still
// gets readable output.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "host/cli/table.h"
#include "host/model/states.h"
#include "host/model/transitions.h"

namespace tide::cli {

// The value at `path` inside nested objects, or null when any step is missing.
inline const nlohmann::json& at(const nlohmann::json& json, std::initializer_list<const char*> path) {
  static const nlohmann::json kNull;
  const nlohmann::json* current = &json;
  for (const char* key : path) {
    if (!current->is_object()) return kNull;
    auto it = current->find(key);
    if (it == current->end()) return kNull;
    current = &*it;
  }
  return *current;
}

// Arrays iterate as themselves; anything else as an empty array.
inline const nlohmann::json& items(const nlohmann::json& json) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  return json.is_array() ? json : kEmpty;
}

// A scalar as the CLI prints it (numbers without trailing zeros, null as ""); objects and
// arrays as compact JSON.
inline std::string text(const nlohmann::json& value) {
  using Type = nlohmann::json::value_t;
  switch (value.type()) {
    case Type::null: return "";
    case Type::string: return value.get<std::string>();
    case Type::boolean: return value.get<bool>() ? "true" : "false";
    case Type::number_integer: return std::to_string(value.get<int64_t>());
    case Type::number_unsigned: return std::to_string(value.get<uint64_t>());
    case Type::number_float: return formatNumber(value.get<double>());
    default: return value.dump();
  }
}

inline std::string text(const nlohmann::json& json, std::initializer_list<const char*> path) {
  return text(at(json, path));
}

// The state or operation type at `path`, or nullopt when it is missing or not one E has (a
// newer server's): the caller decides what an unknown one means and prints the text as is.
template <model::Vocabulary E>
std::optional<E> vocabularyAt(const nlohmann::json& json, std::initializer_list<const char*> path) {
  return model::parse<E>(text(json, path));
}

// Whether `text` (as the server spelled it) is `value`.
template <model::Vocabulary E>
bool spells(const std::string& text, E value) {
  return text == model::toString(value);
}

// Whether `state` (a deployment's, as the server spelled it) is a rollout that is over.
inline bool rolloutOver(const std::string& state) {
  const std::optional<model::DeploymentState> parsed = model::parse<model::DeploymentState>(state);
  return parsed && model::isRolloutOver(*parsed);
}

}  // namespace tide::cli
