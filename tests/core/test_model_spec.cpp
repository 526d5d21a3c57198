// tests/core/test_model_spec.cpp — being written
