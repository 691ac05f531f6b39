#pragma once
// Reading a YamlNode tree into typed values while collecting every problem, not just the
// first. Shared by the manifest and host-config parsers so both report the same way:
// each problem is an ErrorDetail{field, message, "<source>:<line>:<column>"} where field is
// the dotted path as the user spelled it ("nodes[0].totalResources.cores") and the column
// (1-based) is that of the key or value at fault.

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/config/yaml_tree.h"
#include "host/core/status.h"
#include "host/model/manifest.h"

namespace tide::config {

// Every problem found in one input, and where each key read from it was written (so checks
// made after parsing can still name the line and column of what they refuse).
class Problems {
 public:
  explicit Problems(std::string source) : source_(std::move(source)) {}

  void add(const YamlNode& at, std::string field, std::string message);
  bool empty() const { return details_.empty(); }
  size_t count() const { return details_.size(); }
  const std::string& source() const { return source_; }
  const std::vector<ErrorDetail>& details() const { return details_; }
  // "<source>:<line>:<column>".
  std::string location(const YamlNode& at) const;

  // Records that the key `key` at `field` (the path as spelled), whose canonical spelling
  // is `canonical_key`, holds `value`.
  void place(const std::string& field, std::string_view canonical_key, const YamlNode& key, const YamlNode& value);
  // Records that item `field` ("capabilityIDs[2]", the path as spelled) of a list is `item`.
  void placeItem(const std::string& field, const YamlNode& item);
  // The canonical path of `field` (a path as spelled): each key as its KeyTable names it.
  std::string canonicalPath(const std::string& field) const;
  // The places recorded so far by canonical path, in reading order; places().size() marks
  // a point to slice from.
  const std::vector<std::pair<std::string, model::FieldPlace>>& places() const { return places_; }

  // problemsStatus(details()). REQUIRES: !empty().
  Status toStatus() const;

 private:
  std::string source_;
  std::vector<ErrorDetail> details_;
  std::vector<std::pair<std::string, model::FieldPlace>> places_;
  std::map<std::string, std::string> canonical_;  // spelled path → canonical path
};

// kInvalidArgument holding every problem of one input in file order (by line, then column,
// of "<source>:<line>:<column>" locations; unlocated ones last, each kind keeping its order),
// whose message is the first as "<location>: <field>: <message>" then " (and N more errors)".
// REQUIRES: !details.empty().
Status problemsStatus(std::vector<ErrorDetail> details);

// One key a mapping may hold and the spellings accepted for it. The first spelling is
// the one suggestions show.
struct KeySpec {
  std::string_view key;  // canonical, what the parser asks for
  std::vector<std::string_view> spellings;
};
using KeyTable = std::vector<KeySpec>;

std::string indexPath(const std::string& path, size_t index);          // "nodes" + 2 → "nodes[2]"
std::string childPath(const std::string& path, std::string_view key);  // "" + "name" → "name"

// Short description of what a node holds, for "expected X, got Y" messages.
std::string describe(const YamlNode& node);

// Whether `mapping` holds any of the canonical `keys` under a spelling from `table`
// (all of the table when `keys` is empty). Reports nothing; tells document shapes apart.
bool mentionsAny(const YamlNode& mapping, const KeyTable& table, std::initializer_list<std::string_view> keys = {});

// The entry of `mapping` holding canonical `key` (first occurrence), or nullptr.
const std::pair<YamlNode, YamlNode>* findEntry(const YamlNode& mapping, const KeyTable& table, std::string_view key);

struct Bounds {
  double min;
  double max;
  bool min_exclusive = false;  // "greater than min" instead of "at least min"
};

// Typed reads of one value. Each returns nullopt after recording a problem at `field`.
std::optional<std::string> readString(const YamlNode& node, const std::string& field, Problems& problems);
std::optional<std::string> readName(const YamlNode& node, const std::string& field, Problems& problems);
std::optional<double> readNumber(const YamlNode& node, const std::string& field, Bounds bounds, Problems& problems);
std::optional<int64_t> readInteger(const YamlNode& node, const std::string& field, Bounds bounds, Problems& problems);
std::optional<bool> readBool(const YamlNode& node, const std::string& field, Problems& problems);
std::optional<std::vector<std::string>> readStringList(const YamlNode& node, const std::string& field,
                                                       Problems& problems);
// Free-form data: mappings → objects, sequences → arrays, plain scalars typed (integer,
// float, true/false, null, else string), quoted scalars stay strings.
std::optional<nlohmann::json> readJson(const YamlNode& node, const std::string& field, Problems& problems);
bool expectKind(const YamlNode& node, YamlNode::Kind kind, const std::string& field, Problems& problems);

// The whole file at `path`; kNotFound naming the path and the OS error when unreadable.
Result<std::string> readInputFile(const std::string& path);

enum class Need { kOptional, kRequired };

// One mapping read against one KeyTable. Construction reports a non-mapping value, unknown
// keys (suggesting the nearest and listing the known ones), non-scalar keys, and a key given
// twice under any spelling, and places every key it knows (Problems::place). Getters report
// a missing required key at the mapping's position.
class MapReader {
 public:
  MapReader(const YamlNode& node, std::string path, const KeyTable& table, Problems& problems);

  bool isMapping() const { return mapping_; }
  const std::string& path() const { return path_; }
  Problems& problems() { return problems_; }

  // The value under canonical `key`, or nullptr when absent. A null value (`key:` or JSON
  // null) counts as absent, as a JSON client would expect.
  const YamlNode* get(std::string_view key, Need need = Need::kOptional);
  // Path of `key` as spelled by the user, or with its first spelling when absent.
  std::string field(std::string_view key) const;

  std::optional<std::string> string(std::string_view key, Need need);
  std::optional<std::string> name(std::string_view key, Need need);
  std::optional<double> number(std::string_view key, Need need, Bounds bounds);
  std::optional<int64_t> integer(std::string_view key, Need need, Bounds bounds);
  std::optional<bool> boolean(std::string_view key, Need need);
  std::optional<std::vector<std::string>> stringList(std::string_view key, Need need);
  std::optional<nlohmann::json> json(std::string_view key, Need need);
  // The value if it is a sequence / mapping (problem recorded otherwise).
  const YamlNode* sequence(std::string_view key, Need need);
  const YamlNode* mapping(std::string_view key, Need need);

 private:
  struct Found {
    const KeySpec* spec;
    std::string spelled;
    const YamlNode* value;
  };
  const Found* find(std::string_view key) const;

  const YamlNode& node_;
  std::string path_;
  const KeyTable& table_;
  Problems& problems_;
  bool mapping_ = false;
  std::vector<Found> found_;
};

}  // namespace tide::config
