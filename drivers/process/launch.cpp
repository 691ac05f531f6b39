#include "drivers/process/launch.h"

#include <cctype>

#include "drivers/driver.h"

namespace tide::drivers {
namespace {

using model::Json;

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

// Everything a placeholder can stand for, resolved lazily so that only the placeholders
// actually used must make sense (an image-less command may not say {{image}}).
struct Placeholders {
  const LaunchContext& context;
  const std::string* image;  // null for command coordinates

  Result<std::string> resolve(std::string_view name, const std::string& field) const {
    auto bad = [&](const std::string& message) {
      return Status::invalidArgument("invalid coordinates", {{field, message, ""}});
    };
    if (name == "tide") {
      if (context.tide_binary.empty()) return bad("{{tide}}: the tide binary path is not configured");
      return context.tide_binary;
    }
    if (name == "instance") return context.instance;
    if (name == "image" || name == "image.tag") {
      if (image == nullptr) return bad("{{" + std::string(name) + "}} needs an image coordinate");
      return name == "image" ? *image : imageTag(*image);
    }
    if (name.starts_with("port.")) {
      std::string_view rest = name.substr(5);
      size_t dot = rest.find('.');
      std::string key = dot == std::string_view::npos
                            ? std::string()
                            : lower(rest.substr(0, dot)) + "/" + std::string(rest.substr(dot + 1));
      auto it = context.ports.find(key);
      if (it == context.ports.end()) {
        return bad("{{" + std::string(name) + "}}: no such declared port (expected {{port.<tcp|udp>.<port>}})");
      }
      return std::to_string(it->second);
    }
    if (name.starts_with("volume.")) {
      auto it = context.volumes.find(std::string(name.substr(7)));
      if (it == context.volumes.end()) return bad("{{" + std::string(name) + "}}: no volume is mounted there");
      return it->second;
    }
    return bad("unknown placeholder {{" + std::string(name) + "}}");
  }

  Result<std::string> substitute(const std::string& text, const std::string& field) const {
    std::string out;
    size_t at = 0;
    while (true) {
      size_t open = text.find("{{", at);
      if (open == std::string::npos) break;
      size_t close = text.find("}}", open + 2);
      if (close == std::string::npos) {
        return Status::invalidArgument("invalid coordinates", {{field, "unterminated {{", ""}});
      }
      out.append(text, at, open - at);
      TIDE_ASSIGN_OR_RETURN(std::string value,
                            resolve(trim(std::string_view(text).substr(open + 2, close - open - 2)), field));
      out += value;
      at = close + 2;
    }
    out.append(text, at, std::string::npos);
    return out;
  }
};

}  // namespace

bool globMatch(std::string_view pattern, std::string_view text) {
  // Iterative matcher with single-star backtracking: linear in practice, no recursion.
  size_t p = 0, t = 0, star = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_t = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_t;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

const std::vector<std::string>* matchImage(const ImageCatalog& catalog, std::string_view image) {
  for (const auto& [pattern, argv] : catalog) {
    if (globMatch(pattern, image)) return &argv;
  }
  return nullptr;
}

std::string imageTag(std::string_view image) {
  size_t colon = image.rfind(':');
  size_t slash = image.rfind('/');
  if (colon == std::string_view::npos || (slash != std::string_view::npos && slash > colon)) return "latest";
  return std::string(image.substr(colon + 1));
}

std::string portKey(const model::Port& port) { return lower(port.protocol) + "/" + std::to_string(port.port); }

std::string volumeEnvName(std::string_view mount_path) {
  while (!mount_path.empty() && mount_path.front() == '/') mount_path.remove_prefix(1);
  while (!mount_path.empty() && mount_path.back() == '/') mount_path.remove_suffix(1);
  std::string name = "TIDE_VOLUME_";
  for (char c : upper(mount_path)) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

Result<Launch> buildLaunch(const Json& coordinates, const ImageCatalog& catalog, const LaunchContext& context) {
  auto bad = [](const std::string& field, const std::string& message) {
    return Status::invalidArgument("invalid coordinates", {{field, message, ""}});
  };
  if (!coordinates.is_object()) return bad("coordinates", "must be an object with `command` or `image`");
  bool has_command = coordinates.contains("command");
  bool has_image = coordinates.contains("image");
  if (has_command == has_image) return bad("coordinates", "exactly one of `command` and `image` is required");

  std::vector<std::string> argv_template;
  const std::string* image = nullptr;
  std::string field_prefix;
  if (has_command) {
    const Json& command = coordinates["command"];
    if (!command.is_array() || command.empty())
      return bad("coordinates.command", "must be a non-empty list of strings");
    for (size_t i = 0; i < command.size(); ++i) {
      if (!command[i].is_string()) return bad("coordinates.command[" + std::to_string(i) + "]", "must be a string");
      argv_template.push_back(command[i].get<std::string>());
    }
    field_prefix = "coordinates.command";
  } else {
    const Json& value = coordinates["image"];
    if (!value.is_string() || value.get_ref<const std::string&>().empty()) {
      return bad("coordinates.image", "must be a non-empty string");
    }
    image = &value.get_ref<const std::string&>();
    const std::vector<std::string>* found = matchImage(catalog, *image);
    if (found == nullptr) return Status::unprocessable("image " + *image + " matches no entry of the image catalog");
    argv_template = *found;
    field_prefix = "image_catalog[" + *image + "]";
  }

  Placeholders placeholders{context, image};
  Launch launch;
  for (size_t i = 0; i < argv_template.size(); ++i) {
    TIDE_ASSIGN_OR_RETURN(std::string arg,
                          placeholders.substitute(argv_template[i], field_prefix + "[" + std::to_string(i) + "]"));
    launch.argv.push_back(std::move(arg));
  }
  if (launch.argv.empty() || launch.argv.front().empty()) return bad(field_prefix, "the command is empty");

  if (coordinates.contains("env")) {
    const Json& env = coordinates["env"];
    if (!env.is_object()) return bad("coordinates.env", "must be a map of names to strings");
    for (const auto& [name, value] : env.items()) {
      std::string field = "coordinates.env." + name;
      if (name.empty() || name.find('=') != std::string::npos) return bad(field, "invalid variable name");
      if (!value.is_string()) return bad(field, "must be a string");
      TIDE_ASSIGN_OR_RETURN(launch.env[name], placeholders.substitute(value.get<std::string>(), field));
    }
  }
  for (auto& [name, value] : tideVariables(context)) launch.env[name] = std::move(value);
  return launch;
}

std::map<std::string, std::string> tideVariables(const LaunchContext& context) {
  std::map<std::string, std::string> env;
  env["TIDE_INSTANCE"] = context.instance;
  env["TIDE_RUNTIME_ID"] = context.runtime_id;
  env["TIDE_NODE"] = context.node;
  for (const auto& [key, host_port] : context.ports) env[portEnvName(key)] = std::to_string(host_port);
  for (const auto& [mount_path, host_dir] : context.volumes) env[volumeEnvName(mount_path)] = host_dir;
  return env;
}

}  // namespace tide::drivers
