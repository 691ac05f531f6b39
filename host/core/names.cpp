#include "host/core/names.h"

#include <random>

namespace tide {
namespace {

bool isLeadChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool isBodyChar(char c) { return isLeadChar(c) || c == '.' || c == '_' || c == '-'; }

}  // namespace

bool isValidName(std::string_view name) { return nameProblem(name).empty(); }

std::string nameProblem(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 63) return "must be at most 63 characters";
  if (!isLeadChar(name[0])) return "must start with a lower-case letter or digit";
  for (char c : name) {
    if (!isBodyChar(c)) {
      return "may only contain lower-case letters, digits, '.', '_' and '-' (pattern [a-z0-9][a-z0-9._-]{0,62})";
    }
  }
  if (name == "." || name.find("..") != std::string_view::npos) return "must not contain '..'";
  return "";
}

std::string randomName(std::string_view prefix, int n) {
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<int> pick(0, 35);
  std::string out(prefix);
  out.push_back('-');
  for (int i = 0; i < n; ++i) out.push_back(kAlphabet[pick(rng)]);
  return out;
}

}  // namespace tide
