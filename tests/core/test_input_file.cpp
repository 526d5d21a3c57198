// tests/core/test_input_file.cpp — read_input_file reads a regular file whole, and refuses with one line
// naming the path: a directory, a character device (/dev/zero, /dev/urandom never end), a FIFO (without
// waiting for a writer), a missing file and a file above the cap (from its size, before reading).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/input_file.h"
#include "tests/support/config_error.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;
using test::config_error_of;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("fsdpx-input-test-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

TEST_CASE("read_input_file: a regular file is read whole, byte for byte") {
  TempDir d;
  const std::string bytes("a\0b\xff" "end", 7);
  std::ofstream((d.path / "f").string(), std::ios::binary) << bytes;
  CHECK(read_input_file((d.path / "f").string(), "data file", 100) == bytes);
  std::ofstream((d.path / "empty").string(), std::ios::binary);
  CHECK(read_input_file((d.path / "empty").string(), "data file", 100).empty());
}

TEST_CASE("read_input_file: a directory, a device and a FIFO are refused naming the path") {
  TempDir d;
  CHECK(config_error_of([&] { read_input_file(d.path.string(), "data file", 100); }) ==
        d.path.string() + ": a directory, not a data file (fsdpx reads inputs from regular files)");
  CHECK(config_error_of([&] { read_input_file("/dev/zero", "weights file", 1 << 30); }) ==
        "/dev/zero: a character device, not a weights file (fsdpx reads inputs from regular files)");
  const std::string fifo = (d.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(config_error_of([&] { read_input_file(fifo, "data file", 100); }).starts_with(fifo + ": a FIFO (pipe)"));
  CHECK(config_error_of([&] { check_regular_input(d.path.string(), "data file"); }).starts_with(d.path.string() + ": a directory"));
  CHECK(config_error_of([&] { check_regular_input((d.path / "absent").string(), "data file"); }) == "(no error)");
}

TEST_CASE("read_input_file: a missing file and a file above the cap are refused naming the path") {
  TempDir d;
  const std::string absent = (d.path / "absent").string();
  CHECK(config_error_of([&] { read_input_file(absent, "data file", 100); }).starts_with(absent + ": cannot open data file"));
  const std::string big = (d.path / "big").string();
  std::ofstream(big, std::ios::binary) << std::string(101, 'x');
  CHECK(config_error_of([&] { read_input_file(big, "data file", 100); }) ==
        big + ": 101 bytes, more than the 0 MiB a data file may have");
  CHECK(read_input_file(big, "data file", 101).size() == 101);
}

}  // namespace
}  // namespace fsdpx
