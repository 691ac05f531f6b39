#include "host/api/auth.h"

#include <fcntl.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "host/core/sha256.h"

namespace tide::api {
namespace {

// Live tokens kept in memory at most; a host has a handful.
constexpr size_t kKeptTokens = 1024;

Result<std::string> randomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t filled = 0;
  while (filled < bytes) {
    ssize_t n = ::getrandom(raw.data() + filled, bytes - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::internal(std::string("getrandom: ") + std::strerror(errno));
    filled += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char c : raw) {
    hex += kHex[c >> 4];
    hex += kHex[c & 0xf];
  }
  return hex;
}

// Writes `text` to `path` with mode 0600 via a temporary file and rename, so a reader
// never sees a partial token and an existing file's looser mode is not inherited.
Status writePrivateFile(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::path temp = path;
  temp += ".tmp";
  ::unlink(temp.c_str());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::internal("cannot create " + temp.string() + ": " + std::strerror(errno));
  int failure = ::fchmod(fd, 0600) == 0 ? 0 : errno;
  size_t written = 0;
  while (failure == 0 && written < text.size()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n >= 0)
      written += static_cast<size_t>(n);
    else if (errno != EINTR)
      failure = errno;
  }
  if (failure == 0 && ::fsync(fd) != 0) failure = errno;
  if (::close(fd) != 0 && failure == 0) failure = errno;
  if (failure == 0 && ::rename(temp.c_str(), path.c_str()) != 0) failure = errno;
  if (failure == 0) return Status::ok();
  ::unlink(temp.c_str());
  return Status::internal("cannot write " + path.string() + ": " + std::strerror(failure));
}

}  // namespace

Authenticator::Authenticator(ledger::Ledger& ledger, bool enabled,
                             const std::vector<config::TokenConfig>& config_tokens, const Clock& clock)
    : ledger_(ledger), enabled_(enabled), clock_(clock), live_tokens_(ledger, {"tokens"}, kKeptTokens) {
  for (const config::TokenConfig& token : config_tokens) {
    config_tokens_.push_back({sha256Hex(token.token), token.name, token.role, token.namespaces});
  }
}

Status Authenticator::checkConfig() const {
  for (size_t i = 0; i < config_tokens_.size(); ++i) {
    const ConfigToken& token = config_tokens_[i];
    const std::string field = "auth.tokens[" + std::to_string(i) + "]";
    if (token.name.empty()) return Status::invalidArgument(field + ".name is empty", {{field + ".name", "is empty", ""}});
    if (token.sha256 == sha256Hex("")) {
      return Status::invalidArgument(field + " (" + token.name + ") has an empty token", {{field + ".token", "is empty", ""}});
    }
    if (!parseRole(token.role) || token.role == "agent") {
      std::string message = "role '" + token.role +
                            "' is not one of viewer, operator, approver, admin (agent tokens are bound to a node: "
                            "tide token create --role agent --node)";
      return Status::invalidArgument(field + " (" + token.name + "): " + message, {{field + ".role", message, ""}});
    }
    if (std::string problem = model::tokenScopeProblem(token.role, token.namespaces); !problem.empty()) {
      return Status::invalidArgument(field + " (" + token.name + "): " + problem,
                                     {{field + ".namespaces", problem, ""}});
    }
  }
  return Status::ok();
}

Status Authenticator::bootstrap(const std::string& data_dir) {
  if (!enabled_ || !config_tokens_.empty() || ledger_.tokens().countTokens() > 0) return Status::ok();
  if (data_dir.empty()) {
    return Status::invalidArgument(
        "auth is enabled and no token exists, but no data_dir is set to write "
        "the bootstrap admin token to");
  }
  std::error_code error;
  std::filesystem::create_directories(data_dir, error);
  if (error) return Status::internal("cannot create data dir " + data_dir + ": " + error.message());

  TIDE_ASSIGN_OR_RETURN(std::string token, randomHex(32));
  std::filesystem::path path = std::filesystem::path(data_dir) / kAdminTokenFile;
  TIDE_RETURN_IF_ERROR(writePrivateFile(path, token));
  Result<model::ApiToken> created =
      ledger_.tokens().createToken(std::string(kBootstrapTokenName), sha256Hex(token), "admin", "system");
  if (!created.isOk()) {
    std::filesystem::remove(path, error);
    return created.status().withPrefix("storing the bootstrap admin token");
  }
  return Status::ok();
}

