#pragma once
// Errors are values in tide. Every fallible call returns Status or Result<T>; libraries
// that throw (SOCI, yaml-cpp, httplib, nlohmann) are caught in the one adapter file that
// calls them and turned into a Status here.

#include <cassert>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace tide {

// The closed set of error classes. The HTTP layer maps each to one status code
// (host/api/errors.cpp); nothing else decides what a client sees.
enum class Code {
  kOk,
  kInvalidArgument,    // bad input; details name the field (400)
  kUnauthenticated,    // 401
  kPermissionDenied,   // 403
  kNotFound,           // 404
  kMethodNotAllowed,   // the path is served, the method is not (405, with Allow)
  kAlreadyExists,      // 409
  kConflict,           // stale generation or state clash (409)
  kPreconditionFailed, // a PUT's If-Match names a generation the record has moved past (412)
  kPayloadTooLarge,    // 413
  kUnprocessable,      // valid syntax, impossible request (422)
  kResourceExhausted,  // limits hit: memory caps, rate limits (429)
  kDeadlineExceeded,   // 504
  kUnavailable,        // 503
  kInternal,           // 500
};

// Stable lower_snake name of a code, used in the error envelope and in events.
const char* codeName(Code code);

// One problem with one piece of input. `location` is "file:line" for manifests, empty
// for JSON bodies; `field` is a dotted path such as "nodes[2].totalResources.cores".
struct ErrorDetail {
  std::string field;
  std::string message;
  std::string location;

  bool operator==(const ErrorDetail&) const = default;
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK

  static Status ok() { return Status(); }
  static Status invalidArgument(std::string message, std::vector<ErrorDetail> details = {}) {
    return Status(Code::kInvalidArgument, std::move(message), std::move(details));
  }
  static Status unauthenticated(std::string message) { return Status(Code::kUnauthenticated, std::move(message)); }
  static Status permissionDenied(std::string message) { return Status(Code::kPermissionDenied, std::move(message)); }
  static Status notFound(std::string message) { return Status(Code::kNotFound, std::move(message)); }
  static Status methodNotAllowed(std::string message) { return Status(Code::kMethodNotAllowed, std::move(message)); }
  static Status alreadyExists(std::string message) { return Status(Code::kAlreadyExists, std::move(message)); }
  static Status conflict(std::string message) { return Status(Code::kConflict, std::move(message)); }
  static Status preconditionFailed(std::string message) {
    return Status(Code::kPreconditionFailed, std::move(message));
  }
  static Status payloadTooLarge(std::string message) { return Status(Code::kPayloadTooLarge, std::move(message)); }
  static Status unprocessable(std::string message) { return Status(Code::kUnprocessable, std::move(message)); }
  static Status resourceExhausted(std::string message) { return Status(Code::kResourceExhausted, std::move(message)); }
  static Status deadlineExceeded(std::string message) { return Status(Code::kDeadlineExceeded, std::move(message)); }
  static Status unavailable(std::string message) { return Status(Code::kUnavailable, std::move(message)); }
  static Status internal(std::string message) { return Status(Code::kInternal, std::move(message)); }

  Status(Code code, std::string message, std::vector<ErrorDetail> details = {})
      : code_(code), message_(std::move(message)), details_(std::move(details)) {}

  bool isOk() const { return code_ == Code::kOk; }
  explicit operator bool() const { return isOk(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::vector<ErrorDetail>& details() const { return details_; }

  // "invalid_argument: message" (plus one line per detail).
  std::string toString() const;

  // A copy whose message reads "<prefix>: <message>".
  Status withPrefix(const std::string& prefix) const;

 private:
  Code code_ = Code::kOk;
  std::string message_;
  std::vector<ErrorDetail> details_;
};

// A value or the Status explaining why there is none. Constructing a Result from an OK
// Status is a programming error.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}                                                // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).isOk()); }  // NOLINT

  bool isOk() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return isOk(); }

  const Status& status() const {
    static const Status kOk;
    return isOk() ? kOk : std::get<Status>(v_);
  }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tide

// Propagate a non-OK Status out of the calling function.
#define TIDE_RETURN_IF_ERROR(expr)                 \
  do {                                             \
    ::tide::Status tide_status_ = (expr);          \
    if (!tide_status_.isOk()) return tide_status_; \
  } while (0)

#define TIDE_CONCAT_INNER_(a, b) a##b
#define TIDE_CONCAT_(a, b) TIDE_CONCAT_INNER_(a, b)
// `TIDE_ASSIGN_OR_RETURN(auto x, f());` binds the value or returns the Status.
#define TIDE_ASSIGN_OR_RETURN(lhs, expr)                                                                  \
  auto TIDE_CONCAT_(tide_result_, __LINE__) = (expr);                                                     \
  if (!TIDE_CONCAT_(tide_result_, __LINE__).isOk()) return TIDE_CONCAT_(tide_result_, __LINE__).status(); \
  lhs = std::move(TIDE_CONCAT_(tide_result_, __LINE__)).value()
