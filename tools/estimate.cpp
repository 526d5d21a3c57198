// tools/estimate.cpp — being written
