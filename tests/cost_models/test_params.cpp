// tests/cost_models/test_params.cpp — being written
