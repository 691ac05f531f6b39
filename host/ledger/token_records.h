#pragma once
// API tokens (docs/architecture.md#authentication).

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/core/status.h"
#include "host/ledger/ledger_types.h"

namespace tide::ledger {

// The ledger's API tokens; Ledger::tokens(). Every method keeps ledger.h's contracts.
class TokenRecords : public Repository {
 public:
  explicit TokenRecords(LedgerCore& core) : Repository(core) {}
  TokenRecords(const TokenRecords&) = delete;
  TokenRecords& operator=(const TokenRecords&) = delete;

  // --- API tokens --------------------------------------------------------------------------
  // Only the token's sha256 is stored. Roles: viewer < operator < approver < admin, and
  // agent beside them, bound to `node` (docs/agents.md#tokens).
  // `expires_at` is a timestamp (formatTimestamp) or "" for never. kInvalidArgument for a bad
  // name or role, a missing node for role agent or a node for another role, namespaces
  // model::tokenScopeProblem refuses; kNotFound for an unknown node; kAlreadyExists when a
  // live token has the name. `namespaces` empty: the role acts in every namespace.
  Result<ApiToken> createToken(const std::string& name, const std::string& token_sha256, const std::string& role,
                               const std::string& actor, const std::string& expires_at = "",
                               const std::string& node = "", const std::vector<std::string>& namespaces = {});
  // The live token with this digest; kNotFound for an unknown, revoked or expired one (the
  // message says which of the last two).
  Result<ApiToken> findToken(const std::string& token_sha256);
  // A page of the tokens the ledger holds, revoked and expired ones too, oldest first. No filters.
  Result<Page<ApiToken>> listTokens(const ListOptions& options);
  // Revokes the live token named `name` (kNotFound when there is none). With
  // `keep_an_admin`, refuses (kConflict) to revoke the last live admin token, so
  // nobody can lock every admin out.
  Result<ApiToken> revokeToken(const std::string& name, const std::string& actor, bool keep_an_admin);
  // Live tokens (not revoked; expired ones count until revoked).
  int64_t countTokens();
  // Who minted the token `name`, who minted that one, and so on, nearest first, each once
  // (model::sameParty); revoked tokens count, so a revocation does not launder a chain.
  // Empty for a config token, an unknown name, or the bootstrap token ("system" minted it).
  // At most kMaxMinters names.
  Result<std::vector<std::string>> mintersOf(const std::string& name);
  static constexpr size_t kMaxMinters = 32;
};

}  // namespace tide::ledger
