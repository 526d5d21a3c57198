// tests/core/test_gpu_cluster_spec.cpp — being written
