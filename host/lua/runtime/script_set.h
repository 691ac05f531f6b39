#pragma once
// The scripts the host runs, as immutable values. ScriptRegistry publishes a new ScriptSet
// after every reload that changed something (RCU): evaluators keep a shared_ptr to the set
// their Lua state was built from and rebuild when current() reports another version.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tide::lua {

enum class ScriptKind { kPolicy, kStrategy, kHook, kLib };

// "policy", "strategy", "hook", "lib" (model::ScriptVersion::kind).
const char* scriptKindName(ScriptKind kind);

// One validated version of one file.
struct ScriptFile {
  std::string path;  // as shown in messages and records, e.g. "policies/change_freeze.lua"
  ScriptKind kind = ScriptKind::kPolicy;
  std::string name;   // the declared `name`; for libs the file stem (tide.lib.<name>)
  std::string level;  // policies only: advisory | soft | hard
  std::string text;
  std::string sha256;
  std::string loaded_at;  // RFC 3339, when this version became active
};

// A file whose content failed validation while no earlier version of it is good, so nothing
// of it runs. It stays in the set so that evaluators can fail closed: a failed policy votes
// as a failing policy (policy_engine.h) instead of being silently absent.
struct FailedScript {
  std::string path;
  ScriptKind kind = ScriptKind::kPolicy;
  std::string name;   // the declared name when loading got that far, else ""
  std::string level;  // policies: the declared level when known, else "" (counts as hard)
  std::string sha256;
  std::string error;  // why validation refused it

  // The name it votes or vetoes under: the declared one, else the path.
  const std::string& shownName() const { return name.empty() ? path : name; }
  // What its failing vote or veto says: the validation error, naming the path.
  std::string reason() const;
};

struct ScriptSet {
  uint64_t version = 0;                     // bumped by every published change; 0 is the empty set
  std::map<std::string, ScriptFile> files;  // by path: the versions that run
  std::map<std::string, FailedScript> failed;  // by path: files with no version that runs

  // The files of one kind, ordered by name.
  std::vector<const ScriptFile*> ofKind(ScriptKind kind) const;
  // The file of `kind` declaring `name`, or null.
  const ScriptFile* find(ScriptKind kind, std::string_view name) const;
};

// Where evaluators read the current set from. ScriptRegistry is the production one.
class ScriptSetProvider {
 public:
  virtual ~ScriptSetProvider() = default;
  // Thread-safe; never null.
  virtual std::shared_ptr<const ScriptSet> current() const = 0;
};

}  // namespace tide::lua
