// executor/runtime/segment_bytes.h — the bytes one segment of the step program holds in a backend's model,
// as the rank's memory tracker counts them (model_skeleton.h): what its forward keeps for its backward,
// what its backward works in besides, what a split backward keeps for its weight pass, measured on the
// model's buffers (model/model_driver.h: saved_bytes, weight_pass_bytes, backward_working_bytes).
#pragma once

namespace fsdpx {

struct SegmentBufferBytes {
  double saved = 0;        // kept from the segment's forward to its backward
  double working = 0;      // alive during its backward only
  double weight_pass = 0;  // zero-bubble split: kept by the input pass for the weight pass
};

}  // namespace fsdpx
