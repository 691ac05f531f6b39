#pragma once
// The source tree the tests were built from (TIDE_SOURCE_DIR): the shipped examples,
// policies and scripts, read where they are.

#include <filesystem>
#include <string>

namespace tide::testing {

inline const std::string kSourceDir = TIDE_SOURCE_DIR;
inline const std::filesystem::path kSourceTree = TIDE_SOURCE_DIR;

// examples/<name>, as a CLI argument.
inline std::string example(const std::string& name) { return kSourceDir + "/examples/" + name; }

// A copy of the shipped policies under `dir` without change_freeze.lua, whose windows are
// dates of the real calendar that `tide serve` decides by: with it, a rollout outside dev
// is REJECTED on the days of a freeze (the suite failed on Black Friday 2026). The policy
// itself is tested by its own `tests` table, at the times it names.
inline std::filesystem::path shippedPolicies(const std::filesystem::path& dir) {
  const std::filesystem::path policies = dir / "policies";
  std::filesystem::create_directories(policies);
  for (const auto& entry : std::filesystem::directory_iterator(kSourceTree / "policies")) {
    if (entry.path().filename() == "change_freeze.lua") continue;
    std::filesystem::copy_file(entry.path(), policies / entry.path().filename(),
                               std::filesystem::copy_options::overwrite_existing);
  }
  return policies;
}

// The plan of examples/nginx-plan.yaml (MRDS's example plan).
inline const std::string kExamplePlan = "nginx-deployment-plan";

}  // namespace tide::testing
