#pragma once
// A self-signed certificate for 127.0.0.1 made with the openssl CLI in a fresh temp dir,
// for tests that serve TLS. The certificate is its own CA.

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include <doctest/doctest.h>

namespace tide::testing {

struct SelfSignedCertificate {
  std::filesystem::path dir;
  std::string cert;
  std::string key;

  SelfSignedCertificate() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tide-tls-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    dir = pattern;
    cert = (dir / "cert.pem").string();
    key = (dir / "key.pem").string();
    const std::string command =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1"
        " -addext subjectAltName=IP:127.0.0.1 -keyout " +
        key + " -out " + cert + " 2>" + (dir / "openssl.log").string();
    REQUIRE_MESSAGE(std::system(command.c_str()) == 0, "openssl failed: see " << (dir / "openssl.log").string());
  }
  ~SelfSignedCertificate() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

}  // namespace tide::testing
