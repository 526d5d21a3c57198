// tests/kineto/test_kineto_trace.cpp — bad trace files: each is one ConfigError naming the file.
#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "core/errors.h"
#include "kineto/kineto_trace.h"
#include "kineto/trace_file.h"

using namespace fsdpx;

namespace {

const std::string kData = std::string(FSDPX_TEST_DATA_DIR) + "/kineto";

std::string error_of(const std::string& path) {
  try {
    read_kineto_traces(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string write_bytes(const std::string& name, const std::string& bytes) {
  const std::string path = "/tmp/fsdpx_test_kineto_" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

TEST_CASE("a truncated gzip trace is an error naming the file") {
  std::ifstream in(kData + "/hta_trace_filter/sampled_rank-0.json.gz", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() > 1000);
  const std::string path = write_bytes("truncated.json.gz", bytes.substr(0, bytes.size() / 2));
  const std::string e = error_of(path);
  CHECK(e.find(path) == 0);
  CHECK(e.find("truncated") != std::string::npos);
  CHECK(e.find('\n') == std::string::npos);
}

TEST_CASE("truncated JSON, JSON that is no trace, and an empty directory are errors naming the path") {
  const std::string cut = write_bytes("cut.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1)");
  CHECK(error_of(cut).find(cut + ": invalid JSON") == 0);
  const std::string not_trace = write_bytes("not_trace.json", R"({"events": []})");
  CHECK(error_of(not_trace).find(not_trace + ": /traceEvents") == 0);
  CHECK(error_of("/nonexistent/trace.json").find("/nonexistent/trace.json") == 0);
  const std::string empty = "/tmp/fsdpx_test_kineto_empty_dir";
  std::filesystem::create_directories(empty);
  CHECK(error_of(empty).find(empty + ": no .json") == 0);
}

TEST_CASE("a directory gives one trace per rank, by rank") {
  const auto ranks = read_kineto_traces(kData + "/hta_trace_filter");
  REQUIRE(ranks.size() == 2);
  CHECK(ranks[0].rank == 0);
  CHECK(ranks[1].rank == 1);
  CHECK(ranks[1].world_size == 128);
  CHECK(!ranks[0].gpu.empty());
}
