#include "host/config/field_reader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host/core/names.h"
#include "host/core/suggest.h"

namespace tide::config {
namespace {

using Kind = YamlNode::Kind;
using Json = nlohmann::json;

bool isDigits(std::string_view s, int base) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [base](char c) {
    if (base == 16) return std::isxdigit(static_cast<unsigned char>(c)) != 0;
    if (base == 8) return c >= '0' && c <= '7';
    return c >= '0' && c <= '9';
  });
}

std::string_view withoutPlus(std::string_view s) { return !s.empty() && s[0] == '+' ? s.substr(1) : s; }

// YAML 1.2 core-schema integer: [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+.
bool looksInteger(std::string_view s) {
  if (s.starts_with("0x")) return isDigits(s.substr(2), 16);
  if (s.starts_with("0o")) return isDigits(s.substr(2), 8);
  s = withoutPlus(s);
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  return isDigits(s, 10);
}

// YAML 1.2 core-schema float, without .inf/.nan (tide has no use for them).
bool looksFloat(std::string_view s) {
  s = withoutPlus(s);
  if (!s.empty() && s[0] == '-') s.remove_prefix(1);
  size_t i = 0;
  size_t intDigits = 0, fracDigits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++intDigits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++fracDigits;
  }
  if (intDigits + fracDigits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t expDigits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++expDigits;
    if (expDigits == 0) return false;
  }
  return i == s.size();
}

