#include "host/agent/desired_state.h"

namespace tide::agent {

Result<DesiredState> parseDesiredState(const model::Json& document, const std::string& node) {
  if (!document.is_object()) return Status::invalidArgument("the desired state is not a JSON object");
  TIDE_ASSIGN_OR_RETURN(drivers::DesiredDocument parsed, drivers::desiredFromJson(document));
  if (parsed.node != node) {
    const std::string problem = "is \"" + parsed.node + "\", not this agent's node " + node;
    return Status::invalidArgument("bad desired document: node " + problem, {{"node", problem, ""}});
  }
  DesiredState state;
  state.version = parsed.version;
  for (drivers::DesiredInstance& instance : parsed.instances) {
    state.instances.push_back({std::move(instance.spec), instance.want == drivers::kWantRunning});
  }
  state.volumes = std::move(parsed.volumes);
  state.logs = std::move(parsed.logs);
  return state;
}

}  // namespace tide::agent
