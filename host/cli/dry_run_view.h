#pragma once
// What the CLI prints of a dry run (docs/api.md#dry-runs): `tide plan diff -m FILE` and the
// `--dry-run` flag of every verb that applies something. Each ends with the line
// kNothingWritten, so a reader of a log knows nothing changed.

#include <ostream>
#include <string>

#include "host/cli/json_fields.h"

namespace tide::cli {

using Json = nlohmann::json;

inline constexpr const char* kNothingWritten = "Dry run: nothing was written.";

// `path` with ?dry_run=true (or &dry_run=true) when `dry_run`.
std::string withDryRun(const std::string& path, bool dry_run);

// A rollout preview (api::rolloutPreview), indented by `indent`: what it replaces, creates and
// removes, then per operation type the outcome, the approvals it waits on and the policies
// that decided it.
void printRolloutPreview(std::ostream& out, const Json& rollout, const std::string& indent = "  ");

// A manifest dry run (POST /v1/manifests?dry_run=true): one line per record, with its
// action, then each new deployment's rollout preview and the warnings.
void printManifestDiff(std::ostream& out, const Json& diff);

}  // namespace tide::cli
