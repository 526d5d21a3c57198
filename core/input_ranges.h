// core/input_ranges.h — the documented range of every size and rate fsdpx reads from a file (models,
// Hugging Face configs, GPUs, clusters, plans, validation cases); docs/input-ranges.md explains each.
// The bounds keep every derived count, byte total and duration finite and inside 64-bit integers, and
// reject denormals (a rate of 5e-324 is not a measurement). Leaves out ranges of command-line options.
#pragma once

#include <cstdint>

namespace fsdpx {

struct IntRange {
  std::int64_t min;
  std::int64_t max;
};

struct NumberRange {
  double min;
  double max;
};

namespace input_range {

// Model shapes. The largest published dense models have about 200 layers, hidden 25,600, vocabulary
// 256k and 10M positions; the bounds leave at least 8x headroom.
inline constexpr IntRange kLayers{1, 2048};
inline constexpr IntRange kHidden{1, 262144};
inline constexpr IntRange kHeads{1, 16384};
inline constexpr IntRange kHeadDim{1, 16384};
inline constexpr IntRange kFfnHidden{1, 1048576};
inline constexpr IntRange kVocab{1, 16777216};
inline constexpr IntRange kMaxSeq{1, 134217728};
inline constexpr NumberRange kRopeTheta{1.0, 1e12};
inline constexpr NumberRange kNormEps{1e-12, 0.5};
// YaRN (core/model_spec.h RopeScaling): the context factor (DeepSeek-V3 40), the ramp's turn counts (32 and
// 1 in the paper and every published config) and the attention-scale coefficients (DeepSeek 0.707 .. 1).
inline constexpr NumberRange kYarnFactor{1.0, 1e6};
inline constexpr NumberRange kYarnBeta{1e-3, 1e6};
inline constexpr NumberRange kYarnMscale{0.0, 100.0};
inline constexpr NumberRange kYarnAttentionFactor{1e-3, 100.0};
// Mixture-of-experts: routed experts per layer (DeepSeek-V3 256, Qwen3 128; 64x headroom) and the latent
// ranks of multi-head latent attention (DeepSeek-V3 q 1536, kv 512).
inline constexpr IntRange kExperts{1, 16384};
inline constexpr IntRange kLatentRank{1, 262144};
inline constexpr NumberRange kCapacityFactor{1e-3, 1e3};
inline constexpr NumberRange kMoeCoefficient{0.0, 1e3};  // aux-loss weight, routed scaling
// Parameters of the whole model (an upper bound from the shapes): 100x the largest dense model.
inline constexpr double kMaxModelParams = 1e14;

// GPU figures in datasheet units.
inline constexpr NumberRange kPeakTflops{1e-6, 1e6};
inline constexpr NumberRange kHbmGib{1e-3, 1e6};
inline constexpr NumberRange kHbmBwTbPerS{1e-6, 1e3};
inline constexpr NumberRange kLinkGbPerS{1e-3, 1e6};
inline constexpr IntRange kSmCount{1, 1000000};
inline constexpr NumberRange kEfficiency{1e-4, 1.0};
inline constexpr NumberRange kCurveSize{1e-9, 1e15};  // GFLOP, MB or tokens
inline constexpr NumberRange kHalfEfficiencyDim{1e-3, 1e6};

// Cluster figures.
inline constexpr IntRange kGpusPerNode{1, 4096};
inline constexpr IntRange kNodes{1, 65536};
inline constexpr IntRange kNicsPerNode{1, 1024};
inline constexpr NumberRange kLatencyUs{0.0, 1e6};

// Plans and validation cases.
inline constexpr IntRange kMicroBatch{1, 1048576};
inline constexpr IntRange kGlobalBatch{1, 1073741824};
inline constexpr IntRange kDegree{1, 268435456};  // one parallel degree; their product is the world size
inline constexpr IntRange kPrefetch{0, 65536};
inline constexpr IntRange kStage{0, 268435455};  // a unit's virtual pipeline stage; below pp * vpp (plan_validate)
inline constexpr IntRange kSteps{0, std::int64_t{1} << 40};
inline constexpr NumberRange kLearningRate{1e-12, 1e3};
inline constexpr NumberRange kAdamEps{1e-30, 1.0};
inline constexpr NumberRange kWeightDecay{0.0, 1e3};
inline constexpr NumberRange kGradClipNorm{0.0, 1e12};
// Loss scaling (fp16): the scale is a normal, finite fp32 number; the factors at most 1000x per update;
// the growth interval an int32 count of steps.
inline constexpr NumberRange kLossScale{1e-30, 1e38};
inline constexpr double kLossScaleFactorMax = 1e3;
inline constexpr IntRange kGrowthInterval{1, 2147483647};
inline constexpr NumberRange kPowerW{1.0, 1e5};
// Measured results of a validation case (docs/input-ranges.md): tokens/s per GPU from a laptop CPU
// (1e-3) to 1e9 (1,000x a small model on the fastest GPU); MFU a percentage of a peak, so at most 100;
// peak memory in GiB as the HBM range; step time from 1 us to 1e7 s (four months).
inline constexpr NumberRange kMeasuredTokensPerS{1e-3, 1e9};
inline constexpr NumberRange kMeasuredMfuPct{1e-3, 100.0};
inline constexpr NumberRange kMeasuredStepTimeS{1e-6, 1e7};
inline constexpr NumberRange kGbitPerS{1e-2, 1e7};

}  // namespace input_range

}  // namespace fsdpx
