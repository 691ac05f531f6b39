#include "host/core/status.h"

namespace tide {

const char* codeName(Code code) {
  switch (code) {
    case Code::kOk: return "ok";
    case Code::kInvalidArgument: return "invalid_argument";
    case Code::kUnauthenticated: return "unauthenticated";
    case Code::kPermissionDenied: return "permission_denied";
    case Code::kNotFound: return "not_found";
    case Code::kMethodNotAllowed: return "method_not_allowed";
    case Code::kAlreadyExists: return "already_exists";
    case Code::kConflict: return "conflict";
    case Code::kPreconditionFailed: return "precondition_failed";
    case Code::kPayloadTooLarge: return "payload_too_large";
    case Code::kUnprocessable: return "unprocessable";
    case Code::kResourceExhausted: return "resource_exhausted";
    case Code::kDeadlineExceeded: return "deadline_exceeded";
    case Code::kUnavailable: return "unavailable";
    case Code::kInternal: return "internal";
  }
  return "internal";
}

std::string Status::toString() const {
  if (isOk()) return "ok";
  std::string out = std::string(codeName(code_)) + ": " + message_;
  for (const auto& d : details_) {
    out += "\n  ";
    if (!d.location.empty()) out += d.location + ": ";
    if (!d.field.empty()) out += d.field + ": ";
    out += d.message;
  }
  return out;
}

Status Status::withPrefix(const std::string& prefix) const {
  if (isOk()) return *this;
  return Status(code_, prefix + ": " + message_, details_);
}

}  // namespace tide
