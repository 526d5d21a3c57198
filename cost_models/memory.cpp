// cost_models/memory.cpp — being written
