#include "host/cli/command_suggestions.h"

#include <algorithm>

#include "host/cli/joined.h"

namespace tide::cli {

size_t editDistance(const std::string& a, const std::string& b) {
  // Optimal string alignment: three rows of the dynamic programme suffice.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

std::optional<std::string> closestName(const std::string& typed, const std::vector<std::string>& names) {
  if (typed.empty()) return std::nullopt;
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, typed.size() / 3) + 1;  // beyond this it is a guess
  for (const std::string& name : names) {
    if (name.rfind(typed, 0) == 0) return name;  // a prefix names it
    const size_t distance = editDistance(typed, name);
    if (distance < best_distance) {
      best_distance = distance;
      best = name;
    }
  }
  return best;
}

namespace {

// The path of `app` as typed: "tide deployment".
std::string commandPath(const CLI::App* app) {
  std::string path;
  for (const CLI::App* at = app; at != nullptr; at = at->get_parent()) {
    const std::string name = at->get_parent() == nullptr ? "tide" : at->get_name();
    path = path.empty() ? name : name + " " + path;
  }
  return path;
}

// Whether option `arg` of `app` or of a command under it takes a value: the verbs' common
// options (--server, --token, -o) are declared on each verb, and may come before its name.
bool optionTakesValue(const CLI::App* app, const std::string& arg) {
  if (const CLI::Option* option = app->get_option_no_throw(arg)) return option->get_type_size() != 0;
  for (const CLI::App* sub : app->get_subcommands({})) {
    if (optionTakesValue(sub, arg)) return true;
  }
  return false;
}

// Whether `arg`, met while at command `app`, takes the next word as its value.
bool takesValue(const CLI::App* app, const std::string& arg) {
  if (arg.find('=') != std::string::npos) return false;
  for (const CLI::App* at = app; at != nullptr; at = at->get_parent()) {
    if (const CLI::Option* option = at->get_option_no_throw(arg)) return option->get_type_size() != 0;
  }
  return optionTakesValue(app, arg);
}

}  // namespace

std::optional<std::string> unknownCommandMessage(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* at = &app;
  std::optional<std::string> word;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() > 1 && arg[0] == '-') {
      if (takesValue(at, arg)) ++i;
      continue;
    }
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : at->get_subcommands({})) {
      if (sub->check_name(arg)) next = sub;
    }
    if (next == nullptr) {
      word = arg;
      break;
    }
    at = next;
  }
  std::vector<std::string> names;
  for (const CLI::App* sub : at->get_subcommands({})) {
    if (!sub->get_name().empty()) names.push_back(sub->get_name());
  }
  if (names.empty()) return std::nullopt;
  const std::string known = joined(names, ", ");
  const std::string path = commandPath(at);
  if (!word) return "'" + path + "' needs a command: " + known + " (see " + path + " --help)";
  const std::string unknown = "unknown command '" + *word + "' for '" + path + "'";
  if (auto meant = closestName(*word, names)) return unknown + "; did you mean '" + *meant + "'?";
  return unknown + "; its commands: " + known;
}

}  // namespace tide::cli