std::optional<bool> plainBool(std::string_view s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

// Parses a plain scalar that looksInteger(); nullopt when out of int64 range.
std::optional<int64_t> parseInteger(std::string_view s) {
  int base = 10;
  if (s.starts_with("0x"))
    base = 16, s.remove_prefix(2);
  else if (s.starts_with("0o"))
    base = 8, s.remove_prefix(2);
  s = withoutPlus(s);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<double> parseFloat(std::string_view s) {
  s = withoutPlus(s);
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

std::string formatNumber(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.15g", v);
  return buffer;
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  if (s.size() > 40) {
    out.append(s.substr(0, 37));
    out.append("...");
  } else {
    out.append(s);
  }
  return out + "\"";
}

const KeySpec* lookup(const KeyTable& table, std::string_view spelled) {
  for (const auto& spec : table) {
    for (auto spelling : spec.spellings) {
      if (spelling == spelled) return &spec;
    }
  }
  return nullptr;
}

std::string unknownKeyMessage(std::string_view spelled, const KeyTable& table) {
  std::string message = "unknown key " + quote(spelled);
  std::vector<std::string_view> spellings;
  for (const auto& spec : table) spellings.insert(spellings.end(), spec.spellings.begin(), spec.spellings.end());
  if (auto nearest = nearestName(spelled, spellings)) message += " (did you mean " + quote(*nearest) + "?)";
  message += "; known keys: ";
  for (size_t i = 0; i < table.size(); ++i) {
    if (i > 0) message += ", ";
    message += table[i].spellings.front();
  }
  return message;
}

std::string outOfBounds(double v, Bounds b) {
  std::string range = b.min_exclusive ? "greater than " + formatNumber(b.min) + " and at most " + formatNumber(b.max)
                                      : "between " + formatNumber(b.min) + " and " + formatNumber(b.max);
  return "must be " + range + ", got " + formatNumber(v);
}

bool inBounds(double v, Bounds b) { return (b.min_exclusive ? v > b.min : v >= b.min) && v <= b.max; }

// The line and column ending `location` ("<source>:<line>:<column>"); nullopt for another shape.
std::optional<std::pair<long, long>> lineAndColumn(const std::string& location) {
  const size_t column_colon = location.rfind(':');
  if (column_colon == std::string::npos || column_colon == 0) return std::nullopt;
  const size_t line_colon = location.rfind(':', column_colon - 1);
  if (line_colon == std::string::npos) return std::nullopt;
  const std::string_view line = std::string_view(location).substr(line_colon + 1, column_colon - line_colon - 1);
  const std::string_view column = std::string_view(location).substr(column_colon + 1);
  if (!isDigits(line, 10) || !isDigits(column, 10) || line.size() > 9 || column.size() > 9) return std::nullopt;
  return std::pair{std::stol(std::string(line)), std::stol(std::string(column))};
}

}  // namespace

void Problems::add(const YamlNode& at, std::string field, std::string message) {
  details_.push_back({std::move(field), std::move(message), location(at)});
}

std::string Problems::location(const YamlNode& at) const {
  return source_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
}

void Problems::place(const std::string& field, std::string_view canonical_key, const YamlNode& key,
                     const YamlNode& value) {
  const size_t dot = field.size() - key.scalar.size();  // field is childPath(parent, key.scalar)
  const std::string parent = dot == 0 ? "" : field.substr(0, dot - 1);
  std::string canonical = childPath(canonicalPath(parent), canonical_key);
  canonical_[field] = canonical;
  places_.emplace_back(std::move(canonical), model::FieldPlace{field, location(key), location(value)});
}

void Problems::placeItem(const std::string& field, const YamlNode& item) {
  places_.emplace_back(canonicalPath(field), model::FieldPlace{field, location(item), location(item)});
}

std::string Problems::canonicalPath(const std::string& field) const {
  if (auto it = canonical_.find(field); it != canonical_.end()) return it->second;
  if (field.ends_with(']')) {
    if (size_t open = field.rfind('['); open != std::string::npos) {
      return canonicalPath(field.substr(0, open)) + field.substr(open);
    }
  }
  return field;
}

Status Problems::toStatus() const { return problemsStatus(details_); }

Status problemsStatus(std::vector<ErrorDetail> details) {
  std::stable_sort(details.begin(), details.end(), [](const ErrorDetail& a, const ErrorDetail& b) {
    const auto at = lineAndColumn(a.location), bt = lineAndColumn(b.location);
    if (!at || !bt) return at.has_value() && !bt.has_value();
    return *at < *bt;
  });
  const ErrorDetail& first = details.front();
  std::string message = first.location.empty() ? "" : first.location + ": ";
  if (!first.field.empty()) message += first.field + ": ";
  message += first.message;
  if (size_t more = details.size() - 1; more > 0) {
    message += " (and " + std::to_string(more) + (more == 1 ? " more error)" : " more errors)");
  }
  return Status::invalidArgument(std::move(message), std::move(details));
}

std::string indexPath(const std::string& path, size_t index) { return path + "[" + std::to_string(index) + "]"; }

std::string childPath(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string describe(const YamlNode& node) {
  switch (node.kind) {
    case Kind::kNull: return "nothing (null)";
    case Kind::kSequence: return "a list";
    case Kind::kMapping: return "a mapping";
    case Kind::kScalar: break;
  }
  if (!node.quoted) {
    if (plainBool(node.scalar)) return "the boolean " + node.scalar;
    if (looksInteger(node.scalar) || looksFloat(node.scalar)) return "the number " + node.scalar;
  }
  return "the string " + quote(node.scalar);
}

bool mentionsAny(const YamlNode& mapping, const KeyTable& table, std::initializer_list<std::string_view> keys) {
  if (mapping.kind != Kind::kMapping) return false;
  return std::any_of(mapping.entries.begin(), mapping.entries.end(), [&](const auto& entry) {
    if (entry.first.kind != Kind::kScalar) return false;
    const KeySpec* spec = lookup(table, entry.first.scalar);
    return spec != nullptr && (keys.size() == 0 || std::find(keys.begin(), keys.end(), spec->key) != keys.end());
  });
}

const std::pair<YamlNode, YamlNode>* findEntry(const YamlNode& mapping, const KeyTable& table, std::string_view key) {
  if (mapping.kind != Kind::kMapping) return nullptr;
  for (const auto& entry : mapping.entries) {
    if (entry.first.kind != Kind::kScalar) continue;
    const KeySpec* spec = lookup(table, entry.first.scalar);
    if (spec != nullptr && spec->key == key) return &entry;
  }
  return nullptr;
}

bool expectKind(const YamlNode& node, Kind kind, const std::string& field, Problems& problems) {
  if (node.kind == kind) return true;
  const char* wanted = kind == Kind::kMapping    ? "a mapping"
                       : kind == Kind::kSequence ? "a list"
                       : kind == Kind::kScalar   ? "a single value"
                                                 : "nothing";
  problems.add(node, field, std::string("expected ") + wanted + ", got " + describe(node));
  return false;
}

std::optional<std::string> readString(const YamlNode& node, const std::string& field, Problems& problems) {
  if (node.kind != Kind::kScalar) {
    problems.add(node, field, "expected a string, got " + describe(node));
    return std::nullopt;
  }
  return node.scalar;
}

std::optional<std::string> readName(const YamlNode& node, const std::string& field, Problems& problems) {
  auto value = readString(node, field, problems);
  if (!value) return std::nullopt;
  if (std::string problem = nameProblem(*value); !problem.empty()) {
    problems.add(node, field, quote(*value) + " " + problem);
    return std::nullopt;
  }
  return value;
}

std::optional<double> readNumber(const YamlNode& node, const std::string& field, Bounds bounds, Problems& problems) {
  std::optional<double> value;
  if (node.kind == Kind::kScalar && !node.quoted) {
    if (looksInteger(node.scalar)) {
      if (auto i = parseInteger(node.scalar))
        value = static_cast<double>(*i);
      else
        value = parseFloat(node.scalar);
    } else if (looksFloat(node.scalar)) {
      value = parseFloat(node.scalar);
    }
  }
  if (!value) {
    problems.add(node, field, "expected a number, got " + describe(node));
    return std::nullopt;
  }
  if (!inBounds(*value, bounds)) {
    problems.add(node, field, outOfBounds(*value, bounds));
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> readInteger(const YamlNode& node, const std::string& field, Bounds bounds, Problems& problems) {
  if (node.kind != Kind::kScalar || node.quoted || !looksInteger(node.scalar)) {
    problems.add(node, field, "expected an integer, got " + describe(node));
    return std::nullopt;
  }
  auto value = parseInteger(node.scalar);
  if (!value || !inBounds(static_cast<double>(*value), bounds)) {
    problems.add(node, field,
                 value ? outOfBounds(static_cast<double>(*value), bounds)
                       : "must be between " + formatNumber(bounds.min) + " and " + formatNumber(bounds.max) + ", got " +
                             node.scalar);
    return std::nullopt;
  }
  return value;
}

std::optional<bool> readBool(const YamlNode& node, const std::string& field, Problems& problems) {
  std::optional<bool> value;
  if (node.kind == Kind::kScalar && !node.quoted) value = plainBool(node.scalar);
  if (!value) problems.add(node, field, "expected true or false, got " + describe(node));
  return value;
}

std::optional<std::vector<std::string>> readStringList(const YamlNode& node, const std::string& field,
                                                       Problems& problems) {
  if (!expectKind(node, Kind::kSequence, field, problems)) return std::nullopt;
  std::vector<std::string> out;
  bool ok = true;
  for (size_t i = 0; i < node.items.size(); ++i) {
    problems.placeItem(indexPath(field, i), node.items[i]);
    auto item = readString(node.items[i], indexPath(field, i), problems);
    if (item)
      out.push_back(std::move(*item));
    else
      ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

std::optional<Json> readJson(const YamlNode& node, const std::string& field, Problems& problems) {
  switch (node.kind) {
    case Kind::kNull: return Json(nullptr);
    case Kind::kScalar: {
      if (node.quoted) return Json(node.scalar);
      if (auto b = plainBool(node.scalar)) return Json(*b);
      if (looksInteger(node.scalar)) {
        if (auto i = parseInteger(node.scalar)) return Json(*i);
      }
      if (looksFloat(node.scalar) || looksInteger(node.scalar)) {
        if (auto f = parseFloat(node.scalar)) return Json(*f);
      }
      return Json(node.scalar);
    }
    case Kind::kSequence: {
      Json out = Json::array();
      bool ok = true;
      for (size_t i = 0; i < node.items.size(); ++i) {
        problems.placeItem(indexPath(field, i), node.items[i]);
        auto item = readJson(node.items[i], indexPath(field, i), problems);
        if (item)
          out.push_back(std::move(*item));
        else
          ok = false;
      }
      if (!ok) return std::nullopt;
      return out;
    }
    case Kind::kMapping: {
      Json out = Json::object();
      bool ok = true;
      for (const auto& [key, value] : node.entries) {
        if (key.kind != Kind::kScalar) {
          problems.add(key, field, "keys must be strings, got " + describe(key));
          ok = false;
          continue;
        }
        std::string path = childPath(field, key.scalar);
        problems.place(path, key.scalar, key, value);
        if (out.contains(key.scalar)) {
          problems.add(key, path, "key given twice");
          ok = false;
          continue;
        }
        auto item = readJson(value, path, problems);
        if (item)
          out[key.scalar] = std::move(*item);
        else
          ok = false;
      }
      if (!ok) return std::nullopt;
      return out;
    }
  }
  return std::nullopt;
}

Result<std::string> readInputFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Status::notFound("cannot read " + path + ": is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::notFound("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::notFound("cannot read " + path + ": " + std::strerror(errno));
  return text.str();
}

MapReader::MapReader(const YamlNode& node, std::string path, const KeyTable& table, Problems& problems)
    : node_(node), path_(std::move(path)), table_(table), problems_(problems) {
  mapping_ = expectKind(node, Kind::kMapping, path_, problems_);
  if (!mapping_) return;
  for (const auto& [key, value] : node.entries) {
    if (key.kind != Kind::kScalar) {
      problems_.add(key, path_, "keys must be strings, got " + describe(key));
      continue;
    }
    std::string field = childPath(path_, key.scalar);
    const KeySpec* spec = lookup(table_, key.scalar);
    if (spec == nullptr) {
      problems_.add(key, field, unknownKeyMessage(key.scalar, table_));
      continue;
    }
    if (const Found* earlier = find(spec->key)) {
      problems_.add(key, field,
                    "key given twice (first as " + quote(earlier->spelled) + " at line " +
                        std::to_string(earlier->value->line) + ")");
      continue;
    }
    problems_.place(field, spec->key, key, value);
    found_.push_back({spec, key.scalar, &value});
  }
}

const MapReader::Found* MapReader::find(std::string_view key) const {
  for (const auto& f : found_) {
    if (f.spec->key == key) return &f;
  }
  return nullptr;
}

const YamlNode* MapReader::get(std::string_view key, Need need) {
  const Found* f = find(key);
  if (f != nullptr && f->value->kind != Kind::kNull) return f->value;
  if (need == Need::kRequired && mapping_) {
    if (f != nullptr)
      problems_.add(*f->value, field(key), "is required, got nothing (null)");
    else
      problems_.add(node_, field(key), "is required");
  }
  return nullptr;
}

std::string MapReader::field(std::string_view key) const {
  if (const Found* f = find(key)) return childPath(path_, f->spelled);
  for (const auto& spec : table_) {
    if (spec.key == key) return childPath(path_, spec.spellings.front());
  }
  return childPath(path_, key);
}

std::optional<std::string> MapReader::string(std::string_view key, Need need) {
  const YamlNode* v = get(key, need);
  return v ? readString(*v, field(key), problems_) : std::nullopt;
}

std::optional<std::string> MapReader::name(std::string_view key, Need need) {
  const YamlNode* v = get(key, need);
  return v ? readName(*v, field(key), problems_) : std::nullopt;
}

std::optional<double> MapReader::number(std::string_view key, Need need, Bounds bounds) {
  const YamlNode* v = get(key, need);
  return v ? readNumber(*v, field(key), bounds, problems_) : std::nullopt;
}

std::optional<int64_t> MapReader::integer(std::string_view key, Need need, Bounds bounds) {
  const YamlNode* v = get(key, need);
  return v ? readInteger(*v, field(key), bounds, problems_) : std::nullopt;
}

std::optional<bool> MapReader::boolean(std::string_view key, Need need) {
  const YamlNode* v = get(key, need);
  return v ? readBool(*v, field(key), problems_) : std::nullopt;
}

std::optional<std::vector<std::string>> MapReader::stringList(std::string_view key, Need need) {
  const YamlNode* v = get(key, need);
  return v ? readStringList(*v, field(key), problems_) : std::nullopt;
}

std::optional<Json> MapReader::json(std::string_view key, Need need) {
  const YamlNode* v = get(key, need);
  return v ? readJson(*v, field(key), problems_) : std::nullopt;
}

const YamlNode* MapReader::sequence(std::string_view key, Need need) {
  const YamlNode* v = get(key, need);
  return v && expectKind(*v, Kind::kSequence, field(key), problems_) ? v : nullptr;
}

const YamlNode* MapReader::mapping(std::string_view key, Need need) {
  const YamlNode* v = get(key, need);
  return v && expectKind(*v, Kind::kMapping, field(key), problems_) ? v : nullptr;
}

}  // namespace tide::config
