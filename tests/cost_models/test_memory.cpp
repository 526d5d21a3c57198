// tests/cost_models/test_memory.cpp — being written
