// core/gpu_spec.cpp — being written
