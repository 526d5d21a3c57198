// core/model_spec.cpp — being written
