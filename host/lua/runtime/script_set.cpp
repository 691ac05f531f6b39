#include "host/lua/runtime/script_set.h"

#include <algorithm>

namespace tide::lua {

const char* scriptKindName(ScriptKind kind) {
  switch (kind) {
    case ScriptKind::kPolicy: return "policy";
    case ScriptKind::kStrategy: return "strategy";
    case ScriptKind::kHook: return "hook";
    case ScriptKind::kLib: return "lib";
  }
  return "policy";
}

std::string FailedScript::reason() const {
  const std::string prefix = error.find(path) == std::string::npos ? path + ": " : "";
  return prefix + error + " (the file failed validation and has no earlier good version)";
}

std::vector<const ScriptFile*> ScriptSet::ofKind(ScriptKind kind) const {
  std::vector<const ScriptFile*> out;
  out.reserve(files.size());
  for (const auto& [path, file] : files) {
    if (file.kind == kind) out.push_back(&file);
  }
  std::sort(out.begin(), out.end(), [](const ScriptFile* a, const ScriptFile* b) {
    return a->name != b->name ? a->name < b->name : a->path < b->path;
  });
  return out;
}

const ScriptFile* ScriptSet::find(ScriptKind kind, std::string_view name) const {
  for (const auto& [path, file] : files) {
    if (file.kind == kind && file.name == name) return &file;
  }
  return nullptr;
}

}  // namespace tide::lua
