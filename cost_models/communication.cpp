// cost_models/communication.cpp — being written
