#pragma once
// From a runtime instance's coordinates to the argv and environment of a process: the
// image catalog lookup and the `{{...}}` template language of the process driver. Pure
// functions, no I/O.
//
// Coordinates: {"command": ["argv0", ...], "env": {"NAME": "value"}} or
// {"image": "nginx:1.25", "env": {...}}. Placeholders, in argv and in env values:
//   {{tide}}          the tide binary
//   {{image}}         the image, {{image.tag}} the text after its last ':' ("latest" if none)
//   {{port.tcp.80}}   the host port given to the declared port TCP 80 (udp likewise)
//   {{instance}}      the meta instance name
//   {{volume./data}}  the host directory of the volume mounted at /data

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/core/status.h"
#include "host/model/records.h"

namespace tide::drivers {

// Glob pattern (`*` any run of characters, `?` one character) → argv template, tried in order.
using ImageCatalog = std::vector<std::pair<std::string, std::vector<std::string>>>;

bool globMatch(std::string_view pattern, std::string_view text);

// The argv template of the first entry whose pattern matches all of `image`, or nullptr.
const std::vector<std::string>* matchImage(const ImageCatalog& catalog, std::string_view image);

// The text after the last ':' of an image reference, "latest" when there is none (a ':'
// inside a registry host such as "host:5000/app" is not a tag).
std::string imageTag(std::string_view image);

// What the placeholders may refer to.
struct LaunchContext {
  std::string tide_binary;
  std::string instance;  // meta instance name
  std::string runtime_id;
  std::string node;
  std::map<std::string, int> ports;            // "tcp/80" → host port
  std::map<std::string, std::string> volumes;  // mount path → host directory
};

struct Launch {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // coordinates.env and the TIDE_* variables
};

// kInvalidArgument for malformed coordinates, an unknown placeholder or one that refers to
// nothing (an undeclared port, an unmounted volume); kUnprocessable for an image the
// catalog does not know (the message names it).
Result<Launch> buildLaunch(const model::Json& coordinates, const ImageCatalog& catalog, const LaunchContext& context);

// The TIDE_* variables every workload gets: TIDE_INSTANCE, TIDE_RUNTIME_ID, TIDE_NODE,
// TIDE_PORT_TCP_80 (the host port of each declared port) and TIDE_VOLUME_<PATH> (each
// volume's directory, as `context.volumes` names it).
std::map<std::string, std::string> tideVariables(const LaunchContext& context);

// "tcp/80" for protocol "TCP" and port 80: the key of RuntimeStatus::ports.
std::string portKey(const model::Port& port);

// "TIDE_VOLUME_VAR_LIB_DB" for "/var/lib/db".
std::string volumeEnvName(std::string_view mount_path);

}  // namespace tide::drivers
