// python/stdout_capture.h — while alive, sends what this process writes to file descriptor 1 (C stdio
// and std::cout) into an anonymous in-memory file, so that a subcommand's printed report reaches Python
// as a string. Process-wide: the caller holds the GIL, so no Python thread writes meanwhile; other C++
// threads writing to stdout would be captured too (fsdpx's commands start none while capturing).
#pragma once

#include <string>

namespace fsdpx::python {

class StdoutCapture {
 public:
  StdoutCapture();
  ~StdoutCapture();  // restores fd 1 if take() was not called (an exception left the command)
  StdoutCapture(const StdoutCapture&) = delete;
  StdoutCapture& operator=(const StdoutCapture&) = delete;

  // Restores fd 1 and returns everything written since construction.
  std::string take();

 private:
  void restore();
  int saved_fd_ = -1;    // the original fd 1
  int capture_fd_ = -1;  // memfd receiving the output
};

}  // namespace fsdpx::python
