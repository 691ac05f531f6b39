#pragma once
// What a node agent has applied, kept in <data dir>/agent.json (docs/agents.md#fencing-and-idempotency)
// so that a new agent over the same data dir fences the same way and knows what it runs:
//
//   {"epoch": 7, "revision": 42, "complete": true,
//    "coordinates": {"118": {"image": "nginx:1.25"}},   what runs under each id
//    "volumes": ["web-a1b2-0"],                          the volumes it ensured
//    "document": {...}}                                  the document last applied
//
// The agent saves it with complete=false and the new version before it applies a document
// and with complete=true after, so an agent that died half-way applies that document again
// when it starts. Saved via temp file + fsync + rename: a reader sees the old or the new file.

#include <map>
#include <set>
#include <string>

#include "host/agent/desired_state.h"
#include "host/core/status.h"

namespace tide::agent {

struct AppliedState {
  DocumentVersion version;                       // {0, 0}: nothing applied yet
  bool complete = true;                          // false while a document is being applied
  std::map<std::string, model::Json> coordinates;  // runtime id → the coordinates it was started with
  std::set<std::string> volumes;                 // volume ids ensured and not removed since
  model::Json document;                          // the last document applied (null: none)
};

// The state in `path`; an empty AppliedState when there is no file. kInternal naming the
// file when it cannot be read or does not have this shape.
Result<AppliedState> loadAppliedState(const std::string& path);
Status saveAppliedState(const std::string& path, const AppliedState& state);

}  // namespace tide::agent
