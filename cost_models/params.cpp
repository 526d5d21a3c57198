// cost_models/params.cpp — being written
