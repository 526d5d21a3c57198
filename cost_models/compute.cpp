// cost_models/compute.cpp — being written
