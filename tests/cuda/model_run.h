// tests/cuda/model_run.h — one run of a CudaModelT<T> (T = bf16 or f16) as the model tests drive it: every
// module's parameters in one flat T buffer and gradients in one fp32 buffer (what an FSDP unit holding
// every module looks like), `micro_batches` forward/backward passes of the same batch with the host token
// arrays scribbled right after set_batch (the model copied them). Leaves out pipeline stages and LoRA.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "executor/cuda_backend/cuda_model.h"
#include "tests/cuda/cuda_test_util.h"
#include "tests/executor/tiny_models.h"

namespace fsdpx::cuda::test {

// Host floats -> device T (round to nearest even).
inline void upload16(DeviceBuffer<bf16>& d, const std::vector<float>& x) { upload_bf16(d, x); }
inline void upload16(DeviceBuffer<f16>& d, const std::vector<float>& x) {
  std::vector<f16> h(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) h[i] = __float2half_rn(x[i]);
  CUDA_CHECK(cudaMemcpy(d.get(), h.data(), sizeof(f16) * h.size(), cudaMemcpyHostToDevice));
}

struct ModelRun {
  float loss = 0;
  std::vector<float> grads;  // [layout.total] fp32, modules in forward order
};

template <class T>
ModelRun run_model(const ModelSpec& spec, std::int64_t b, std::int64_t t, CudaModelOptions opts,
                   const std::vector<float>& params, const fsdpx::test::TokenBatch& batch, float dloss,
                   int micro_batches = 1) {
  GemmContext gemm;
  CudaModelT<T> model(spec, b, t, std::move(opts), gemm);
  const ParamLayout& layout = model.layout();
  DeviceBuffer<T> d_params(params.size());
  DeviceBuffer<float> d_grads(params.size()), d_loss(1);
  upload16(d_params, params);
  CUDA_CHECK(cudaMemset(d_grads.get(), 0, sizeof(float) * params.size()));
  CUDA_CHECK(cudaMemset(d_loss.get(), 0xff, sizeof(float)));  // NaN poison: the head must write the loss
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<const T*> p;
  std::vector<float*> g;
  for (const ModuleLayout& m : layout.modules)
    p.push_back(d_params.get() + m.offset), g.push_back(d_grads.get() + m.offset);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  model.set_loss_output(d_loss.get());
  for (int mb = 0; mb < micro_batches; ++mb) {
    fsdpx::test::TokenBatch host = batch;
    model.set_batch(host.tokens.data(), host.targets.data(), stream);
    std::fill(host.tokens.begin(), host.tokens.end(), -1);  // the model copied them: reuse is allowed
    std::fill(host.targets.begin(), host.targets.end(), -1);
    for (int m = 0; m < layout.num_modules(); ++m) model.forward_module(m, p, stream);
    model.begin_backward(dloss);
    for (int m = layout.num_modules() - 1; m >= 0; --m) model.backward_module(m, p, g, stream);
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return ModelRun{download(d_loss)[0], download(d_grads)};
}

}  // namespace fsdpx::cuda::test
