#pragma once
// Bearer-token authentication and role checks (docs/architecture.md#http-api-and-auth). Tokens come from the ledger's
// tokens table (which stores only sha256 digests) and from the host configuration.
//
// Thread-safety: authenticate() may be called from any number of threads; bootstrap()
// runs once from ApiServer::start() before requests are served.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/api/handler.h"
#include "host/core/status.h"
#include "host/ledger/ledger.h"

namespace tide::api {

// Name of the admin token written on first start, as recorded in events.
inline constexpr std::string_view kBootstrapTokenName = "bootstrap-admin";
inline constexpr std::string_view kAdminTokenFile = "admin.token";

class Authenticator {
 public:
  // `config_tokens` are {token, role} pairs; the n-th (from 1) acts as "config-token-<n>".
  // With `enabled` false every request acts as "anonymous" with the admin role.
  Authenticator(ledger::Ledger& ledger, bool enabled,
                const std::vector<std::pair<std::string, std::string>>& config_tokens);

  // kInvalidArgument when a configured token is empty or names an unknown role.
  Status checkConfig() const;

  // When auth is on and neither the ledger nor the configuration holds a token: creates a
  // random 32-byte admin token, writes it (hex, no newline) to <data_dir>/admin.token
  // with mode 0600, creating data_dir if needed, and stores its sha256 in the ledger.
  // Does nothing otherwise. On error nothing is left behind.
  Status bootstrap(const std::string& data_dir);

  // The principal behind an `Authorization` header value. kUnauthenticated when the header
  // is missing, not a bearer token, or the token is unknown or revoked.
  Result<Principal> authenticate(std::string_view authorization) const;

 private:
  struct ConfigToken {
    std::string sha256;
    std::string name;
    std::string role;
  };

  ledger::Ledger& ledger_;
  bool enabled_;
  std::vector<ConfigToken> config_tokens_;
};

// kPermissionDenied when `principal` holds less than `required`.
Status authorize(const Principal& principal, Role required);

}  // namespace tide::api
