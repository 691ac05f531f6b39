// libFuzzer target: any text as a manifest file (`tide apply -f`, POST /v1/manifests) through
// config::parseManifest (host/config/manifest.h). The single-record parsers behind the
// create routes are driven by api_body_fuzz.
//
// Beyond "no crash, no hang, no sanitizer report" it holds the parser's contract: nothing
// throws, a refusal is kInvalidArgument with at least one detail, and a manifest that
// parses holds at least one record.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host/config/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tide;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<model::Manifest> manifest = config::parseManifest(text, "fuzz.yaml");
  if (!manifest.isOk()) {
    const Status& status = manifest.status();
    if (status.code() != Code::kInvalidArgument || status.details().empty()) std::abort();
    return 0;
  }
  if (manifest->capabilities.empty() && manifest->clusters.empty() && manifest->nodes.empty() &&
      manifest->plans.empty() && manifest->deployments.empty()) {
    std::abort();
  }
  return 0;
}
