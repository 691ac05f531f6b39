#pragma once
// Reading a YamlNode tree into typed values while collecting every problem, not just the
// first. Shared by the manifest and host-config parsers so both report the same way:
// each problem is an ErrorDetail{field, message, "<source>:<line>"} where field is the
// dotted path as the user spelled it ("nodes[0].totalResources.cores").

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/config/yaml_tree.h"
#include "host/core/status.h"

namespace tide::config {

// Every problem found in one input.
class Problems {
 public:
  explicit Problems(std::string source) : source_(std::move(source)) {}

  void add(int line, std::string field, std::string message);
  void add(const YamlNode& at, std::string field, std::string message) {
    add(at.line, std::move(field), std::move(message));
  }
  bool empty() const { return details_.empty(); }
  size_t count() const { return details_.size(); }
  const std::string& source() const { return source_; }
  std::string location(int line) const { return source_ + ":" + std::to_string(line); }

  // kInvalidArgument: the first problem as "<location>: <field>: <message>", then
  // " (and N more errors)", with every problem in details. REQUIRES: !empty().
  Status toStatus() const;

 private:
  std::string source_;
  std::vector<ErrorDetail> details_;
};

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
// keys (suggesting the known ones), non-scalar keys, and a key given twice under any
// spelling. Getters report a missing required key at the mapping's line.
class MapReader {
 public:
  MapReader(const YamlNode& node, std::string path, const KeyTable& table, Problems& problems);

  bool isMapping() const { return mapping_; }
  int line() const { return node_.line; }
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
