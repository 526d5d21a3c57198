// core/model_spec_hf.cpp — being written
