#include "host/core/json_reader.h"

#include <limits>
#include <sstream>

namespace tide {
namespace {

using Json = nlohmann::json;

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

bool within(double value, const JsonBounds& bounds) {
  const bool above_min = bounds.min_exclusive ? value > bounds.min : value >= bounds.min;
  return above_min && value <= bounds.max;
}

}  // namespace

void JsonProblems::add(std::string field, std::string message) {
  details_.push_back({std::move(field), std::move(message), ""});
}

Status JsonProblems::toStatus(std::string_view what) const {
  const ErrorDetail& first = details_.front();
  std::string message = std::string(what) + ": " + first.field + (first.field.empty() ? "" : " ") + first.message;
  if (details_.size() > 1) message += " (and " + std::to_string(details_.size() - 1) + " more)";
  return Status::invalidArgument(message, details_);
}

std::string describeBounds(const JsonBounds& bounds) {
  if (bounds.max >= static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return (bounds.min_exclusive ? "greater than " : "of at least ") + number(bounds.min);
  }
  return std::string(bounds.min_exclusive ? "in (" : "in [") + number(bounds.min) + ", " + number(bounds.max) + "]";
}

JsonReader::JsonReader(const Json& value, std::string path, JsonProblems& problems, std::string_view not_object)
    : value_(value), path_(std::move(path)), problems_(problems), object_(value.is_object()) {
  if (!object_) problems_.add(path_, std::string(not_object));
}

std::string JsonReader::field(std::string_view key) const {
  if (key.empty()) return path_;
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const Json* JsonReader::find(std::string_view key) const {
  if (!object_) return nullptr;
  auto it = value_.find(key);
  return it == value_.end() || it->is_null() ? nullptr : &*it;
}

void JsonReader::bad(std::string_view key, std::string message) const { problems_.add(field(key), std::move(message)); }

void JsonReader::onlyKeys(std::initializer_list<std::string_view> known, std::string message) const {
  if (!object_) return;
  if (message.empty()) {
    std::string list;
    for (std::string_view key : known) list += (list.empty() ? "" : ", ") + std::string(key);
    message = "unknown key (known: " + list + ")";
  }
  for (const auto& item : value_.items()) {
    bool listed = false;
    for (std::string_view key : known) listed = listed || key == item.key();
    if (!listed) bad(item.key(), message);
  }
}

const Json* JsonReader::present(std::string_view key, JsonNeed need) const {
  const Json* value = find(key);
  if (value == nullptr && need == JsonNeed::kRequired && object_) bad(key, "is required");
  return value;
}

std::optional<std::string> JsonReader::string(std::string_view key, JsonNeed need, std::string must) const {
  const Json* value = present(key, need);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) {
    bad(key, must.empty() ? "must be a string" : must);
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::optional<int64_t> JsonReader::integer(std::string_view key, JsonNeed need, JsonBounds bounds,
                                           std::string must) const {
  const Json* value = present(key, need);
  if (value == nullptr) return std::nullopt;
  // Unsigned values past INT64_MAX are out of any int64 bounds.
  const bool fits = value->is_number_integer() &&
                    !(value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX));
  if (!fits || !within(static_cast<double>(value->get<int64_t>()), bounds)) {
    bad(key, must.empty() ? "must be a whole number " + describeBounds(bounds) : must);
    return std::nullopt;
  }
  return value->get<int64_t>();
}

std::optional<uint64_t> JsonReader::unsignedInteger(std::string_view key, JsonNeed need, std::string must) const {
  const Json* value = present(key, need);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_unsigned() || (value->is_number_integer() && value->get<int64_t>() >= 0)) {
    return value->get<uint64_t>();
  }
  bad(key, must.empty() ? "must be a non-negative integer" : must);
  return std::nullopt;
}

std::optional<double> JsonReader::number(std::string_view key, JsonNeed need, JsonBounds bounds,
                                         std::string must) const {
  const Json* value = present(key, need);
  if (value == nullptr) return std::nullopt;
  if (!value->is_number() || !within(value->get<double>(), bounds)) {
    bad(key, must.empty() ? "must be a number " + describeBounds(bounds) : must);
    return std::nullopt;
  }
  return value->get<double>();
}

std::optional<bool> JsonReader::boolean(std::string_view key, JsonNeed need, std::string must) const {
  const Json* value = present(key, need);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean()) {
    bad(key, must.empty() ? "must be true or false" : must);
    return std::nullopt;
  }
  return value->get<bool>();
}

const Json* JsonReader::array(std::string_view key, JsonNeed need, std::string must) const {
  const Json* value = present(key, need);
  if (value != nullptr && !value->is_array()) {
    bad(key, must.empty() ? "must be an array" : must);
    return nullptr;
  }
  return value;
}

const Json* JsonReader::object(std::string_view key, JsonNeed need, std::string must) const {
  const Json* value = present(key, need);
  if (value != nullptr && !value->is_object()) {
    bad(key, must.empty() ? "must be an object" : must);
    return nullptr;
  }
  return value;
}

JsonReader JsonReader::element(std::string_view key, size_t index, const Json& value) const {
  return JsonReader(value, field(key) + "[" + std::to_string(index) + "]", problems_);
}

JsonReader JsonReader::child(std::string_view key, const Json& value) const {
  return JsonReader(value, field(key), problems_);
}

}  // namespace tide
