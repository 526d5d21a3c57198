// tools/cmd_estimate.cpp — being written
