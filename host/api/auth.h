#pragma once
// Bearer-token authentication and role checks (docs/architecture.md#http-api-and-auth). Tokens come from the ledger's
// tokens table (which stores only sha256 digests) and from the host configuration.
//
// The ledger tokens a request authenticated with are kept in memory by digest until the
// ledger commits a change to its tokens table (read_cache.h), so a revoked token is refused
// from the moment its revocation returns, whoever revoked it.
//
// Thread-safety: authenticate() may be called from any number of threads; bootstrap()
// runs once from ApiServer::start() before requests are served.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "host/api/handler.h"
#include "host/api/read_cache.h"
#include "host/config/host_config.h"
#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/ledger/ledger.h"

namespace tide::api {

// Name of the admin token written on first start, as recorded in events.
inline constexpr std::string_view kBootstrapTokenName = "bootstrap-admin";
inline constexpr std::string_view kAdminTokenFile = "admin.token";

// A token as issued: the ledger's record and the secret, which is shown once and never stored.
struct IssuedToken {
  model::ApiToken record;
  std::string secret;
};

class Authenticator {
 public:
  // `config_tokens` (auth.tokens) act under their own names. With `enabled` false every
  // request acts as "anonymous" with the admin role. `clock` (the ledger's) tells when a
  // token kept in memory has expired. `ledger` and `clock` must outlive the Authenticator.
  Authenticator(ledger::Ledger& ledger, bool enabled, const std::vector<config::TokenConfig>& config_tokens,
                const Clock& clock);

  // kInvalidArgument when a configured token or its name is empty, or names an unknown role.
  Status checkConfig() const;

  // When auth is on and neither the ledger nor the configuration holds a token: creates a
  // random 32-byte admin token, writes it (hex, no newline) to <data_dir>/admin.token
  // with mode 0600, creating data_dir if needed, and stores its sha256 in the ledger.
  // Does nothing otherwise. On error nothing is left behind.
  Status bootstrap(const std::string& data_dir);

  // The principal behind an `Authorization` header value. kUnauthenticated when the header
  // is missing, not a bearer token, or the token is unknown, revoked or expired.
  Result<Principal> authenticate(std::string_view authorization) const;

  // A new random token named `name` in the ledger (`expires_at` "" for never). A name a
  // config token holds is kAlreadyExists, like the name of a live ledger token.
  // `node`: the node an agent token serves (required for role agent, refused for others).
  // `namespaces`: the namespaces the role acts in (ApiToken::namespaces; empty: every one).
  Result<IssuedToken> issue(const std::string& name, const std::string& role, const std::string& expires_at,
                            const std::string& actor, const std::string& node = "",
                            const std::vector<std::string>& namespaces = {});
  // Revokes the live ledger token `name`. A config token cannot be revoked here
  // (kInvalidArgument: edit auth.tokens), and the last admin token is kept (kConflict)
  // unless a config token holds the admin role.
  Result<model::ApiToken> revoke(const std::string& name, const std::string& actor);

  struct ConfigTokenInfo {
    std::string name;
    std::string role;
    std::vector<std::string> namespaces;
  };
  // The configured tokens, without their secrets, in config order.
  std::vector<ConfigTokenInfo> configTokens() const;

 private:
  struct ConfigToken {
    std::string sha256;
    std::string name;
    std::string role;
    std::vector<std::string> namespaces;
  };
  const ConfigToken* configToken(const std::string& name) const;

  ledger::Ledger& ledger_;
  bool enabled_;
  std::vector<ConfigToken> config_tokens_;
  const Clock& clock_;
  // Live ledger tokens by sha256 digest, as findToken() answered them.
  mutable ReadCache<model::ApiToken> live_tokens_;
};

// kPermissionDenied when `principal`'s role does not allow `required` (roleAllows), or when
// an agent calls the routes of another node than its token's (`node`: the route's {node},
// "" for routes without one).
Status authorize(const Principal& principal, Role required, const std::string& node = "");

}  // namespace tide::api
