// core/config_paths.h — resolves names given on the command line ("llama3.1-8b", "dgx-h100") to
// files under configs/ installed alongside the binary; a path to an existing file is used as is.
// Search order: $FSDPX_CONFIG_DIR, <binary>/../share/fsdpx/configs, the source tree's configs/.
#pragma once

#include <string>
#include <vector>

#include "core/cluster_spec.h"
#include "core/gpu_spec.h"
#include "core/model_spec.h"

namespace fsdpx {

// kind is "models", "gpus", "clusters" or "plans". Throws ConfigError listing where it looked.
std::string resolve_config(const std::string& kind, const std::string& name_or_path);
// Names of the shipped configs of one kind (file stems), sorted.
std::vector<std::string> list_configs(const std::string& kind);

ModelSpec load_model(const std::string& name_or_path);
GpuSpec load_gpu(const std::string& name_or_path);
ClusterSpec load_cluster(const std::string& name_or_path);

}  // namespace fsdpx
