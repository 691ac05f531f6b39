#include "host/config/yaml_tree.h"

#include <optional>
#include <sstream>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "host/core/utf8.h"

namespace tide::config {

YamlNode::YamlNode() = default;

namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kMaxValues = 100'000;
const std::string kTooDeep = "nesting deeper than " + std::to_string(kMaxDepth) + " levels";

// Where a problem is: a YamlNode's line and column, or a yaml-cpp Mark's (0-based, -1 unknown).
struct Position {
  int line = 1;
  int column = 1;
};

Position positionOf(const YAML::Mark& mark, Position fallback = {}) {
  if (mark.line < 0) return fallback;
  return {mark.line + 1, mark.column < 0 ? 1 : mark.column + 1};
}

Status syntaxError(const std::string& source, Position at, const std::string& message) {
  std::string location = source + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
  return Status::invalidArgument(location + ": " + message, {{"", message, location}});
}

// Copies yaml-cpp's node graph into a tree. Aliases share nodes in yaml-cpp, so the copy
// is bounded by depth (a recursive alias never ends) and by total size.
class Converter {
 public:
  explicit Converter(const std::string& source) : source_(source) {}

  Status convert(const YAML::Node& in, Position fallback, int depth, YamlNode& out) {
    if (++values_ > kMaxValues) {
      return syntaxError(source_, fallback, "document too large (more than 100000 values after alias expansion)");
    }
    if (depth > kMaxDepth) return syntaxError(source_, fallback, kTooDeep);
    const Position at = positionOf(in.Mark(), fallback);
    out.line = at.line;
    out.column = at.column;
    switch (in.Type()) {
      case YAML::NodeType::Scalar: {
        out.kind = YamlNode::Kind::kScalar;
        out.scalar = in.Scalar();
        // Escapes cannot produce such bytes (yaml-cpp refuses "\uD800" and "\U00110000"); raw bytes can.
        if (size_t bad = firstInvalidUtf8(out.scalar); bad != std::string::npos) {
          return syntaxError(source_, at, "not UTF-8: byte " + std::to_string(bad + 1) + " of a key or value");
        }
        const std::string& tag = in.Tag();
        out.quoted = tag == "!" || tag == "tag:yaml.org,2002:str";
        return Status::ok();
      }
      case YAML::NodeType::Sequence:
        out.kind = YamlNode::Kind::kSequence;
        for (const auto& item : in) {
          out.items.emplace_back();
          TIDE_RETURN_IF_ERROR(convert(item, at, depth + 1, out.items.back()));
        }
        return Status::ok();
      case YAML::NodeType::Map:
        out.kind = YamlNode::Kind::kMapping;
        for (auto it = in.begin(); it != in.end(); ++it) {
          out.entries.emplace_back();
          auto& [key, value] = out.entries.back();
          TIDE_RETURN_IF_ERROR(convert(it->first, at, depth + 1, key));
          // yaml-cpp marks an empty value at the next token, often the next line: the key
          // stands for it.
          const Position keyAt{key.line, key.column};
          TIDE_RETURN_IF_ERROR(convert(it->second, keyAt, depth + 1, value));
          if (value.kind == YamlNode::Kind::kNull) value.line = key.line, value.column = key.column;
        }
        return Status::ok();
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined: out.kind = YamlNode::Kind::kNull; return Status::ok();
    }
    return Status::ok();
  }

 private:
  const std::string& source_;
  size_t values_ = 0;
};

// yaml-cpp 0.7 (Debian 12) loops for ever, allocating as it goes, on a token no rule takes
// at the top of a document (a stray ',' as in "\n,"): each document it reads is an empty one
// that consumes nothing, so LoadAll never gets to the end (jbeder/yaml-cpp#1040, fixed in
// 0.8's LoadAll). This first pass reads only the parser's events and stops at the first
// document that begins where the one before it did.
class ProgressCheck : public YAML::EventHandler {
 public:
  // The mark of the document that did not move the parser on, if any.
  std::optional<YAML::Mark> stuck;

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (started_ && mark.pos == last_start_.pos) stuck = mark;
    started_ = true;
    last_start_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  bool started_ = false;
  YAML::Mark last_start_;
};

// Throws YAML::ParserException where LoadAll(text) would never return.
void checkParserProgress(std::string_view text) {
  std::istringstream stream{std::string(text)};
  YAML::Parser parser(stream);
  ProgressCheck check;
  while (parser.HandleNextDocument(check)) {
    if (!check.stuck) continue;
    const size_t at = static_cast<size_t>(check.stuck->pos);
    const std::string token = at < text.size() ? std::string(1, text[at]) : std::string("end of input");
    throw YAML::ParserException(*check.stuck, "unexpected '" + token + "' where a document should begin");
  }
}

}  // namespace

Result<std::vector<YamlNode>> parseYamlDocuments(std::string_view text, const std::string& source) {
  try {
    checkParserProgress(text);
    std::vector<YAML::Node> documents = YAML::LoadAll(std::string(text));
    std::vector<YamlNode> out;
    Converter converter(source);
    for (const auto& document : documents) {
      if (document.IsNull() || !document.IsDefined()) continue;
      YamlNode node;
      TIDE_RETURN_IF_ERROR(converter.convert(document, Position{}, 0, node));
      out.push_back(std::move(node));
    }
    return out;
  } catch (const YAML::DeepRecursion& e) {
    // yaml-cpp's own guard, far deeper than kMaxDepth, against overflowing its parser's stack.
    return syntaxError(source, positionOf(e.mark), kTooDeep);
  } catch (const YAML::Exception& e) {
    return syntaxError(source, positionOf(e.mark), "YAML syntax error: " + e.msg);
  } catch (const std::exception& e) {
    return syntaxError(source, Position{}, std::string("YAML syntax error: ") + e.what());
  }
}

}  // namespace tide::config
