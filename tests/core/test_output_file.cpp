// tests/core/test_output_file.cpp — write_output_file replaces a file whole (content, permissions, a
// symbolic link kept pointing at it), refuses non-regular targets, reports a missing directory, and
// check_output_writable finds the same problems before any work. Write failures part-way (full disk,
// file-size limit) are tested through the command line (tests/tools/test_output_files.sh).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/output_file.h"

namespace fsdpx {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string error_of(const std::string& path) {
  try {
    write_output_file(path, "new");
  } catch (const WriteError& e) {
    return e.what();
  }
  return "";
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("fsdpx-output-test-" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("write_output_file creates, replaces whole and keeps permissions and symbolic links") {
  TempDir d;
  const fs::path f = d.path / "out.json";
  write_output_file(f.string(), "first");
  CHECK(slurp(f) == "first");
  ::chmod(f.c_str(), 0600);
  write_output_file(f.string(), std::string(100000, 'x'));
  CHECK(slurp(f) == std::string(100000, 'x'));
  CHECK((fs::status(f).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  const fs::path link = d.path / "link.json";
  fs::create_symlink(f, link);
  write_output_file(link.string(), "through the link");
  CHECK(fs::is_symlink(link));
  CHECK(slurp(f) == "through the link");
  // Nothing but the two names is left in the directory: no temporary files.
  CHECK(std::distance(fs::directory_iterator(d.path), fs::directory_iterator()) == 2);
}

TEST_CASE("non-regular targets are refused and left as they are; a missing directory is reported") {
  TempDir d;
  CHECK(error_of(d.path.string()).find("not a regular file") != std::string::npos);
  CHECK(fs::is_directory(d.path));
  if (fs::exists("/dev/full")) {
    CHECK(error_of("/dev/full") == "/dev/full: not a regular file (a device, FIFO or directory): fsdpx writes an "
                                   "output whole by replacing a regular file and leaves this one alone");
    CHECK(fs::is_character_file("/dev/full"));
  }
  const std::string missing = (d.path / "no-such-dir" / "out.json").string();
  const std::string msg = error_of(missing);
  CHECK(msg.find(missing + ": cannot create a temporary file in") == 0);
  CHECK(msg.find("No such file or directory") != std::string::npos);
  CHECK_THROWS_AS(check_output_writable(missing), WriteError);
  CHECK_THROWS_AS(check_output_writable("/dev/full"), WriteError);
  CHECK_NOTHROW(check_output_writable((d.path / "fine.json").string()));
  CHECK(!fs::exists(d.path / "fine.json"));
  CHECK(fs::is_empty(d.path));
}

}  // namespace fsdpx
