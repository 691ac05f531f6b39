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

// The plan of examples/nginx-plan.yaml (MRDS's example plan).
inline const std::string kExamplePlan = "nginx-deployment-plan";

}  // namespace tide::testing
