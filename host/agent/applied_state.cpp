#include "host/agent/applied_state.h"

#include <exception>

#include "drivers/process/state_store.h"
#include "host/core/durable_file.h"

namespace tide::agent {

Result<AppliedState> loadAppliedState(const std::string& path) {
  TIDE_ASSIGN_OR_RETURN(std::optional<model::Json> file, drivers::readJsonFile(path));
  AppliedState state;
  if (!file) return state;
  try {
    state.version.epoch = file->at("epoch").get<int64_t>();
    state.version.revision = file->at("revision").get<int64_t>();
    state.complete = file->value("complete", true);
    state.coordinates = file->value("coordinates", std::map<std::string, model::Json>{});
    state.volumes = file->value("volumes", std::set<std::string>{});
    state.document = file->value("document", model::Json());
  } catch (const std::exception& e) {
    return Status::internal("corrupt agent state " + path + ": " + e.what());
  }
  return state;
}

Status saveAppliedState(const std::string& path, const AppliedState& state) {
  const model::Json file = {{"epoch", state.version.epoch},
                            {"revision", state.version.revision},
                            {"complete", state.complete},
                            {"coordinates", state.coordinates},
                            {"volumes", state.volumes},
                            {"document", state.document}};
  return writeFileDurably(path, file.dump(2) + "\n");
}

}  // namespace tide::agent