Result<IssuedToken> Authenticator::issue(const std::string& name, const std::string& role,
                                         const std::string& expires_at, const std::string& actor,
                                         const std::string& node, const std::vector<std::string>& namespaces) {
  if (configToken(name) != nullptr) {
    return Status::alreadyExists("a token named '" + name + "' is configured in auth.tokens");
  }
  TIDE_ASSIGN_OR_RETURN(std::string secret, randomHex(32));
  TIDE_ASSIGN_OR_RETURN(model::ApiToken record, ledger_.tokens().createToken(name, sha256Hex(secret), role, actor,
                                                                             expires_at, node, namespaces));
  return IssuedToken{std::move(record), std::move(secret)};
}

Result<model::ApiToken> Authenticator::revoke(const std::string& name, const std::string& actor) {
  if (configToken(name) != nullptr) {
    return Status::invalidArgument("token '" + name + "' comes from the host config; remove it from auth.tokens",
                                   {{"name", "a config token", name}});
  }
  const bool config_admin = std::any_of(config_tokens_.begin(), config_tokens_.end(),
                                        [](const ConfigToken& token) { return token.role == "admin"; });
  return ledger_.tokens().revokeToken(name, actor, /*keep_an_admin=*/!config_admin);
}

std::vector<Authenticator::ConfigTokenInfo> Authenticator::configTokens() const {
  std::vector<ConfigTokenInfo> out;
  for (const ConfigToken& token : config_tokens_) out.push_back({token.name, token.role, token.namespaces});
  return out;
}

const Authenticator::ConfigToken* Authenticator::configToken(const std::string& name) const {
  for (const ConfigToken& token : config_tokens_) {
    if (token.name == name) return &token;
  }
  return nullptr;
}

Result<Principal> Authenticator::authenticate(std::string_view authorization) const {
  if (!enabled_) return Principal{"anonymous", Role::kAdmin, "", {}};
  static constexpr std::string_view kScheme = "Bearer ";
  if (authorization.empty()) return Status::unauthenticated("missing 'Authorization: Bearer <token>' header");
  if (authorization.size() <= kScheme.size() ||
      strncasecmp(authorization.data(), kScheme.data(), kScheme.size()) != 0) {
    return Status::unauthenticated("the Authorization header must read 'Bearer <token>'");
  }
  std::string_view token = authorization.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  if (token.empty()) return Status::unauthenticated("the bearer token is empty");

  std::string digest = sha256Hex(token);
  for (const ConfigToken& config : config_tokens_) {
    if (config.sha256 == digest) {
      return Principal{config.name, parseRole(config.role).value_or(Role::kPublic), "", config.namespaces};
    }
  }
  Result<model::ApiToken> found = live_tokens_.get(digest, [&] { return ledger_.tokens().findToken(digest); });
  // A kept token may have expired since; the ledger says so in its words. Timestamps share
  // one fixed-width UTC format, so they compare as text.
  if (found.isOk() && !found->expires_at.empty() && found->expires_at <= formatTimestamp(clock_.now())) {
    found = ledger_.tokens().findToken(digest);
  }
  if (!found.isOk()) {
    // Unknown, revoked or expired: the message says which (the caller holds the token).
    if (found.status().code() == Code::kNotFound) return Status::unauthenticated(found.status().message());
    return found.status();
  }
  std::optional<Role> role = parseRole(found->role);
  if (!role) return Status::internal("token '" + found->name + "' has unknown role '" + found->role + "'");
  return Principal{found->name, *role, found->node, found->namespaces};
}

Status authorize(const Principal& principal, Role required, const std::string& node) {
  if (principal.role == Role::kAgent && roleAllows(principal.role, required) && node != principal.node) {
    return Status::permissionDenied("agent token '" + principal.name + "' serves node " + principal.node +
                                    ", not " + (node.empty() ? "this route" : node));
  }
  if (roleAllows(principal.role, required)) return Status::ok();
  if (principal.role == Role::kAgent) {
    return Status::permissionDenied("agent token '" + principal.name + "' of node " + principal.node +
                                    " may call only that node's agent routes");
  }
  return Status::permissionDenied("this needs the " + std::string(roleName(required)) + " role; '" + principal.name +
                                  "' has " + roleName(principal.role));
}

}  // namespace tide::api
