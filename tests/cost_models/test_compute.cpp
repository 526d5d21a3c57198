// tests/cost_models/test_compute.cpp — being written
