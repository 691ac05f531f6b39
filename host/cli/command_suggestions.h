#pragma once
// What `tide` says when the command line names no command, or one that does not exist:
// "unknown command 'lst' for 'tide deployment'; did you mean 'list'?" rather than CLI11's
// "A subcommand is required".

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace tide::cli {

// The edit distance between `a` and `b` (insertions, deletions, substitutions, and
// transpositions of neighbours), for suggestions.
size_t editDistance(const std::string& a, const std::string& b);

// The name among `names` closest to `typed`, when one is close enough to be what was meant
// (a prefix of it, or a few edits away); nullopt otherwise.
std::optional<std::string> closestName(const std::string& typed, const std::vector<std::string>& names);

// For a command line CLI11 refused: walks `args` (argv without the program) through `app`'s
// subcommands; when it stops at a command that has subcommands, on a word that names none of
// them or on nothing, the sentence to print instead (with a suggestion, else the commands
// there are). nullopt when the walk reaches a command that takes no subcommand: CLI11's own
// message is then the better one.
std::optional<std::string> unknownCommandMessage(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace tide::cli
