// tests/cost_models/test_communication.cpp — being written
