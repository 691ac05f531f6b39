#include <doctest/doctest.h>

#include <string>

#include "host/core/sha256.h"

TEST_CASE("sha256 matches the FIPS 180-4 test vectors") {
  CHECK(tide::sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(tide::sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(tide::sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(tide::sha256Hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("sha256 handles every padding boundary around one block") {
  // 55 bytes fit the length in the same block, 56 need a second one.
  CHECK(tide::sha256Hex(std::string(55, 'x')).size() == 64);
  CHECK(tide::sha256Hex(std::string(56, 'x')) != tide::sha256Hex(std::string(55, 'x')));
  CHECK(tide::sha256Hex(std::string(64, 'a')) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}
