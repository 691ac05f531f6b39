#pragma once
// The podman CLI as the container driver uses it (docs/architecture.md#the-container-driver).
// Every call is one `podman` process run by runCommand (host/core/subprocess.h): an argv, no
// shell, and a deadline, past which podman is killed and the call fails with kUnavailable, so
// a hung podman never hangs the host. podman's JSON is read here and nowhere else.
//
// Thread-safe: a Podman holds only its options; calls may run on any threads at once (podman
// serialises what must be serialised with its own locks).

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "host/core/status.h"
#include "host/core/subprocess.h"

namespace tide::drivers {

// What podman says of one container.
struct ContainerFacts {
  std::string id;  // the full id
  std::string name;
  std::string state;  // podman's: created, running, paused, stopping, exited, stopped, removing, ...
  int exit_code = 0;
  bool oom_killed = false;
  std::string error;   // why the runtime failed it (State.Error), "" when it did not
  std::string health;  // its HEALTHCHECK's: "", "starting", "healthy" or "unhealthy"
  std::map<std::string, std::string> labels;
  std::map<std::string, int> ports;  // "tcp/80" → host port
};

class Podman {
 public:
  // `binary`: a path or a name on PATH. `timeout`: every call's deadline unless it names one.
  Podman(std::string binary, std::chrono::milliseconds timeout) : binary_(std::move(binary)), timeout_(timeout) {}

  // `podman <args>`, its outcome whatever podman answered. kUnavailable when podman cannot be
  // run at all or did not end within `timeout` (then it was killed).
  // `env`: "NAME=value" entries laid over this process's environment.
  Result<CommandOutcome> call(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                              const std::vector<std::string>& env = {}) const;
  Result<CommandOutcome> call(const std::vector<std::string>& args) const { return call(args, timeout_); }

  // What podman said went wrong: its last "Error: ..." line without the prefix (or its last
  // line that is not a warning), else how it ended.
  static std::string complaint(const CommandOutcome& outcome);
  // Whether a failed call failed because the container does not exist.
  static bool saysNoSuchContainer(const CommandOutcome& outcome);

  // The containers named `names` that exist, in one `podman container inspect`. A name
  // without a container is left out; kUnavailable when podman could not answer.
  Result<std::vector<ContainerFacts>> inspect(const std::vector<std::string>& names) const;
  // Every container (running or not) carrying all of `labels` ("key=value"), in one
  // `podman ps -a`; ps does not report health or the runtime's error (inspect does).
  Result<std::vector<ContainerFacts>> listLabelled(const std::vector<std::string>& labels) const;
  // Whether the image is in local storage. kInvalidArgument for a malformed reference.
  Result<bool> imageExists(const std::string& image) const;
  // `podman rm -f -t <grace> <names>`: stops each (SIGKILL after `grace`) and removes it.
  // Names (or ids) without a container are passed over.
  Status removeForced(const std::vector<std::string>& names, std::chrono::milliseconds grace) const;
  // `podman info`: OK when podman runs here; kUnavailable with its complaint otherwise.
  Status info() const;

 private:
  std::string binary_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tide::drivers
