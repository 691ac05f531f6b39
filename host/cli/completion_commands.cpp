// `tide completion bash|zsh`: a shell completion script written from the CLI11 command tree
// as it is when the command runs, so it names every noun, verb and option `tide` has and
// never goes stale. Both scripts walk the words typed so far down the tree (skipping the
// value of an option that takes one), then offer the commands and options there, or, after
// an option that takes a value, its choices (`-o`: table, json) or file names.

#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "host/cli/commands.h"
#include "host/cli/joined.h"

namespace tide::cli {
namespace {

// One command of the tree, as the scripts need it.
struct CompletionNode {
  std::string path;  // "tide deployment list"
  std::vector<std::pair<std::string, std::string>> commands;  // name, description; and a positional's choices
  std::vector<std::string> options;                           // "-o", "--output", "--help"
  std::vector<std::string> valued;                            // those of `options` that take a value
  std::map<std::string, std::vector<std::string>> choices;    // option name → the values it accepts
};

// The values an option accepts when a validator limits them to a set: CLI::IsMember
// describes itself as "{table,json}", which the option's type name carries
// ("TEXT:{table,json}"). None otherwise.
std::vector<std::string> choicesOf(const CLI::Option* option) {
  const std::string type = option->get_type_name();
  const size_t open = type.find(":{");
  const size_t close = type.find('}', open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::vector<std::string> values;
  std::stringstream list(type.substr(open + 2, close - open - 2));
  for (std::string value; std::getline(list, value, ',');) values.push_back(value);
  return values;
}

void collect(const CLI::App& app, const std::string& path, std::vector<CompletionNode>& nodes) {
  CompletionNode node;
  node.path = path;
  std::vector<const CLI::App*> subcommands;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name().empty()) continue;
    node.commands.emplace_back(sub->get_name(), sub->get_description());
    subcommands.push_back(sub);
  }
  for (const CLI::Option* option : app.get_options()) {
    if (!option->nonpositional()) {
      // A positional argument limited to a set is offered like a command (`completion bash`).
      for (const std::string& value : choicesOf(option)) node.commands.emplace_back(value, option->get_description());
      continue;
    }
    std::vector<std::string> names;
    for (const std::string& name : option->get_snames()) names.push_back("-" + name);
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
    const std::vector<std::string> choices = choicesOf(option);
    for (const std::string& name : names) {
      node.options.push_back(name);
      if (option->get_expected_min() == 0) continue;  // a flag
      node.valued.push_back(name);
      if (!choices.empty()) node.choices[name] = choices;
    }
  }
  nodes.push_back(std::move(node));
  for (const CLI::App* sub : subcommands) collect(*sub, path + " " + sub->get_name(), nodes);
}

std::vector<CompletionNode> completionTree(const CLI::App& app) {
  std::vector<CompletionNode> nodes;
  collect(app, "tide", nodes);
  return nodes;
}

// `text` as one shell word in single quotes (bash and zsh read it the same way).
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string bashCompletionScript(const CLI::App& app) {
  const std::vector<CompletionNode> nodes = completionTree(app);
  std::ostringstream out;
  out << "# bash completion for tide, written by `tide completion bash` from its command tree.\n"
         "# Enable it with: source <(tide completion bash)\n"
         "\n"
         "# Sets _tide_words (the commands and options of command $1) and _tide_valued (the\n"
         "# options that take a value).\n"
         "_tide_describe() {\n"
         "  case \"$1\" in\n";
  for (const CompletionNode& node : nodes) {
    std::vector<std::string> words;
    for (const auto& [name, description] : node.commands) words.push_back(name);
    words.insert(words.end(), node.options.begin(), node.options.end());
    out << "    " << quoted(node.path) << ") _tide_words=" << quoted(joined(words, " "))
        << "; _tide_valued=" << quoted(joined(node.valued, " ")) << " ;;\n";
  }
  out << "    *) _tide_words=''; _tide_valued='' ;;\n"
         "  esac\n"
         "}\n"
         "\n"
         "# Sets COMPREPLY to the values option $2 of command $1 accepts; fails when any value goes.\n"
         "_tide_choices() {\n"
         "  case \"$1 $2\" in\n";
  std::map<std::vector<std::string>, std::vector<std::string>> by_choices;  // choices → "command option"
  for (const CompletionNode& node : nodes) {
    for (const auto& [option, choices] : node.choices) by_choices[choices].push_back(node.path + " " + option);
  }
  for (const auto& [choices, patterns] : by_choices) {
    std::string alternatives;
    for (const std::string& pattern : patterns) alternatives += (alternatives.empty() ? "" : "|") + quoted(pattern);
    out << "    " << alternatives << ") COMPREPLY=($(compgen -W " << quoted(joined(choices, " "))
        << " -- \"$3\")) ;;\n";
  }
  out << "    *) return 1 ;;\n"
         "  esac\n"
         "}\n"
         "\n"
         "_tide() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
         "  local command=tide word i _tide_words _tide_valued\n"
         "  _tide_describe \"$command\"\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    word=${COMP_WORDS[i]}\n"
         "    if [[ $word == -* ]]; then\n"
         "      [[ $word != *=* && \" $_tide_valued \" == *\" $word \"* ]] && ((i++))\n"
         "    elif [[ \" $_tide_words \" == *\" $word \"* ]]; then\n"
         "      command=\"$command $word\"\n"
         "      _tide_describe \"$command\"\n"
         "    fi\n"
         "  done\n"
         "  COMPREPLY=()\n"
         "  if [[ $prev == -* && \" $_tide_valued \" == *\" $prev \"* ]]; then\n"
         "    _tide_choices \"$command\" \"$prev\" \"$cur\"\n"
         "    return 0\n"
         "  fi\n"
         "  COMPREPLY=($(compgen -W \"$_tide_words\" -- \"$cur\"))\n"
         "}\n"
         "\n"
         "complete -o default -F _tide tide\n";
  return out.str();
}

std::string zshCompletionScript(const CLI::App& app) {
  const std::vector<CompletionNode> nodes = completionTree(app);
  std::ostringstream out;
  out << "#compdef tide\n"
         "# zsh completion for tide, written by `tide completion zsh` from its command tree.\n"
         "# Enable it with: source <(tide completion zsh)  (after compinit), or save it as _tide\n"
         "# in a directory of $fpath.\n"
         "\n"
         "# Sets tide_commands (name:description), tide_options and tide_valued (the options that\n"
         "# take a value) for command $1. (commands and options are zsh's own parameters.)\n"
         "_tide_describe() {\n"
         "  case \"$1\" in\n";
  for (const CompletionNode& node : nodes) {
    std::vector<std::string> commands;
    for (const auto& [name, description] : node.commands) commands.push_back(quoted(name + ":" + description));
    std::vector<std::string> options, valued;
    for (const std::string& option : node.options) options.push_back(quoted(option));
    for (const std::string& option : node.valued) valued.push_back(quoted(option));
    out << "    (" << quoted(node.path) << ")\n"
        << "      tide_commands=(" << joined(commands, " ") << ")\n"
        << "      tide_options=(" << joined(options, " ") << ")\n"
        << "      tide_valued=(" << joined(valued, " ") << ") ;;\n";
  }
  out << "    (*) tide_commands=(); tide_options=(); tide_valued=() ;;\n"
         "  esac\n"
         "}\n"
         "\n"
         "# Offers the values option $2 of command $1 accepts; fails when any value goes.\n"
         "_tide_choices() {\n"
         "  case \"$1 $2\" in\n";
  for (const CompletionNode& node : nodes) {
    for (const auto& [option, choices] : node.choices) {
      std::vector<std::string> values;
      for (const std::string& value : choices) values.push_back(quoted(value));
      out << "    (" << quoted(node.path + " " + option) << ") compadd -- " << joined(values, " ") << " ;;\n";
    }
  }
  out << "    (*) return 1 ;;\n"
         "  esac\n"
         "}\n"
         "\n"
         "_tide() {\n"
         "  local tide_command=tide word i\n"
         "  local -a tide_commands tide_options tide_valued\n"
         "  _tide_describe \"$tide_command\"\n"
         "  for ((i = 2; i < CURRENT; i++)); do\n"
         "    word=${words[i]}\n"
         "    if [[ $word == -* ]]; then\n"
         "      [[ $word != *=* && ${tide_valued[(Ie)$word]} -gt 0 ]] && ((i++))\n"
         "    elif (( ${tide_commands[(I)${(b)word}:*]} )); then\n"
         "      tide_command=\"$tide_command $word\"\n"
         "      _tide_describe \"$tide_command\"\n"
         "    fi\n"
         "  done\n"
         "  local prev=${words[CURRENT-1]}\n"
         "  if [[ $prev == -* && ${tide_valued[(Ie)$prev]} -gt 0 ]]; then\n"
         "    _tide_choices \"$tide_command\" \"$prev\" || _files\n"
         "  elif [[ ${words[CURRENT]} == -* ]]; then\n"
         "    compadd -- $tide_options\n"
         "  else\n"
         "    _describe -t commands 'tide command' tide_commands\n"
         "  fi\n"
         "}\n"
         "\n"
         "# Autoloaded from $fpath it completes at once; sourced, it registers itself.\n"
         "if [[ $funcstack[1] == _tide ]]; then\n"
         "  _tide \"$@\"\n"
         "else\n"
         "  compdef _tide tide\n"
         "fi\n";
  return out.str();
}

void addCompletionCommand(CLI::App& app, OfflineAction& offline) {
  auto shell = std::make_shared<std::string>();
  CLI::App* completion = app.add_subcommand(
      "completion", "Print a shell completion script: source <(tide completion bash), or zsh");
  completion->add_option("shell", *shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  completion->callback([&app, &offline, shell] {
    offline = [&app, shell](std::ostream& out) {
      out << (*shell == "bash" ? bashCompletionScript(app) : zshCompletionScript(app));
      return 0;
    };
  });
}

}  // namespace tide::cli
